// svc's own scheduler from the compiled dist/svc, without an engine (fires
// with no agent to run them stay buffered, which is enough to see when and how
// often they fire; tests/interop/scheduler-process.test.ts runs them into a
// real Celery worker): `svc mint-scheduler-cert`, the binary invoked as
// `svc-scheduler`, the scheduler endpoint's certificate checks, `schedules add
// | list | trigger | disable | enable | edit | history`, two `serve`
// processes firing a two-second cron schedule on time and once per run,
// `status`, `info --json`, `restart`, `doctor`, `import --from` / `export
// --to`, and `svc projects rewrite-scheduler` (preview digest, apply).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { binaryPath, cleanEnv, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

const env = cleanEnv({
  ...FAST_IDENTITY_ENV,
  SVC_BOOTSTRAP_ADMIN_EMAIL: 'ops@example.com',
  SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD,
  SVC_SCHEDULER_GRPC_ENABLED: 'true',
  SVC_SCHEDULER_GRPC_BIND_HOST: '127.0.0.1',
  SVC_SCHEDULER_GRPC_BIND_PORT: '0',
  // The comma-separated form (the interop test uses the JSON list).
  SVC_SCHEDULER_GRPC_ALLOWED_CNS: 'sched-a,sched-b',
});
let svc: RunningSvc;
let endpoint = '';
let certs = '';
let ca = '';
let link = '';
const running: Subprocess[] = [];

const us = (iso: string) => Date.parse(iso.replace(/(\.\d{3})\d*/, '$1'));
const schedEnv = (name: string, extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH!,
  HOME: env.HOME!,
  SVC_HOME: join(env.HOME!, `scheduler-${name}`),
  SVC_SCHEDULER_BRAIN_GRPC_URL: endpoint,
  SVC_SCHEDULER_TLS_CERT: join(certs, `${name}.crt`),
  SVC_SCHEDULER_TLS_KEY: join(certs, `${name}.key`),
  SVC_SCHEDULER_TLS_CA: ca,
  SVC_SCHEDULER_INFO_PORT: '0',
  ...extra,
});
const sched = (args: string[], name = 'sched-a', extra: Record<string, string> = {}) => runSvc(args, schedEnv(name, extra), { bin: link });
const db = () => new Database(join(env.SVC_HOME!, 'svc.db'), { readonly: true });

beforeAll(async () => {
  svc = await startSvc(env);
  endpoint = /scheduler endpoint (https:\/\/\S+)/.exec(svc.stderr())![1]!;
  ca = join(env.SVC_HOME!, 'scheduler-pki/ca.crt');
  certs = tempDir('svc-certs-');
  for (const name of ['sched-a', 'sched-b', 'sched-x']) expect((await runSvc(['mint-scheduler-cert', '--name', name, '--out-dir', certs], env)).code).toBe(0);
  const dir = tempDir('svc-link-');
  link = join(dir, 'svc-scheduler');
  symlinkSync(binaryPath(), link);
}, 60_000);

afterAll(async () => {
  for (const p of running) p.kill('SIGKILL');
  await svc?.stop('SIGKILL');
});

describe('certificates', () => {
  test('mint-scheduler-cert writes <name>.crt and .key (0600) signed by the CA in $SVC_HOME; names and reuse are checked', async () => {
    for (const f of ['sched-a.crt', 'sched-a.key']) expect(statSync(join(certs, f)).mode & 0o777).toBe(0o600);
    expect(statSync(join(env.SVC_HOME!, 'scheduler-pki/ca.key')).mode & 0o777).toBe(0o600);
    const subject = Bun.spawnSync(['openssl', 'x509', '-in', join(certs, 'sched-a.crt'), '-noout', '-subject', '-ext', 'extendedKeyUsage']).stdout.toString();
    expect(subject).toContain('CN = sched-a');
    expect(subject).toContain('TLS Web Client Authentication');
    expect(Bun.spawnSync(['openssl', 'verify', '-CAfile', ca, join(certs, 'sched-a.crt')]).exitCode).toBe(0);
    const again = await runSvc(['mint-scheduler-cert', '--name', 'sched-a', '--out-dir', certs], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists');
    expect((await runSvc(['mint-scheduler-cert', '--out-dir', certs], env)).code).toBe(2);
    expect((await runSvc(['mint-scheduler-cert', '--name', 'no spaces', '--out-dir', certs], env)).code).toBe(1);
    expect((await runSvc(['mint-scheduler-cert', '--name', 'x', '--ca-cert', ca], env)).code).toBe(2);
  });

  test('check: an allowed name passes; a name not in SVC_SCHEDULER_GRPC_ALLOWED_CNS is refused; no certificate fails the handshake', async () => {
    const ok = await sched(['check']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('certificate CN sched-a accepted');
    const x = await sched(['check'], 'sched-x');
    expect(x.code).toBe(1);
    expect(x.stderr).toContain('"sched-x" is not in SVC_SCHEDULER_GRPC_ALLOWED_CNS');
    const res = await fetch(`${endpoint}/scheduler/v1/ping`, { tls: { ca: await Bun.file(ca).text() } } as RequestInit).then(
      (r) => String(r.status),
      () => 'handshake refused',
    );
    expect(res).toBe('handshake refused');
    expect((await sched(['check'], 'sched-a', { SVC_SCHEDULER_BRAIN_GRPC_URL: '' })).code).toBe(2);
  });

  test('doctor checks settings, certificate, DNS, TCP, TLS and the endpoint, one line each', async () => {
    const r = await sched(['doctor']);
    expect(r.code).toBe(0);
    for (const line of ['ok    settings load', 'ok    client certificate', 'ok    DNS 127.0.0.1', 'ok    TCP 127.0.0.1', 'ok    TLS 127.0.0.1', 'ok    scheduler endpoint answers']) expect(r.stdout).toContain(line);
    const bad = await sched(['doctor'], 'sched-x');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('FAIL  scheduler endpoint');
  });
});

describe('the executable as svc-scheduler', () => {
  test('version and help are the scheduler\'s; `svc scheduler` is the same program', async () => {
    const version = await sched(['version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const help = await sched(['--help']);
    for (const c of ['serve', 'version', 'check', 'status', 'info', 'doctor', 'restart', 'import', 'export', 'schedules']) expect(help.stdout).toContain(c);
    expect(help.stdout).toContain('svc-scheduler');
    const sub = await sched(['schedules', '--help']);
    for (const c of ['add', 'list', 'trigger', 'disable', 'enable', 'edit', 'history']) expect(sub.stdout).toContain(c);
    expect((await runSvc(['scheduler', 'version'], env)).stdout).toBe(version.stdout);
    expect((await sched(['nonsense'])).code).toBe(2);
  });
});

describe('schedules', () => {
  let id = '';
  test('add, list, edit, disable, enable, trigger and history', async () => {
    const add = await sched(['schedules', 'add', '--project', 'default', '--name', 'nightly', '--task', 'app.nightly', '--engine', 'celery', '--cron', '30 2 * * *', '--tz', 'Europe/Berlin', '--args', '[1]']);
    expect(add.code).toBe(0);
    id = /added ([0-9a-f-]{36})/.exec(add.stdout)![1]!;
    const list = JSON.parse((await sched(['schedules', 'list', '--json', '--project', 'default'])).stdout);
    const row = list.find((s: any) => s.id === id);
    expect(row).toMatchObject({ name: 'nightly', scheduler: 'svc-scheduler', kind: 'cron', expression: '30 2 * * *', timezone: 'Europe/Berlin', args: [1], is_enabled: true, project_slug: 'default' });
    expect(new Date(us(row.next_run_at)).getUTCMinutes()).toBe(30);
    const table = (await sched(['schedules', 'list'])).stdout;
    expect(table).toMatch(/^ID\s+PROJECT\s+NAME\s+KIND\s+EXPRESSION\s+TZ\s+ENABLED\s+NEXT RUN\s+TASK/);
    // A bad expression is refused by the service's rules (exit 2), as is a duplicate name (exit 1).
    expect((await sched(['schedules', 'add', '--project', 'default', '--name', 'bad', '--task', 't', '--engine', 'celery', '--solar', 'sunrise 200 0'])).code).toBe(2);
    expect((await sched(['schedules', 'add', '--project', 'default', '--name', 'nightly', '--task', 't', '--engine', 'celery', '--interval', '60'])).code).toBe(1);
    expect((await sched(['schedules', 'add', '--project', 'nope', '--name', 'n', '--task', 't', '--engine', 'celery', '--interval', '60'])).code).toBe(1);

    const edit = await sched(['schedules', 'edit', id, '--solar', 'sunrise 52.52 13.405']);
    expect(edit.code).toBe(0);
    expect(edit.stdout).toContain('solar "sunrise 52.52 13.405"');
    expect((await sched(['schedules', 'disable', id])).stdout).toContain('disabled');
    expect(JSON.parse((await sched(['schedules', 'list', '--json'])).stdout).find((s: any) => s.id === id).is_enabled).toBe(false);
    expect((await sched(['schedules', 'enable', id])).stdout).toContain('enabled');
    const trig = await sched(['schedules', 'trigger', id]);
    expect(trig.code).toBe(0);
    expect(trig.stdout).toContain('(buffered)'); // no agent runs celery here
    const history = JSON.parse((await sched(['schedules', 'history', id, '--json'])).stdout);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ action: 'schedule.trigger_now', status: 'buffered' });
    expect((await sched(['schedules', 'history', id])).stdout).toMatch(/^SCHEDULED FOR\s+FIRED AT\s+ACTION\s+STATUS\s+LATENCY\s+ERROR/);
    expect((await sched(['schedules', 'history', 'not-an-id'])).code).toBe(2);
    // Another scheduler's schedule is not the scheduler's to touch.
    expect((await sched(['schedules', 'disable', crypto.randomUUID()])).code).toBe(1);
    // Audit rows name the scheduler's certificate.
    const d = db();
    const rows = d.query<{ action: string; user_agent: string }, [string]>(`SELECT action, user_agent FROM audit_log WHERE target_id = ? ORDER BY occurred_at`).all(id);
    d.close();
    expect(rows.map((r) => r.action)).toEqual(['schedule.create', 'schedule.update', 'schedule.disable', 'schedule.enable', 'schedule.trigger_now']);
    expect(rows[0]!.user_agent).toContain('svc-scheduler (CN=sched-a');
    await sched(['schedules', 'disable', id]);
  });

  test('two scheduler processes fire a two-second cron schedule on time, each run once; status, info and restart', async () => {
    const add = await sched(['schedules', 'add', '--project', 'default', '--name', 'every-2s', '--task', 'app.tick', '--engine', 'celery', '--cron', '*/2 * * * * *']);
    const tick = /added ([0-9a-f-]{36})/.exec(add.stdout)![1]!;
    const home = join(env.HOME!, 'shared-scheduler-home'); // both instances on one host: state files side by side
    const start = (name: string, instance: string, port: number) => {
      const p = Bun.spawn([link, 'serve', '--instance-id', instance, '--info-port', String(port), '--sync-seconds', '0.5'], { env: schedEnv(name, { SVC_HOME: home }), stdout: 'pipe', stderr: 'pipe' });
      running.push(p);
      return p;
    };
    const portA = 20000 + Math.floor(Math.random() * 20000);
    const a = start('sched-a', 'one', portA);
    const b = start('sched-b', 'two', portA + 1);
    const t0 = Date.now();
    await Bun.sleep(7500);
    const st = await runSvc(['status'], { ...schedEnv('sched-a', { SVC_HOME: home }) }, { bin: link });
    expect(st.code).toBe(0);
    expect(st.stdout).toMatch(/scheduler one: running \(pid \d+\)/);
    expect(st.stdout).toMatch(/scheduler two: running \(pid \d+\)/);
    const infoOf = async (instance: string, name: string) => JSON.parse((await runSvc(['info', '--json', '--instance-id', instance], { ...schedEnv(name, { SVC_HOME: home }) }, { bin: link })).stdout);
    const info = await infoOf('one', 'sched-a');
    const infoTwo = await infoOf('two', 'sched-b');
    expect(info).toMatchObject({ instance: 'one', cn: 'sched-a', fire_errors: 0, last_sync_ok: true });
    expect(infoTwo).toMatchObject({ instance: 'two', cn: 'sched-b', fire_errors: 0, last_sync_ok: true });
    expect([info.schedules, infoTwo.schedules]).toEqual([1, 1]);
    const restart = await runSvc(['restart'], { ...schedEnv('sched-a', { SVC_HOME: home }) }, { bin: link });
    expect(restart.code).toBe(0);
    expect(restart.stdout).toContain('scheduler one');
    await Bun.sleep(2500);
    a.kill('SIGTERM');
    b.kill('SIGTERM');
    await Promise.all([a.exited, b.exited]);
    const elapsed = Date.now() - t0;
    const infoB = await new Response(b.stdout).text();
    expect(infoB).toContain('restarted: certificates and settings reloaded');
    expect((await runSvc(['status'], { ...schedEnv('sched-a', { SVC_HOME: home }) }, { bin: link })).code).toBe(1);

    const d = db();
    const fires = d
      .query<{ scheduled_for: string; fired_at: string; status: string }, [string]>(`SELECT scheduled_for, fired_at, status FROM schedule_fires WHERE schedule_id = ? AND action = 'schedule.fire' ORDER BY scheduled_for`)
      .all(tick);
    d.close();
    // One fire per even second while they ran (give or take the first and last), none twice.
    expect(fires.length).toBeGreaterThanOrEqual(Math.floor(elapsed / 2000) - 2);
    expect(new Set(fires.map((f) => f.scheduled_for)).size).toBe(fires.length);
    for (const f of fires) {
      expect(new Date(us(f.scheduled_for)).getUTCSeconds() % 2).toBe(0);
      expect(us(f.fired_at) - us(f.scheduled_for)).toBeLessThan(1000);
      expect(f.status).toBe('buffered');
    }
    for (let i = 1; i < fires.length; i++) expect(us(fires[i]!.scheduled_for) - us(fires[i - 1]!.scheduled_for)).toBe(2000);
    // Both sent the runs: each process sent some, and the service refused a run already fired
    // (409 already_fired) to whichever came second.
    expect(info.fires_sent).toBeGreaterThan(0);
    expect(infoTwo.fires_sent).toBeGreaterThan(0);
    expect(info.duplicates + infoTwo.duplicates).toBeGreaterThan(0);
    await sched(['schedules', 'disable', tick]);
  }, 30_000);
});

describe('import and export', () => {
  test('crontab in (dry run first), JSON and celery-beat out, celery-beat in', async () => {
    const dir = tempDir('svc-import-');
    const crontab = join(dir, 'crontab');
    await Bun.write(crontab, ['SHELL=/bin/sh', 'CRON_TZ=America/New_York', '# name: morning-report', '0 7 * * 1-5 reports.morning ["ny"]', '*/15 * * * * cache.refresh', ''].join('\n'));
    const dry = await sched(['import', '--from', 'crontab', '--project', 'default', '--engine', 'rq', '--file', crontab, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('dry run: 2 to add');
    expect(JSON.parse((await sched(['schedules', 'list', '--json'])).stdout).some((s: any) => s.name === 'morning-report')).toBe(false);
    const real = await sched(['import', '--from', 'crontab', '--project', 'default', '--engine', 'rq', '--file', crontab]);
    expect(real.stdout).toContain('2 added');
    expect((await sched(['import', '--from', 'crontab', '--project', 'default', '--engine', 'rq', '--file', crontab])).stdout).toContain('2 unchanged');
    const exported = JSON.parse((await sched(['export', '--to', 'json', '--project', 'default'])).stdout);
    const report = exported.schedules.find((s: any) => s.name === 'morning-report');
    expect(report).toMatchObject({ project: 'default', task_name: 'reports.morning', engine: 'rq', kind: 'cron', expression: '0 7 * * 1-5', timezone: 'America/New_York', args: ['ny'] });
    const beat = JSON.parse((await sched(['export', '--to', 'celery-beat'])).stdout);
    expect(beat['morning-report']).toMatchObject({ task: 'reports.morning', schedule: { minute: '0', hour: '7', day_of_month: '*', month_of_year: '*', day_of_week: '1-5' }, timezone: 'America/New_York' });
    const cron = (await sched(['export', '--to', 'crontab'])).stdout;
    expect(cron).toContain('CRON_TZ=America/New_York\n# name: morning-report\n0 7 * * 1-5 reports.morning ["ny"]');
    const beatFile = join(dir, 'beat.json');
    await Bun.write(beatFile, JSON.stringify({ 'add-every-30': { task: 'tasks.add', schedule: 30.0, args: [16, 16] }, 'mon-morning': { task: 'tasks.mail', schedule: { hour: 7, minute: 30, day_of_week: 1 }, options: { queue: 'mail' } } }));
    const imported = await sched(['import', '--from', 'celery-beat', '--project', 'default', '--file', beatFile]);
    expect(imported.stdout).toContain('2 added');
    const list = JSON.parse((await sched(['schedules', 'list', '--json'])).stdout);
    expect(list.find((s: any) => s.name === 'mon-morning')).toMatchObject({ engine: 'celery', kind: 'cron', expression: '30 7 * * 1', queue: 'mail', source: 'imported:celery-beat' });
    expect((await sched(['import', '--from', 'nope', '--project', 'default'])).code).toBe(2);
  });
});

describe('svc projects rewrite-scheduler', () => {
  test('a preview with its digest, then the apply flow: attest required, a stale digest refused, the schedules move with an audit row', async () => {
    // Two schedules celery-beat reported as imported (written as the inventory would), one of another source.
    const w = new Database(join(env.SVC_HOME!, 'svc.db'));
    const project = w.query<{ id: string }, []>(`SELECT id FROM projects WHERE slug = 'default'`).get()!.id;
    const now = new Date().toISOString().replace('Z', '000+00:00');
    const insert = w.prepare(
      `INSERT INTO schedules (id, project_id, engine, scheduler, name, task_name, kind, expression, timezone, priority, args, kwargs, is_enabled, total_runs, catch_up, source, consecutive_failures, created_at, updated_at) VALUES (?, ?, 'celery', 'celery-beat', ?, 'tasks.x', 'interval', '60', 'UTC', 'normal', '[]', '{}', 1, 0, 'skip', ?, 0, ?, ?)`,
    );
    for (const [name, source] of [['beat-a', 'imported:beat'], ['beat-b', 'declarative:app'], ['beat-c', 'agent']] as const) insert.run(crypto.randomUUID(), project, name, source, now, now);
    w.close();
    const base = ['projects', 'rewrite-scheduler', '--slug', 'default', '--from', 'celery-beat', '--to', 'svc-scheduler'];
    const preview = await runSvc([...base, '--dry-run'], env);
    expect(preview.code).toBe(0);
    expect(preview.stdout).toContain('2 schedules of celery-beat (scope imported) -> svc-scheduler');
    expect(preview.stdout).not.toContain('beat-c');
    const op = /operation id: (\S+)/.exec(preview.stdout)![1]!;
    const digest = /preview manifest digest: (sha256:[0-9a-f]{64})/.exec(preview.stdout)![1]!;
    // The same preview gives the same digest for the same operation id.
    expect((await runSvc([...base, '--dry-run', '--operation-id', op], env)).stdout).toContain(digest);
    const apply = [...base, '--operation-id', op, '--preview-manifest-digest', digest];
    const unattested = await runSvc(apply, env);
    expect(unattested.code).toBe(2);
    expect(unattested.stderr).toContain('--attest-all-schedulers-quiesced');
    const stale = await runSvc([...base, '--operation-id', op, '--preview-manifest-digest', `sha256:${'0'.repeat(64)}`, '--attest-all-schedulers-quiesced'], env);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('no longer as previewed');
    const done = await runSvc([...apply, '--attest-all-schedulers-quiesced'], env);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('moved 2 schedules of project default from celery-beat to svc-scheduler');
    const d = db();
    const moved = d.query<{ name: string; scheduler: string; next_run_at: string | null }, []>(`SELECT name, scheduler, next_run_at FROM schedules WHERE name LIKE 'beat-%' ORDER BY name`).all();
    const audit = d.query<{ metadata: string }, []>(`SELECT metadata FROM audit_log WHERE action = 'project.rewrite_scheduler'`).all();
    d.close();
    expect(moved.map((m) => [m.name, m.scheduler])).toEqual([
      ['beat-a', 'svc-scheduler'],
      ['beat-b', 'svc-scheduler'],
      ['beat-c', 'celery-beat'],
    ]);
    expect(moved[0]!.next_run_at).not.toBeNull();
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0]!.metadata)).toMatchObject({ operation_id: op, digest, moved: 2, from: 'celery-beat', to: 'svc-scheduler' });
    // Applying again: the schedules are no longer as previewed.
    expect((await runSvc([...apply, '--attest-all-schedulers-quiesced'], env)).code).toBe(1);
    expect((await runSvc(['projects', 'rewrite-scheduler', '--slug', 'default', '--from', 'a', '--to', 'a', '--dry-run'], env)).code).toBe(2);
  });
});
