// The operator CLI of the compiled binary: exit codes and output.
import { afterAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';

const running: RunningSvc[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
});

describe('help and usage errors', () => {
  test('every command and subcommand answers -h/--help with exit 0', async () => {
    const env = cleanEnv();
    const commands = [
      [],
      ['serve'],
      ['check'],
      ['doctor'],
      ['status'],
      ['version'],
      ['init'],
      ['config'],
      ['config', 'show'],
      ['config', 'validate'],
      ['migrate'],
      ['migrate', 'upgrade'],
      ['migrate', 'current'],
      ['migrate', 'history'],
      ['migrate', 'downgrade'],
      ['migrate', 'sync'],
      ['allowed-hosts'],
      ['allowed-hosts', 'add'],
      ['tls', 'self-signed'],
      ['upgrade'],
      ['mint-scheduler-cert'],
      ['projects'],
      ['projects', 'rewrite-scheduler'],
      ['scheduler'],
      ...['serve', 'version', 'check', 'status', 'info', 'doctor', 'restart', 'import', 'export', 'schedules'].map((c) => ['scheduler', c]),
      ...['add', 'list', 'trigger', 'disable', 'enable', 'edit', 'history'].map((c) => ['scheduler', 'schedules', c]),
    ];
    for (const cmd of commands) {
      for (const flag of ['-h', '--help']) {
        const r = await runSvc([...cmd, flag], env);
        expect({ cmd, code: r.code }).toEqual({ cmd, code: 0 });
        expect(r.stdout).toContain('Usage:');
      }
    }
    expect(existsSync(env.SVC_HOME!)).toBe(false);
  });

  test('unknown commands, options and arguments exit 2', async () => {
    const env = cleanEnv();
    for (const args of [['frobnicate'], ['doctor', '--json'], ['doctor', 'extra'], ['serve', '--port', 'abc'], ['config', 'nope'], ['migrate', 'current', '--bogus']]) {
      const r = await runSvc(args, env);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('an installation from first boot', () => {
  const env = cleanEnv();
  let svc: RunningSvc;

  test('check before the first serve: no database yet, exit 2', async () => {
    const r = await runSvc(['check'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no database at');
    expect(existsSync(join(env.SVC_HOME!, 'svc.db'))).toBe(false);
  });

  test('init writes config.env (0644, no secrets) and refuses to overwrite without --force', async () => {
    let r = await runSvc(['init'], env);
    expect(r.code).toBe(0);
    const file = join(env.SVC_HOME!, 'config.env');
    expect(statSync(file).mode & 0o777).toBe(0o644);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('# SVC_BIND_PORT=7700');
    expect(text).not.toContain('SVC_SECRET=');
    r = await runSvc(['init'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('use --force');
    expect((await runSvc(['init', '--force'], env)).code).toBe(0);
    // The template itself validates.
    expect((await runSvc(['config', 'validate', file], env)).code).toBe(0);
  });

  test('serve, then check, status and doctor read the installation', async () => {
    svc = await startSvc(env);
    running.push(svc);
    const check = await runSvc(['check'], env);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('configuration: ok');
    expect(check.stdout).toMatch(/migration revision: \d{4}/);
    const status = await runSvc(['status'], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^version: \d+\.\d+\.\d+$/m);
    expect(status.stdout).toContain('environment: production');
    expect(status.stdout).toContain(`database: sqlite://${join(env.SVC_HOME!, 'svc.db')}`);
    const doctor = await runSvc(['doctor'], env);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain('warning: secrets were auto-minted');
    expect(doctor.stdout).toContain('warning: no users yet');
  });

  test('config show masks secrets unless revealed', async () => {
    const secret = readFileSync(join(env.SVC_HOME!, 'secret.env'), 'utf8').match(/^SVC_SECRET=(.+)$/m)![1]!;
    const shown = await runSvc(['config', 'show'], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('SVC_SECRET=***  # secret.env');
    expect(shown.stdout).not.toContain(secret);
    const revealed = await runSvc(['config', 'show', '--reveal-secrets'], env);
    expect(revealed.stdout).toContain(`SVC_SECRET=${secret}`);
  });

  test('migrate current, --check-heads, history, upgrade head, downgrade', async () => {
    const current = await runSvc(['migrate', 'current', '--check-heads'], env);
    expect(current.code).toBe(0);
    expect(current.stdout).toMatch(/current: (\d{4})\nhead: \1/);
    const history = await runSvc(['migrate', 'history'], env);
    expect(history.stdout).toMatch(/^0001 foundation applied /m);
    expect((await runSvc(['migrate', 'upgrade', 'head'], env)).stdout).toContain('already at the requested revision');
    const down = await runSvc(['migrate', 'downgrade', '0001'], env);
    const head = /head: (\d{4})/.exec(current.stdout)![1];
    if (head !== '0001') {
      expect(down.code).toBe(1);
      expect(down.stderr).toContain('forward-only');
    }
    expect((await runSvc(['migrate', 'downgrade', '0999'], env)).code).toBe(2);
  });

  test('allowed-hosts: add applies to the running service, remove takes it back', async () => {
    const host = 'svc.internal.example';
    const call = () => fetch(`${svc.url}/api/v1/health`, { headers: { host } }).then((r) => r.status);
    expect(await call()).toBe(400);
    expect((await runSvc(['allowed-hosts', 'add', host], env)).code).toBe(0);
    expect((await runSvc(['allowed-hosts', 'list'], env)).stdout.split('\n')).toContain(host);
    await eventually(async () => (await call()) === 200, 5000, 'host accepted');
    expect((await runSvc(['allowed-hosts', 'path'], env)).stdout.trim()).toBe(join(env.SVC_HOME!, 'allowed-hosts'));
    expect((await runSvc(['allowed-hosts', 'add', 'bad host!'], env)).code).toBe(2);
    expect((await runSvc(['allowed-hosts', 'remove', host], env)).code).toBe(0);
    await eventually(async () => (await call()) === 400, 5000, 'host refused again');
    expect((await runSvc(['allowed-hosts', 'remove', host], env)).code).toBe(1);
  });

  test('config validate: unknown keys and bad values in a candidate file', async () => {
    const dir = join(env.SVC_HOME!, 'candidates');
    mkdirSync(dir, { recursive: true });
    const cases: [string, number, RegExp][] = [
      ['SVC_BIND_PORT=8080\nSVC_WORKERS=2\n', 0, /ok/],
      ['SVC_BIND_PORRT=8080\n', 2, /SVC_BIND_PORRT is not a known setting/],
      ['SVC_WORKERS=0\n', 2, /SVC_WORKERS: must be between 1 and 64/],
      ['SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS=5\n', 2, /strictly below/],
      ['SVC_SECRET=' + 'x'.repeat(40) + '\n', 2, /is a secret/],
      ['FOO=1\n', 2, /FOO is not an SVC_\* setting/],
    ];
    for (const [i, [text, code, message]] of cases.entries()) {
      const file = join(dir, `c${i}.env`);
      writeFileSync(file, text);
      const r = await runSvc(['config', 'validate', file], env);
      expect({ text, code: r.code }).toEqual({ text, code });
      expect(r.stdout + r.stderr).toMatch(message);
    }
    expect((await runSvc(['config', 'validate', join(dir, 'missing.env')], env)).code).toBe(2);
  });
});

describe('metrics-token', () => {
  const scrape = (svc: RunningSvc, token: string) => fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
  const secretFile = (env: Record<string, string>) => join(env.SVC_HOME!, 'secret.env');

  test('rotate writes a new token to secret.env (0600); a running serve keeps the old one, a restarted one takes only the new', async () => {
    const env = cleanEnv();
    const old = (await runSvc(['metrics-token', 'show'], env)).stdout.trim();
    expect(old.length).toBeGreaterThanOrEqual(32);
    let svc = await startSvc(env);
    running.push(svc);
    await eventually(async () => (await scrape(svc, old)) === 200, 10_000, 'the first token accepted');

    const r = await runSvc(['metrics-token', 'rotate'], env);
    expect(r.code).toBe(0);
    const fresh = r.stdout.trim();
    expect(fresh).toMatch(/^\S{32,}$/);
    expect(fresh).not.toBe(old);
    expect(r.stderr).toContain('restart running services');
    expect(statSync(secretFile(env)).mode & 0o777).toBe(0o600);
    const lines = readFileSync(secretFile(env), 'utf8').split('\n');
    expect(lines.filter((l) => l.startsWith('SVC_METRICS_AUTH_TOKEN='))).toEqual([`SVC_METRICS_AUTH_TOKEN=${fresh}`]);
    expect((await runSvc(['metrics-token', 'show'], env)).stdout.trim()).toBe(fresh);
    // The running process resolved its token at start.
    expect(await scrape(svc, old)).toBe(200);
    expect(await scrape(svc, fresh)).toBe(401);

    expect(await svc.stop()).toBe(0);
    svc = await startSvc(env);
    running.push(svc);
    await eventually(async () => (await scrape(svc, fresh)) === 200, 10_000, 'the new token accepted');
    expect(await scrape(svc, old)).toBe(401);
    expect(await svc.stop()).toBe(0);
  });

  test('rotate is refused when the token does not come from the secret file, and changes nothing', async () => {
    const env = cleanEnv();
    expect((await runSvc(['metrics-token', 'show'], env)).code).toBe(0);
    const before = readFileSync(secretFile(env), 'utf8');
    const fromEnv = 'e'.repeat(48);
    const r = await runSvc(['metrics-token', 'rotate'], { ...env, SVC_METRICS_AUTH_TOKEN: fromEnv });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the token comes from the environment (SVC_METRICS_AUTH_TOKEN); change it there');
    expect(r.stdout).toBe('');
    expect((await runSvc(['metrics-token', 'show'], { ...env, SVC_METRICS_AUTH_TOKEN: fromEnv })).stdout.trim()).toBe(fromEnv);
    // config.env may not hold secrets at all: the loader refuses it before rotate could look at the source.
    const configEnv = join(env.SVC_HOME!, 'config.env');
    writeFileSync(configEnv, `SVC_METRICS_AUTH_TOKEN=${'c'.repeat(48)}\n`);
    const c = await runSvc(['metrics-token', 'rotate'], env);
    expect(c.code).toBe(2);
    expect(c.stderr).toContain(`${configEnv}:1: SVC_METRICS_AUTH_TOKEN is a secret; set it in the environment or secret.env, not in config.env`);
    expect(readFileSync(secretFile(env), 'utf8')).toBe(before);
  });
});

describe('--workers', () => {
  test('N workers are N processes sharing the port; a dead worker is replaced', async () => {
    const env = cleanEnv();
    const svc = await startSvc(env, ['--workers', '3']);
    running.push(svc);
    const children = () =>
      Bun.spawnSync(['pgrep', '-P', String(svc.proc.pid)])
        .stdout.toString()
        .trim()
        .split('\n')
        .filter(Boolean);
    await eventually(() => children().length === 2, 10_000, 'two more workers');
    const pids = new Set<string>();
    await eventually(
      async () => {
        const r = await fetch(`${svc.url}/api/v1/health/ready`, { headers: { connection: 'close' } });
        pids.add(r.headers.get('x-svc-worker') ?? '');
        return r.status === 200 && pids.size >= 2;
      },
      15_000,
      'answers from more than one worker',
    );
    const [victim] = children();
    process.kill(Number(victim), 'SIGKILL');
    await eventually(() => children().length === 2 && !children().includes(victim!), 15_000, 'worker restarted');
    expect(await svc.stop()).toBe(0);
    expect(children()).toEqual([]);
  });
});
