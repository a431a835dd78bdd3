// Resolves the effective settings. Sources, highest first: the process
// environment, $SVC_HOME/config.env (tunables only), the secret file
// $SVC_HOME/secret.env (secrets only), then the declared defaults. A `.env` in
// the working directory is never read. Any failure names the variable and the
// rule and never echoes a secret value.
import { existsSync, readFileSync } from 'node:fs';
import type { Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DatabaseUrlError, parseDatabaseUrl, type DatabaseTarget } from '../db/url.ts';
import { EnvFileError, parseEnvFile } from './envfile.ts';
import { homePaths, type HomePaths } from './home.ts';
import { SETTINGS, SETTING_NAMES, type SettingName } from './settings.ts';
import type { Setting } from './declare.ts';

export type Config = { -readonly [K in SettingName]: Static<(typeof SETTINGS)[K]['schema']> };
export type Source = 'env' | 'config.env' | 'secret.env' | 'default';

export interface LoadedConfig {
  config: Config;
  sources: Record<SettingName, Source>;
  paths: HomePaths;
  database: DatabaseTarget;
}

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly variable?: string,
  ) {
    super(message);
  }
}

type Env = Record<string, string | undefined>;

const isKnown = (key: string): key is SettingName => Object.hasOwn(SETTINGS, key);

/** Converts the text form of a setting into its typed value and checks it
 * against the declaration. Returns the value or throws ConfigError. */
export function coerceSetting(name: SettingName, raw: string): unknown {
  const setting: Setting = SETTINGS[name];
  const schema = setting.schema as { type?: string; anyOf?: unknown[] };
  let value: unknown = raw;
  const fail = (rule: string): never => {
    throw new ConfigError(`${name}: ${rule}`, name);
  };
  if (schema.type === 'integer') {
    if (!/^[+-]?\d+$/.test(raw.trim())) fail('must be a whole number');
    value = Number(raw.trim());
  } else if (schema.type === 'number') {
    if (raw.trim() === '' || !Number.isFinite(Number(raw))) fail('must be a number');
    value = Number(raw);
  } else if (schema.type === 'boolean') {
    const t = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(t)) value = true;
    else if (['0', 'false', 'no', 'off', ''].includes(t)) value = false;
    else fail('must be true or false');
  } else if (schema.type === 'array') {
    value = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  } else if (schema.anyOf) {
    value = raw.trim();
  }
  const error = Value.Errors(setting.schema, value).First();
  if (error) fail(describeRule(setting, error.message, value));
  if (setting.meta.minBytes && typeof value === 'string' && value !== '' && Buffer.byteLength(value) < setting.meta.minBytes) {
    fail(`must be at least ${setting.meta.minBytes} bytes`);
  }
  if (setting.meta.itemMinBytes && Array.isArray(value)) {
    value.forEach((item: string, i) => {
      if (Buffer.byteLength(item) < setting.meta.itemMinBytes!) fail(`entry ${i + 1} must be at least ${setting.meta.itemMinBytes} bytes`);
    });
  }
  return value;
}

function describeRule(setting: Setting, fallback: string, value: unknown): string {
  const s = setting.schema as Record<string, unknown>;
  if (typeof value === 'number' && typeof s.minimum === 'number' && typeof s.maximum === 'number') {
    return `must be between ${s.minimum} and ${s.maximum}` + (setting.meta.secret ? '' : ` (got ${value})`);
  }
  if (Array.isArray(s.anyOf)) {
    const allowed = (s.anyOf as { const: string }[]).map((x) => x.const).join(', ');
    return `must be one of ${allowed}`;
  }
  if (typeof s.maxLength === 'number' && typeof value === 'string' && value.length > s.maxLength) {
    return `must be at most ${s.maxLength} characters`;
  }
  if (typeof s.maxItems === 'number' && Array.isArray(value) && value.length > s.maxItems) {
    return `must have at most ${s.maxItems} entries`;
  }
  return fallback.toLowerCase();
}

function readEnvFile(path: string): Map<string, { value: string; line: number }> {
  const out = new Map<string, { value: string; line: number }>();
  if (!existsSync(path)) return out;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    for (const entry of parseEnvFile(text, path)) out.set(entry.key, entry);
  } catch (e) {
    if (e instanceof EnvFileError) throw new ConfigError(e.message);
    throw e;
  }
  return out;
}

/** Checks a tunables file: every key must be a known non-secret SVC_* setting
 * and every value must pass its rule. Used for config.env at load and by
 * `svc config validate`. */
export function checkTunablesFile(path: string): Map<SettingName, string> {
  const out = new Map<SettingName, string>();
  for (const [key, { value, line }] of readEnvFile(path)) {
    const where = `${path}:${line}`;
    if (!key.startsWith('SVC_')) throw new ConfigError(`${where}: ${key} is not an SVC_* setting`, key);
    if (!isKnown(key)) throw new ConfigError(`${where}: ${key} is not a known setting`, key);
    if (SETTINGS[key].meta.secret) {
      throw new ConfigError(`${where}: ${key} is a secret; set it in the environment or ${'secret.env'}, not in config.env`, key);
    }
    try {
      coerceSetting(key, value);
    } catch (e) {
      if (e instanceof ConfigError) throw new ConfigError(`${where}: ${e.message}`, key);
      throw e;
    }
    out.set(key, value);
  }
  return out;
}

function checkSecretFile(path: string): Map<SettingName, string> {
  const out = new Map<SettingName, string>();
  for (const [key, { value, line }] of readEnvFile(path)) {
    if (!isKnown(key) || !SETTINGS[key].meta.secret) {
      throw new ConfigError(`${path}:${line}: ${key} is not a secret setting; the secret file holds secrets only`, key);
    }
    out.set(key, value);
  }
  return out;
}

export interface LoadOptions {
  env?: Env;
  /** Values to use for unset secrets (`svc config validate` uses inert placeholders). */
  placeholders?: Partial<Record<SettingName, string>>;
  /** A tunables file to use instead of $SVC_HOME/config.env. */
  tunablesFile?: string;
  /** Skip the real secret file (config validate checks only the candidate file). */
  ignoreSecretFile?: boolean;
}

export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const paths = homePaths(env);
  const fileValues = checkTunablesFile(options.tunablesFile ?? paths.configEnv);
  const secretValues = options.ignoreSecretFile ? new Map<SettingName, string>() : checkSecretFile(paths.secretEnv);

  const config = {} as Record<SettingName, unknown>;
  const sources = {} as Record<SettingName, Source>;
  for (const name of SETTING_NAMES) {
    const fromEnv = env[name];
    let raw: string | undefined;
    let source: Source = 'default';
    if (fromEnv !== undefined) {
      raw = fromEnv;
      source = 'env';
    } else if (fileValues.has(name)) {
      raw = fileValues.get(name);
      source = 'config.env';
    } else if (secretValues.has(name)) {
      raw = secretValues.get(name);
      source = 'secret.env';
    } else if (options.placeholders?.[name] !== undefined) {
      raw = options.placeholders[name];
    }
    config[name] = raw === undefined ? Value.Default(SETTINGS[name].schema, undefined) : coerceSetting(name, raw);
    sources[name] = source;
  }
  const typed = config as Config;
  const database = checkCrossField(typed, paths);
  return { config: typed, sources, paths, database };
}

/** Rules between settings, from the spec and from common sense. */
function checkCrossField(c: Config, paths: HomePaths): DatabaseTarget {
  const minInterval = c.SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS;
  if (minInterval >= c.SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS) {
    throw new ConfigError(
      `SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS (${minInterval}) must be strictly below SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS (${c.SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS})`,
      'SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS',
    );
  }
  if (c.SVC_COMMAND_TIMEOUT_SECONDS < minInterval) {
    throw new ConfigError(
      `SVC_COMMAND_TIMEOUT_SECONDS (${c.SVC_COMMAND_TIMEOUT_SECONDS}) must not be below SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS (${minInterval})`,
      'SVC_COMMAND_TIMEOUT_SECONDS',
    );
  }
  if ((c.SVC_TLS_CERT_FILE === '') !== (c.SVC_TLS_KEY_FILE === '')) {
    throw new ConfigError('SVC_TLS_CERT_FILE and SVC_TLS_KEY_FILE must be set together', 'SVC_TLS_CERT_FILE');
  }
  if (c.SVC_TLS_SELF_SIGNED && c.SVC_TLS_CERT_FILE !== '') {
    throw new ConfigError('SVC_TLS_SELF_SIGNED cannot be combined with SVC_TLS_CERT_FILE', 'SVC_TLS_SELF_SIGNED');
  }
  if (c.SVC_SECRET !== '' && c.SVC_AUDIT_CHAIN_SECRET !== '' && c.SVC_SECRET === c.SVC_AUDIT_CHAIN_SECRET) {
    throw new ConfigError('SVC_AUDIT_CHAIN_SECRET must differ from SVC_SECRET', 'SVC_AUDIT_CHAIN_SECRET');
  }
  if (c.SVC_AUDIT_WEBHOOK_URL !== '' && c.SVC_AUDIT_WEBHOOK_HMAC_SECRET === '') {
    throw new ConfigError('SVC_AUDIT_WEBHOOK_URL is set without SVC_AUDIT_WEBHOOK_HMAC_SECRET (at least 32 bytes)', 'SVC_AUDIT_WEBHOOK_HMAC_SECRET');
  }
  if (c.SVC_AUDIT_CHAIN_SECRET !== '' && c.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS.includes(c.SVC_AUDIT_CHAIN_SECRET)) {
    throw new ConfigError('SVC_AUDIT_CHAIN_PREVIOUS_SECRETS must not contain the current SVC_AUDIT_CHAIN_SECRET', 'SVC_AUDIT_CHAIN_PREVIOUS_SECRETS');
  }
  if (c.SVC_PUBLIC_URL !== '') {
    let url: URL | undefined;
    try {
      url = new URL(c.SVC_PUBLIC_URL);
    } catch {
      /* handled below */
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || /\s/.test(c.SVC_PUBLIC_URL)) {
      throw new ConfigError('SVC_PUBLIC_URL: must be an http(s) URL without credentials', 'SVC_PUBLIC_URL');
    }
  }
  try {
    return parseDatabaseUrl(c.SVC_DATABASE_URL, paths.sqliteDefault, paths.home);
  } catch (e) {
    if (e instanceof DatabaseUrlError) throw new ConfigError(`SVC_DATABASE_URL: ${e.message}`, 'SVC_DATABASE_URL');
    throw e;
  }
}
