// The system and deep health reports: who may read them (signed-in users with
// health:read, monitoring with the metrics token), what they hold, and how a
// failed or stuck check turns the deep report into a 503 that names it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { timed } from '../../src/health/deep.ts';
import { acquireLease, keepLeases } from '../../src/platform/leases.ts';
import { every } from '../../src/server/schedule.ts';
import { signalsOf } from '../../src/signals/index.ts';
import { PostgresSignals } from '../../src/signals/postgres.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';

let svc: TestService;
let admin: Browser;
let viewer: Browser;
let bearer: Record<string, string>;

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  admin = await mfaAdmin(svc);
  viewer = await userBrowser(admin, 'viewer@example.com');
  bearer = { authorization: `Bearer ${svc.ctx.config.SVC_METRICS_AUTH_TOKEN}` };
});
afterAll(() => svc.close());

describe('health reports', () => {
  test('anonymous callers and wrong tokens are refused; users and the metrics token are admitted', async () => {
    for (const path of ['/api/v1/health/system', '/api/v1/health/deep']) {
      expect((await svc.call('GET', path)).status).toBe(401);
      expect((await svc.call('GET', path, { headers: { authorization: 'Bearer not-the-token' } })).status).toBe(401);
      expect((await svc.call('GET', path, { headers: bearer })).status).toBe(200);
      expect((await viewer.call('GET', path)).status).toBe(200);
    }
    const key = (await admin.call('POST', '/api/v1/api-keys', { body: { name: 'narrow', scopes: ['tasks:read'] } })).body.token;
    expect((await svc.call('GET', '/api/v1/health/deep', { headers: { authorization: `Bearer ${key}` } })).body.error).toBe('insufficient_scope');
  });

  test('system: version, runtime, OS, database engine, size and connections, packages', async () => {
    const r = (await svc.call('GET', '/api/v1/health/system', { headers: bearer })).body;
    expect(r).toMatchObject({ pid: process.pid, runtime: { bun: Bun.version }, worker: { index: 0, count: 1 }, database: { type: svc.ctx.db.dialect } });
    expect(r.os.platform).toBe(process.platform);
    expect(r.database.version).toMatch(/^\d+\.\d+/);
    expect(r.database.size_bytes).toBeGreaterThan(0);
    expect(r.database.connections).toBeGreaterThan(0);
    expect(r.packages.elysia).toMatch(/^\d/);
  });

  test('deep: one entry per subsystem, the audit chain state-only, and a coverage object', async () => {
    const r = (await svc.call('GET', '/api/v1/health/deep', { headers: bearer })).body;
    expect(r.status).toBe('ok');
    const names = r.entries.map((e: any) => e.name);
    expect(names).toEqual(
      expect.arrayContaining(['database', 'migrations', 'audit_chain', 'audit_forwarder', 'wal_checkpointer', 'disk', 'agent_transports', 'signals', 'lease_keeper', 'notifications']),
    );
    const entry = (name: string) => r.entries.find((e: any) => e.name === name);
    expect(entry('audit_chain')).toMatchObject({ status: 'ok', data: { scope: 'state-only' } });
    expect(entry('migrations').data.current).toBe(entry('migrations').data.head);
    expect(entry('audit_forwarder').status).toBe('disabled');
    // One SQLite process outside svc serve: no signal transport, no lease keeper.
    expect(entry('signals')).toMatchObject({ status: 'disabled', data: { transport: 'memory' } });
    expect(entry('lease_keeper').status).toBe('disabled');
    expect(entry('disk').data.free_bytes).toBeGreaterThan(0);
    expect(r.coverage).toMatchObject({ checked: r.entries.length, failed: 0 });
    expect(r.coverage.not_covered.length).toBeGreaterThan(0);
  });

  test('a background job whose last run failed makes the report 503, naming it', async () => {
    const job = svc.ctx.jobs.register('test-job', 60_000);
    job.last_error = 'boom';
    try {
      const r = await svc.call('GET', '/api/v1/health/deep', { headers: bearer });
      expect(r.status).toBe(503);
      expect(r.body.status).toBe('failed');
      expect(r.body.entries.find((e: any) => e.name === 'job:test-job')).toMatchObject({ status: 'failed', detail: 'the last run failed: boom' });
      expect(r.body.coverage.failed).toBe(1);
    } finally {
      job.last_error = null;
    }
  });

  test('the PostgreSQL signal connection: failed, naming it, while it cannot connect; ok once LISTEN is in place', async () => {
    const own = await testService();
    const token = { authorization: `Bearer ${own.ctx.config.SVC_METRICS_AUTH_TOKEN}` };
    const bus = signalsOf(own.ctx);
    try {
      // A port nobody listens on: the listener keeps reconnecting.
      const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
      const port = closed.port;
      closed.stop(true);
      bus.attach(new PostgresSignals({ url: `postgres://svc@127.0.0.1:${port}/svc`, connectTimeoutSeconds: 1, onMessage() {} }));
      const down = await own.call('GET', '/api/v1/health/deep', { headers: token });
      expect(down.status).toBe(503);
      expect(down.body.entries.find((e: any) => e.name === 'signals')).toMatchObject({
        status: 'failed',
        detail: 'the LISTEN connection to PostgreSQL is down (reconnecting): signals of the other processes are not heard',
        data: { transport: 'postgres' },
      });
      await bus.close();
      if (!process.env.SVC_TEST_PG_URL) return;
      const pg = new PostgresSignals({ url: process.env.SVC_TEST_PG_URL, connectTimeoutSeconds: 5, onMessage() {} });
      bus.attach(pg);
      await pg.ready();
      const up = await own.call('GET', '/api/v1/health/deep', { headers: token });
      expect(up.body.entries.find((e: any) => e.name === 'signals')).toMatchObject({ status: 'ok', detail: 'the LISTEN connection to PostgreSQL is up' });
      expect(up.status).toBe(200);
    } finally {
      await bus.close();
      await own.close();
    }
  });

  test('the lease keeper: the leases it holds; failed while renewals fail, and when no round finished within the lease time', async () => {
    const own = await testService();
    const token = { authorization: `Bearer ${own.ctx.config.SVC_METRICS_AUTH_TOKEN}` };
    const entry = async () => {
      const r = await own.call('GET', '/api/v1/health/deep', { headers: token });
      return { http: r.status, ...r.body.entries.find((e: any) => e.name === 'lease_keeper') };
    };
    // Rounds run only when the test calls tick().
    let keeper = keepLeases(own.ctx.db, { ttlMs: 60_000, renewMs: 3_600_000 });
    try {
      expect(await acquireLease(own.ctx.db, 'deep-health-test', 60_000)).toBe(true);
      expect(await entry()).toMatchObject({ http: 200, status: 'ok', detail: '1 leases held, renewed every 3600000 ms', data: { held: ['deep-health-test'], ttl_ms: 60_000 } });
      await own.ctx.db.tx((tx) => tx.run(sql.raw('ALTER TABLE svc_leases RENAME TO svc_leases_away')));
      await keeper.tick();
      const failing = await entry();
      expect(failing).toMatchObject({ http: 503, status: 'failed' });
      expect(failing.detail).toMatch(/^renewing leases fails: .*svc_leases/);
      await own.ctx.db.tx((tx) => tx.run(sql.raw('ALTER TABLE svc_leases_away RENAME TO svc_leases')));
      await keeper.tick();
      expect(await entry()).toMatchObject({ http: 200, status: 'ok' });
      await keeper.stop();
      // A keeper whose rounds never finish (here: never run) within the lease time.
      keeper = keepLeases(own.ctx.db, { ttlMs: 100, renewMs: 3_600_000 });
      await Bun.sleep(150);
      expect(await entry()).toMatchObject({ http: 503, status: 'failed', detail: expect.stringMatching(/^no renewal round finished in \d+\.\d s \(leases last 0.1 s\)$/) });
    } finally {
      await keeper.stop();
      await own.close();
    }
  });

  test('svc_background_task_error_active{task} is 1 while the last run failed, 0 again after one succeeds', async () => {
    const own = await testService();
    const token = { authorization: `Bearer ${own.ctx.config.SVC_METRICS_AUTH_TOKEN}` };
    try {
      let broken = true;
      every(own.ctx, 'flaky-test-job', 20, async () => {
        if (broken) throw new Error('flaky job broke');
      }, 0);
      const gauge = async () =>
        /^svc_background_task_error_active\{task="flaky-test-job"\} (\d)$/m.exec((await own.call('GET', '/metrics', { headers: token })).text)?.[1];
      const until = async (value: string) => {
        for (const end = Date.now() + 10_000; (await gauge()) !== value; await Bun.sleep(20)) {
          if (Date.now() > end) throw new Error(`svc_background_task_error_active never became ${value}`);
        }
      };
      await until('1');
      const deep = await own.call('GET', '/api/v1/health/deep', { headers: token });
      expect(deep.body.entries.find((e: any) => e.name === 'job:flaky-test-job')).toMatchObject({ status: 'failed', detail: 'the last run failed: flaky job broke' });
      broken = false;
      await until('0');
      expect((await own.call('GET', '/api/v1/health/deep', { headers: token })).body.entries.find((e: any) => e.name === 'job:flaky-test-job').status).toBe('ok');
    } finally {
      await own.close();
    }
  });

  test('a check that does not finish in time is reported failed, not left out; one that throws too', async () => {
    const stuck = await timed({ name: 'stuck', run: () => new Promise(() => {}) }, 50);
    expect(stuck).toMatchObject({ name: 'stuck', status: 'failed', detail: 'no answer within 50 ms' });
    const thrown = await timed({ name: 'thrown', run: () => Promise.reject(new Error('it broke')) }, 50);
    expect(thrown).toMatchObject({ name: 'thrown', status: 'failed', detail: 'it broke' });
  });
});
