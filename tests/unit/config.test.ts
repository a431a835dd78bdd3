import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { displayValue, settingsView } from '../../src/config/mask.ts';
import { SETTINGS, SETTING_NAMES } from '../../src/config/settings.ts';
import { tempDir } from '../helpers/home.ts';

const homeEnv = (extra: Record<string, string> = {}) => ({ SVC_HOME: tempDir(), ...extra });

function expectConfigError(fn: () => unknown, variable: string, rule: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as ConfigError).variable).toBe(variable);
    expect((e as Error).message).toMatch(rule);
    expect((e as Error).message).not.toContain('\n');
    return;
  }
  throw new Error('expected a ConfigError');
}

describe('settings declarations', () => {
  test('every setting has a description and a default that passes its own rule', () => {
    const loaded = loadConfig({ env: homeEnv() });
    for (const name of SETTING_NAMES) {
      expect(SETTINGS[name].meta.description.length).toBeGreaterThan(10);
      expect(name.startsWith('SVC_')).toBe(true);
      expect(loaded.sources[name]).toBe('default');
    }
    expect(loaded.config.SVC_BIND_PORT).toBe(7700);
    expect(loaded.config.SVC_BIND_HOST).toBe('0.0.0.0');
    expect(loaded.config.SVC_WORKERS).toBe(1);
    expect(loaded.database.dialect).toBe('sqlite');
  });
});

describe('sources and precedence', () => {
  test('environment beats config.env, which beats the default', () => {
    const env = homeEnv();
    writeFileSync(join(env.SVC_HOME, 'config.env'), '# tunables\nSVC_BIND_PORT=8100\nexport SVC_LOG_LEVEL="warn"\n');
    let loaded = loadConfig({ env });
    expect(loaded.config.SVC_BIND_PORT).toBe(8100);
    expect(loaded.sources.SVC_BIND_PORT).toBe('config.env');
    expect(loaded.config.SVC_LOG_LEVEL).toBe('warn');
    loaded = loadConfig({ env: { ...env, SVC_BIND_PORT: '8200' } });
    expect(loaded.config.SVC_BIND_PORT).toBe(8200);
    expect(loaded.sources.SVC_BIND_PORT).toBe('env');
  });

  test('a .env file in the working directory is never read', () => {
    const cwd = process.cwd();
    const dir = tempDir();
    writeFileSync(join(dir, '.env'), 'SVC_BIND_PORT=9999\n');
    process.chdir(dir);
    try {
      expect(loadConfig({ env: homeEnv() }).config.SVC_BIND_PORT).toBe(7700);
    } finally {
      process.chdir(cwd);
    }
  });

  test('first boot mints the secrets into a 0600 secret file, and they are stable afterwards', () => {
    const env = homeEnv();
    const first = loadConfigMintingSecrets({ env });
    expect(first.minted.sort()).toEqual(['SVC_AUDIT_CHAIN_SECRET', 'SVC_METRICS_AUTH_TOKEN', 'SVC_SECRET']);
    const file = join(env.SVC_HOME, 'secret.env');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.loaded.sources.SVC_SECRET).toBe('secret.env');
    expect(Buffer.byteLength(first.loaded.config.SVC_SECRET)).toBeGreaterThanOrEqual(32);
    const second = loadConfigMintingSecrets({ env });
    expect(second.minted).toEqual([]);
    expect(second.loaded.config.SVC_SECRET).toBe(first.loaded.config.SVC_SECRET);
    expect(second.loaded.config.SVC_SECRET).not.toBe(second.loaded.config.SVC_AUDIT_CHAIN_SECRET);
  });

  test('a secret given in the environment is not minted and not written', () => {
    const env = homeEnv({ SVC_SECRET: 's'.repeat(40) });
    const { minted } = loadConfigMintingSecrets({ env });
    expect(minted).not.toContain('SVC_SECRET');
    expect(readFileSync(join(env.SVC_HOME, 'secret.env'), 'utf8')).not.toContain('SVC_SECRET=');
  });

  test('reading settings never creates the home directory', () => {
    const env = { SVC_HOME: join(tempDir(), 'not-yet') };
    loadConfig({ env });
    expect(existsSync(env.SVC_HOME)).toBe(false);
  });
});

describe('rules and errors', () => {
  test('out-of-range and malformed values name the variable and the rule', () => {
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_BIND_PORT: '70000' }) }), 'SVC_BIND_PORT', /between 1 and 65535/);
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_BIND_PORT: 'abc' }) }), 'SVC_BIND_PORT', /whole number/);
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_METRICS_PUBLIC: 'maybe' }) }), 'SVC_METRICS_PUBLIC', /true or false/);
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_LOG_LEVEL: 'loud' }) }), 'SVC_LOG_LEVEL', /one of debug, info/);
  });

  test('short secrets are refused without echoing the value', () => {
    try {
      loadConfig({ env: homeEnv({ SVC_SECRET: 'tooshort-secret' }) });
      throw new Error('expected failure');
    } catch (e) {
      expect((e as Error).message).toBe('SVC_SECRET: must be at least 32 bytes');
    }
    expectConfigError(
      () => loadConfig({ env: homeEnv({ SVC_PREVIOUS_SECRETS: `${'a'.repeat(40)},short` }) }),
      'SVC_PREVIOUS_SECRETS',
      /entry 2 must be at least 32 bytes/,
    );
  });

  test('cross-field rules of the spec', () => {
    expectConfigError(
      () => loadConfig({ env: homeEnv({ SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS: '10', SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS: '10' }) }),
      'SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS',
      /strictly below/,
    );
    expectConfigError(
      () => loadConfig({ env: homeEnv({ SVC_COMMAND_TIMEOUT_SECONDS: '5' }) }),
      'SVC_COMMAND_TIMEOUT_SECONDS',
      /must not be below SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS/,
    );
    expect(loadConfig({ env: homeEnv({ SVC_COMMAND_TIMEOUT_SECONDS: '10' }) }).config.SVC_COMMAND_TIMEOUT_SECONDS).toBe(10);
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_TLS_CERT_FILE: '/x.pem' }) }), 'SVC_TLS_CERT_FILE', /set together/);
    const same = 'x'.repeat(40);
    expectConfigError(() => loadConfig({ env: homeEnv({ SVC_SECRET: same, SVC_AUDIT_CHAIN_SECRET: same }) }), 'SVC_AUDIT_CHAIN_SECRET', /differ/);
  });

  test('database URLs: sqlite paths, postgres URLs, and malformed ones', () => {
    const home = tempDir();
    expect(loadConfig({ env: { SVC_HOME: home, SVC_DATABASE_URL: 'sqlite:///var/tmp/x.db' } }).database).toEqual({
      dialect: 'sqlite',
      path: '/var/tmp/x.db',
    });
    expect(loadConfig({ env: { SVC_HOME: home, SVC_DATABASE_URL: 'sqlite:data/x.db' } }).database).toEqual({
      dialect: 'sqlite',
      path: join(home, 'data/x.db'),
    });
    const pg = loadConfig({ env: { SVC_HOME: home, SVC_DATABASE_URL: 'postgresql://u:p@db.internal:5432/svc' } }).database;
    expect(pg.dialect).toBe('postgres');
    for (const bad of ['mysql://x/y', 'postgres://u:hunter2@/', 'postgres://u:hunter2@host/', 'postgres://u:hunter2@host:99999/db', 'sqlite:']) {
      try {
        loadConfig({ env: { SVC_HOME: home, SVC_DATABASE_URL: bad } });
        throw new Error(`accepted ${bad}`);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as Error).message).toStartWith('SVC_DATABASE_URL: ');
        expect((e as Error).message).not.toContain('hunter2');
      }
    }
  });

  test('config.env: unknown keys, secrets and bad lines are refused with file and line', () => {
    const env = homeEnv();
    const file = join(env.SVC_HOME, 'config.env');
    writeFileSync(file, 'SVC_BIND_PORT=8000\nSVC_NOT_A_THING=1\n');
    expectConfigError(() => loadConfig({ env }), 'SVC_NOT_A_THING', /config\.env:2: SVC_NOT_A_THING is not a known setting/);
    writeFileSync(file, 'SVC_SECRET=' + 'x'.repeat(40) + '\n');
    expectConfigError(() => loadConfig({ env }), 'SVC_SECRET', /is a secret/);
    writeFileSync(file, 'SVC_BIND_PORT=0\n');
    expectConfigError(() => loadConfig({ env }), 'SVC_BIND_PORT', /config\.env:1: SVC_BIND_PORT: must be between 1 and 65535/);
    writeFileSync(file, 'this is not a setting\n');
    expect(() => loadConfig({ env })).toThrow(/config\.env:1: expected KEY=VALUE/);
  });
});

describe('masking', () => {
  test('secrets are masked unless revealed; URLs are shown as configured', () => {
    const loaded = loadConfig({
      env: homeEnv({ SVC_SECRET: 'z'.repeat(40), SVC_DATABASE_URL: 'postgres://u:pw@h/db' }),
    });
    const view = settingsView(loaded.config, loaded.sources);
    expect(view.find((s) => s.name === 'SVC_SECRET')!.value).toBe('***');
    expect(view.find((s) => s.name === 'SVC_DATABASE_URL')!.value).toBe('postgres://u:pw@h/db');
    expect(displayValue('SVC_SECRET', 'z'.repeat(40), true)).toBe('z'.repeat(40));
    expect(JSON.stringify(view)).not.toContain('z'.repeat(40));
  });
});
