// The system and deep health reports: who may read them (signed-in users with
// health:read, monitoring with the metrics token), what they hold, and how a
// failed or stuck check turns the deep report into a 503 that names it.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { timed } from '../../src/health/deep.ts';
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
    expect(names).toEqual(expect.arrayContaining(['database', 'migrations', 'audit_chain', 'audit_forwarder', 'wal_checkpointer', 'disk', 'agent_transports', 'notifications']));
    const entry = (name: string) => r.entries.find((e: any) => e.name === name);
    expect(entry('audit_chain')).toMatchObject({ status: 'ok', data: { scope: 'state-only' } });
    expect(entry('migrations').data.current).toBe(entry('migrations').data.head);
    expect(entry('audit_forwarder').status).toBe('disabled');
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

  test('a check that does not finish in time is reported failed, not left out; one that throws too', async () => {
    const stuck = await timed({ name: 'stuck', run: () => new Promise(() => {}) }, 50);
    expect(stuck).toMatchObject({ name: 'stuck', status: 'failed', detail: 'no answer within 50 ms' });
    const thrown = await timed({ name: 'thrown', run: () => Promise.reject(new Error('it broke')) }, 50);
    expect(thrown).toMatchObject({ name: 'thrown', status: 'failed', detail: 'it broke' });
  });
});
