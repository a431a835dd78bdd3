// First-boot secrets: any `minted` setting with no value anywhere is generated
// and written to $SVC_HOME/secret.env (mode 0600). Existing lines are kept.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomToken } from '../lib/crypto.ts';
import { formatEnvLine } from './envfile.ts';
import { loadConfig, type LoadedConfig, type LoadOptions } from './load.ts';
import { SETTINGS, SETTING_NAMES, type SettingName } from './settings.ts';

export function ensureHome(home: string): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
}

/** Writes `lines` to `path` atomically with the given mode. */
export function writeFileAtomic(path: string, text: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/** Replaces (or adds) one KEY=VALUE line of an env file, keeping the rest. */
export function setEnvFileValue(path: string, key: string, value: string, mode: number): void {
  const existing = existsSync(path) ? readFileSync(path, 'utf8').split(/\r?\n/) : [];
  const lines = existing.filter((l) => !new RegExp(`^(export\\s+)?${key}\\s*=`).test(l.trim()));
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  lines.push(formatEnvLine(key, value));
  writeFileAtomic(path, lines.join('\n') + '\n', mode);
}

export interface MintResult {
  loaded: LoadedConfig;
  minted: SettingName[];
}

export function loadConfigMintingSecrets(options: LoadOptions = {}): MintResult {
  const first = loadConfig(options);
  const missing = SETTING_NAMES.filter((n) => SETTINGS[n].meta.minted && first.config[n] === '');
  if (missing.length === 0) return { loaded: first, minted: [] };
  ensureHome(first.paths.home);
  const existing = existsSync(first.paths.secretEnv) ? readFileSync(first.paths.secretEnv, 'utf8') : '';
  const header = existing === '' ? '# Secrets minted by svc on first boot. Keep this file private and backed up.\n' : '';
  const body = missing.map((n) => formatEnvLine(n, randomToken(48))).join('\n');
  const text = header + existing + (existing === '' || existing.endsWith('\n') ? '' : '\n') + body + '\n';
  writeFileAtomic(first.paths.secretEnv, text, 0o600);
  return { loaded: loadConfig(options), minted: missing };
}
