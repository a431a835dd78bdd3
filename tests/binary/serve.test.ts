// The compiled binary on its own: an empty directory, an empty HOME.
import { afterAll, describe, expect, test } from 'bun:test';
import { copyFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/home.ts';
import { binaryPath, cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';

const running: RunningSvc[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
});

describe('dist/svc copied alone into an empty directory', () => {
  const dir = tempDir('svc-bin-');
  const bin = join(dir, 'svc');
  copyFileSync(binaryPath(), bin);
  // Only PATH and HOME: no Bun, no node_modules, no SVC_HOME.
  const home = tempDir('svc-emptyhome-');
  const env = { PATH: '/usr/bin:/bin', HOME: home };

  test('`svc version`, `svc -V` and `svc --version` print the version', async () => {
    const pkg = await Bun.file(join(import.meta.dir, '../../package.json')).json();
    for (const args of [['version'], ['-V'], ['--version']]) {
      const r = await runSvc(args, env, { cwd: dir, bin });
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe(pkg.version);
    }
    expect(readdirSync(home)).toEqual([]); // printing a version writes nothing
  });

  test('`svc serve` answers health, readiness and the dashboard, and creates its files', async () => {
    const svc = await startSvc(env, [], { cwd: dir, bin });
    running.push(svc);
    const health = await fetch(`${svc.url}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('{"status":"ok"}');
    await eventually(async () => (await fetch(`${svc.url}/api/v1/health/ready`)).status === 200, 10_000, 'ready');
    expect(await (await fetch(`${svc.url}/api/v1/health/ready`)).json()).toEqual({ status: 'ready' });
    const page = await fetch(`${svc.url}/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div id="app">');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(`${svc.url}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toContain('immutable');

    const svcHome = join(home, '.svc');
    expect(existsSync(join(svcHome, 'svc.db'))).toBe(true);
    expect(statSync(join(svcHome, 'secret.env')).mode & 0o777).toBe(0o600);
    expect(statSync(join(svcHome, 'svc.db')).mode & 0o777).toBe(0o600);
    // The WAL checkpoint thread (a worker entry point of the binary) folds the
    // migrations into the database file while svc runs; no commit does it inline.
    await eventually(() => statSync(join(svcHome, 'svc.db')).size > 100_000, 5000, 'a background WAL checkpoint');
    expect(svc.stdout()).not.toContain('"level":"error"');
    // Logs are JSON lines with the documented fields.
    const line = svc.stdout().split('\n').find((l) => l.includes('svc ready'))!;
    const entry = JSON.parse(line);
    expect(entry).toMatchObject({ level: 'info', logger: 'serve', msg: 'svc ready' });
    expect(entry.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    // Secrets never reach the logs.
    const secrets = (await Bun.file(join(svcHome, 'secret.env')).text()).match(/=(.+)$/gm)!.map((m) => m.slice(1));
    for (const s of secrets) expect(svc.stdout() + svc.stderr()).not.toContain(s);
    expect(await svc.stop()).toBe(0);
  });
});

describe('bad settings fail fast with one line and write nothing', () => {
  const cases: [string, Record<string, string>, string, RegExp][] = [
    ['unknown key in config.env', {}, 'SVC_BIND_PORT=8000\nSVC_TYPO_SETTING=1\n', /SVC_TYPO_SETTING is not a known setting/],
    ['value out of range', {}, 'SVC_BIND_PORT=123456\n', /SVC_BIND_PORT: must be between 1 and 65535/],
    ['malformed database URL', { SVC_DATABASE_URL: 'postgres://user:hunter2@:badport/db' }, '', /SVC_DATABASE_URL: malformed PostgreSQL URL/],
  ];
  for (const [name, extra, file, message] of cases) {
    test(name, async () => {
      const env = cleanEnv(extra);
      const { mkdirSync, writeFileSync } = await import('node:fs');
      mkdirSync(env.SVC_HOME!, { recursive: true });
      if (file) writeFileSync(join(env.SVC_HOME!, 'config.env'), file);
      const before = readdirSync(env.SVC_HOME!).sort();
      for (const args of [['serve', '--port', '0'], ['check'], ['status']]) {
        const r = await runSvc(args, env);
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(message);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).not.toContain('hunter2');
        expect(r.stderr).not.toMatch(/\bat .*:\d+:\d+/); // no stack trace
      }
      expect(readdirSync(env.SVC_HOME!).sort()).toEqual(before);
    });
  }
});
