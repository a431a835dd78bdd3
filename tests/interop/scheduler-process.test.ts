// svc's own scheduler, as a user runs it: the compiled dist/svc serves with
// its scheduler endpoint (mutual TLS) on; `svc mint-scheduler-cert` mints the
// scheduler's client certificates from the CA in the installation's home; a
// real Celery worker with its z4j agent runs the tasks. A one-minute cron
// schedule fires for three minutes: three fires, each within 1 s of its
// minute, none twice, with first one scheduler process (invoked as
// `svc-scheduler`, a link to the binary) and then a second one (`svc
// scheduler serve`) running beside it. A certificate whose common name is not
// in SVC_SCHEDULER_GRPC_ALLOWED_CNS, and one from another CA, are refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { binaryPath, eventually, runSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { APP_ROOT, World, venvBin, type Proc } from './harness.ts';

const world = new World();
let endpoint = '';
let certs = '';
let ca = '';
let worker: Proc;
const schedulers: Proc[] = [];

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

const us = (iso: string) => Date.parse(iso.replace(/(\.\d{3})\d*/, '$1'));

/** The scheduler's settings as a user would set them (flags are tested too). */
const schedulerEnv = (name: string, instance: string, infoPort = '0'): Record<string, string> => ({
  SVC_HOME: tempDir('svc-scheduler-home-'),
  SVC_SCHEDULER_BRAIN_GRPC_URL: endpoint,
  SVC_SCHEDULER_TLS_CERT: join(certs, `${name}.crt`),
  SVC_SCHEDULER_TLS_KEY: join(certs, `${name}.key`),
  SVC_SCHEDULER_TLS_CA: ca,
  SVC_SCHEDULER_INSTANCE_ID: instance,
  SVC_SCHEDULER_INFO_PORT: infoPort,
  SVC_LOG_LEVEL: 'info',
});

beforeAll(async () => {
  await world.start({
    SVC_SCHEDULER_GRPC_ENABLED: 'true',
    SVC_SCHEDULER_GRPC_BIND_HOST: '127.0.0.1',
    SVC_SCHEDULER_GRPC_BIND_PORT: '0',
    SVC_SCHEDULER_GRPC_ALLOWED_CNS: '["sched-a","sched-b"]',
  });
  endpoint = /scheduler endpoint (https:\/\/\S+)/.exec(world.svc.stderr())![1]!;
  ca = join(world.env.SVC_HOME!, 'scheduler-pki/ca.crt');
  certs = tempDir('svc-scheduler-certs-');
  for (const name of ['sched-a', 'sched-b', 'sched-x']) {
    const minted = await runSvc(['mint-scheduler-cert', '--name', name, '--out-dir', certs], world.env);
    expect(minted.code).toBe(0);
    expect(minted.stdout).toContain(`common name: ${name}`);
  }
  // The worker: Celery with z4j-celery, the engine svc-scheduler's fires go to.
  const agent = await world.mint('scheduler-worker');
  const bin = venvBin('celery');
  worker = world.spawn([join(bin, 'celery'), '-A', 'tasks', 'worker', '--pool', 'threads', '--concurrency', '4', '-l', 'info', '-n', 'scheduler-worker@%h'], join(APP_ROOT, 'celery'), {
    INTEROP_BROKER_URL: world.redisUrl(),
    PYTHONUNBUFFERED: '1',
    ...world.agentEnv(agent, 'ws', 'scheduler-worker', tempDir('z4j-scheduler-worker-')),
  });
  await world.waitOnline(agent.id, worker);
}, 120_000);

afterAll(() => world.stop(), 60_000);

describe('certificates', () => {
  test('a certificate whose common name is not allowed is refused (check and serve exit 1, nothing read)', async () => {
    const env = schedulerEnv('sched-x', 'x');
    const check = await runSvc(['scheduler', 'check'], env);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('certificate common name "sched-x" is not in SVC_SCHEDULER_GRPC_ALLOWED_CNS');
    const serve = await runSvc(['scheduler', 'serve'], env);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain('refused by the service');
    // The allowed one passes, with the settings given as flags instead.
    const ok = await runSvc(['scheduler', 'check', '--brain-grpc-url', endpoint, '--tls-cert', join(certs, 'sched-a.crt'), '--tls-key', join(certs, 'sched-a.key'), '--tls-ca', ca], { PATH: process.env.PATH!, SVC_HOME: tempDir('svc-scheduler-home-') });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^ok: .* certificate CN sched-a accepted/);
  });

  test('a certificate of another CA fails the TLS handshake, as does none', async () => {
    const otherHome = tempDir('svc-other-ca-');
    const other = await runSvc(['mint-scheduler-cert', '--name', 'sched-a', '--out-dir', join(otherHome, 'certs')], { PATH: process.env.PATH!, SVC_HOME: otherHome });
    expect(other.code).toBe(0);
    const foreign = await runSvc(['scheduler', 'check', '--tls-cert', join(otherHome, 'certs/sched-a.crt'), '--tls-key', join(otherHome, 'certs/sched-a.key')], schedulerEnv('sched-a', 'f'));
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("cannot reach the service's scheduler endpoint");
    const plain = await fetch(`${endpoint}/scheduler/v1/ping`, { tls: { ca: await Bun.file(ca).text() } } as RequestInit).then(
      (r) => r.status,
      () => 'refused',
    );
    expect(plain).toBe('refused');
  });
});

describe('firing', () => {
  test(
    'a one-minute cron schedule fires into the Celery worker for three minutes: three fires, each within 1 s, none twice, with one and then two scheduler processes',
    async () => {
      const created = await world.api.call('POST', '/api/v1/projects/default/schedules', {
        name: 'every-minute',
        engine: 'celery',
        kind: 'cron',
        expression: '* * * * *',
        task_name: 'interop.add',
        args: [20, 22],
      });
      expect(created.status).toBe(201);
      const id = created.body.id;
      expect(created.body.scheduler).toBe('svc-scheduler');

      // Scheduler A: the binary invoked as `svc-scheduler` through a link.
      const linkDir = tempDir('svc-scheduler-link-');
      symlinkSync(binaryPath(), join(linkDir, 'svc-scheduler'));
      schedulers.push(world.spawn([join(linkDir, 'svc-scheduler'), 'serve'], linkDir, schedulerEnv('sched-a', 'sched-a-1')));
      const fires = async (): Promise<any[]> => (await world.api.call('GET', `/api/v1/projects/default/schedules/${id}/fires?limit=50`)).body;
      const svcState = () => `svc (exit ${world.svc.proc.exitCode}, signal ${world.svc.proc.signalCode}):\n${world.svc.stderr().slice(-3000)}`;
      const logs = () => schedulers.map((s, i) => `scheduler ${i}:\n${s.tail(3000)}`).join('\n') + `\nworker:\n${worker.tail(2000)}\n${svcState()}`;
      const wait = (n: number, ms: number) => eventually(async () => (await fires()).length >= n, ms, `${n} fires`).catch((e) => Promise.reject(new Error(`${(e as Error).message}\n${logs()}`)));
      await wait(1, 75_000);
      // Scheduler B beside it, another certificate, `svc scheduler serve` with flags for part of its settings.
      const infoB = freePort();
      schedulers.push(world.spawn([binaryPath(), 'scheduler', 'serve', '--sync-seconds', '1', '--info-port', String(infoB)], linkDir, schedulerEnv('sched-b', 'sched-b-1')));
      await wait(3, 135_000);
      // A little past the third minute: still three, none twice.
      await Bun.sleep(3000);
      const all = (await fires()).filter((f) => f.action === 'schedule.fire');
      expect(all).toHaveLength(3);
      const minutes = all.map((f) => f.scheduled_for).sort();
      expect(new Set(minutes).size).toBe(3);
      for (let i = 0; i < 3; i++) {
        expect(new Date(us(minutes[i]!)).getUTCSeconds()).toBe(0);
        if (i > 0) expect(us(minutes[i]!) - us(minutes[i - 1]!)).toBe(60_000);
      }
      // Each on time: issued by svc within 1 s of its minute, delivered to the worker's agent as promptly.
      const report: string[] = [];
      await eventually(async () => (await fires()).filter((f) => f.status === 'succeeded').length === 3, 30_000, 'three fires to succeed');
      for (const f of (await fires()).filter((x) => x.action === 'schedule.fire')) {
        const late = us(f.fired_at) - us(f.scheduled_for);
        expect(late).toBeGreaterThanOrEqual(0);
        expect(late).toBeLessThan(1000);
        const cmd = await world.command(f.command_id);
        expect(cmd.action).toBe('schedule.fire');
        expect(us(cmd.dispatched_at) - us(f.scheduled_for)).toBeLessThan(1000);
        // The task the fire submitted ran on the worker.
        expect(f.task_id).toBeTruthy();
        const task = await world.waitForTask(worker, 'celery', f.task_id, 'success', { result: 42 });
        const received = us(task.received_at ?? task.started_at) - us(f.scheduled_for);
        report.push(`${f.scheduled_for}: fired +${late} ms, dispatched +${us(cmd.dispatched_at) - us(f.scheduled_for)} ms, task received by the worker +${received} ms`);
        expect(received).toBeLessThan(1000);
      }
      console.log(`svc scheduler fires:\n${report.join('\n')}`);
      // Both processes sent the runs they held; the service took each once.
      const info = schedulers.map((s) => s.logs());
      expect(info[0]).toContain('scheduler started');
      expect(info[1]).toContain('scheduler started');
      // B held the runs of minutes two and three too: each it either fired or found fired by A.
      const b = (await (await fetch(`http://127.0.0.1:${infoB}/info`)).json()) as any;
      expect(b.instance).toBe('sched-b-1');
      expect(b.fires_accepted + b.duplicates).toBe(2);
      expect(b.fire_errors).toBe(0);
      const schedule = (await world.api.call('GET', `/api/v1/projects/default/schedules/${id}`)).body;
      expect(schedule.total_runs).toBe(3);
      expect(us(schedule.next_run_at)).toBe(us(minutes[2]!) + 60_000);
      // The commands the fires issued: three schedule.fire commands for this schedule, no more.
      const commands = (await world.api.call('GET', '/api/v1/projects/default/commands?limit=500')).body.items.filter((c: any) => c.action === 'schedule.fire' && c.target_id === id);
      expect(commands).toHaveLength(3);
    },
    300_000,
  );
});
