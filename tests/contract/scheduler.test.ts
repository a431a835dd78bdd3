// svc's own scheduler against the service's scheduler endpoint, on both
// databases, in one process: the endpoint over mutual TLS as `svc serve` opens
// it, client certificates minted from its CA, and the scheduler loop of `svc
// scheduler serve` (SchedulerRunner with its real client). What a scheduler is
// answered when it fires a run (once however many send it at once; too early,
// too late, disabled, another scheduler's), what a certificate bound to
// projects sees, the catch-up policies for runs missed while no scheduler ran,
// and a running scheduler picking up schedules added, disabled and enabled
// again. tests/binary/scheduler.test.ts runs the same through the executable.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { isoMicros, nowMicros } from '../../src/lib/clock.ts';
import { BrainClient } from '../../src/scheduler/client.ts';
import { startSchedulerEndpoint, type SchedulerEndpoint } from '../../src/scheduler/endpoint.ts';
import { caPaths, mintClientCert, pkiDir, readCa, writePair } from '../../src/scheduler/pki.ts';
import { SchedulerRunner, type Log } from '../../src/scheduler/runner.ts';
import { createSchedule, setEnabled } from '../../src/schedules/service.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { countRows, insertProject, TEST_ACTOR, until } from '../helpers/agents.ts';
import { tempDir } from '../helpers/home.ts';

const FIRE_BUFFER_SECONDS = 600;
let svc: TestService;
let endpoint: SchedulerEndpoint;
let billing: { id: string; slug: string };
let catchUp: { id: string; slug: string };
let live: { id: string; slug: string };
let defaultProject: { id: string; slug: string };
const certs = tempDir('svc-sched-certs-');
const runners: SchedulerRunner[] = [];

beforeAll(async () => {
  svc = await testService({
    env: {
      SVC_SCHEDULER_GRPC_ENABLED: 'true',
      SVC_SCHEDULER_GRPC_BIND_HOST: '127.0.0.1',
      SVC_SCHEDULER_GRPC_BIND_PORT: '0',
      SVC_SCHEDULER_GRPC_ALLOWED_CNS: 'sched-a,sched-b,sched-billing,sched-catch-up,sched-live',
      SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS: JSON.stringify({ 'sched-billing': ['billing'], 'sched-catch-up': ['catch-up'], 'sched-live': ['live'] }),
      SVC_SCHEDULE_FIRE_BUFFER_SECONDS: String(FIRE_BUFFER_SECONDS),
    },
  });
  endpoint = (await startSchedulerEndpoint(svc.ctx))!;
  billing = await insertProject(svc.ctx.db, 'billing');
  catchUp = await insertProject(svc.ctx.db, 'catch-up');
  live = await insertProject(svc.ctx.db, 'live');
  defaultProject = await insertProject(svc.ctx.db, 'ops');
}, 60_000);
afterAll(async () => {
  for (const r of runners) r.stop();
  await svc.close();
});

/** A scheduler's client with a certificate for `cn` minted from the endpoint's CA. */
async function clientFor(cn: string): Promise<BrainClient> {
  const ca = caPaths(pkiDir(svc.home));
  const files = writePair(certs, cn, await mintClientCert(cn, readCa(ca.cert, ca.key)));
  return new BrainClient({ url: endpoint.url, certFile: files.cert, keyFile: files.key, caFile: ca.cert, instance: `${cn}-test` });
}
const clients = new Map<string, Promise<BrainClient>>();
const as = (cn: string) => {
  if (!clients.has(cn)) clients.set(cn, clientFor(cn));
  return clients.get(cn)!;
};
const fire = async (cn: string, scheduleId: string, scheduledFor: string) => (await as(cn)).request('POST', '/fire', { schedule_id: scheduleId, scheduled_for: scheduledFor });
const newSchedule = (projectId: string, fields: Record<string, unknown> = {}) =>
  createSchedule(svc.ctx, projectId, { name: `s-${crypto.randomUUID().slice(0, 8)}`, engine: 'celery', kind: 'interval', expression: '60', task_name: 'app.tick', ...fields } as never, TEST_ACTOR);
const runsFired = async (scheduleId: string) =>
  (await svc.ctx.db.all<{ scheduled_for: string }>(sql`SELECT scheduled_for FROM schedule_fires WHERE schedule_id = ${scheduleId} AND action = 'schedule.fire' ORDER BY scheduled_for`)).map((r) =>
    Date.parse(r.scheduled_for),
  );
const quiet: Log = { info: () => {}, warn: () => {}, error: () => {} };
const runner = async (cn: string, options: { syncMs: number; catchUpMax?: number }) => {
  const r = new SchedulerRunner({ client: await as(cn), syncMs: options.syncMs, maxInFlight: 8, catchUpMax: options.catchUpMax ?? 100, log: quiet });
  runners.push(r);
  return r;
};

describe(`svc scheduler and the scheduler endpoint on ${testDialect()}`, () => {
  test('a run two schedulers send at once is fired once: one 201, every other sender 409 already_fired, one fire row and one command', async () => {
    const s = await newSchedule(defaultProject.id);
    const at = isoMicros(nowMicros() - 1_000_000);
    const answers = await Promise.all(['sched-a', 'sched-b', 'sched-a', 'sched-b', 'sched-a', 'sched-b'].map((cn) => fire(cn, s.id, at)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const won = answers.find((a) => a.status === 201)!.body;
    for (const a of answers.filter((x) => x.status === 409)) {
      expect(a.body).toMatchObject({ error: 'already_fired', details: { schedule_id: s.id, scheduled_for: at } });
    }
    expect(won.fire).toMatchObject({ schedule_id: s.id, scheduled_for: at, action: 'schedule.fire', status: 'buffered' });
    expect(await countRows(svc.ctx.db, 'schedule_fires', sql`schedule_id = ${s.id}`)).toBe(1);
    expect(await countRows(svc.ctx.db, 'commands', sql`target_id = ${s.id}`)).toBe(1);
  });

  test('a run too far ahead, older than the fire buffer, of a disabled schedule or of another scheduler is refused, nothing stored', async () => {
    const s = await newSchedule(defaultProject.id);
    const early = await fire('sched-a', s.id, isoMicros(nowMicros() + 60_000_000));
    expect([early.status, early.body.error]).toEqual([422, 'too_early']);
    expect(early.body.details.server_time).toBeString();
    const late = await fire('sched-a', s.id, isoMicros(nowMicros() - (FIRE_BUFFER_SECONDS + 60) * 1_000_000));
    expect([late.status, late.body.error]).toEqual([422, 'too_late']);
    expect((await fire('sched-a', s.id, 'yesterday')).body.error).toBe('validation_failed');
    await setEnabled(svc.ctx, defaultProject.id, s.id, false, TEST_ACTOR);
    const off = await fire('sched-a', s.id, isoMicros(nowMicros()));
    expect([off.status, off.body.error, off.body.details.paused_by]).toEqual([409, 'schedule_disabled', null]);
    const beat = await newSchedule(defaultProject.id, { scheduler: 'celery-beat' });
    const other = await fire('sched-a', beat.id, isoMicros(nowMicros()));
    expect([other.status, other.body.error, other.body.details.scheduler]).toEqual([409, 'not_svc_scheduler', 'celery-beat']);
    expect((await fire('sched-a', crypto.randomUUID(), isoMicros(nowMicros()))).status).toBe(404);
    expect(await countRows(svc.ctx.db, 'schedule_fires', sql`schedule_id IN (${s.id}, ${beat.id})`)).toBe(0);
  });

  test('a certificate bound to projects (SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS) sees and fires only their schedules; a name not allowed is refused', async () => {
    const mine = await newSchedule(billing.id);
    const theirs = await newSchedule(defaultProject.id);
    const bound = await as('sched-billing');
    const list = await bound.call('GET', '/schedules');
    expect(list.schedules.map((x: any) => x.project_slug)).toEqual(['billing']);
    expect(list.schedules.map((x: any) => x.id)).toEqual([mine.id]);
    expect((await bound.call('GET', '/ping')).projects).toBe(1);
    const at = isoMicros(nowMicros());
    expect((await fire('sched-billing', theirs.id, at)).status).toBe(404);
    expect((await fire('sched-billing', mine.id, at)).status).toBe(201);
    // An unbound name sees every project.
    const all = await (await as('sched-a')).call('GET', '/schedules');
    expect(all.schedules.map((x: any) => x.id)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    const refused = await (await as('sched-x')).request('GET', '/schedules');
    expect([refused.status, refused.body.error]).toEqual([403, 'cn_not_allowed']);
  });

  test('runs missed while no scheduler ran: skip fires none, fire_one_missed the latest, fire_all_missed the latest SVC_SCHEDULER_CATCH_UP_MAX inside the fire buffer', async () => {
    const now = Math.floor(nowMicros() / 1000) * 1000; // whole milliseconds, as the rows are compared below
    const missed = async (catch_up: string, expression: string, sinceSeconds: number) => {
      const s = await newSchedule(catchUp.id, { catch_up, expression });
      const expected = now - sinceSeconds * 1_000_000;
      await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE schedules SET next_run_at = ${isoMicros(expected)} WHERE id = ${s.id}`));
      return { id: s.id, expected: expected / 1000, step: Number(expression) * 1000 };
    };
    // Six runs missed (330, 270, ... 30 s ago).
    const skip = await missed('skip', '60', 330);
    const one = await missed('fire_one_missed', '60', 1830);
    const all = await missed('fire_all_missed', '60', 330);
    // Forty runs of a 30 s schedule missed, twenty of them inside the 600 s fire buffer: the latest twelve.
    const capped = await missed('fire_all_missed', '30', 1175);
    // Thirty runs missed, ten inside the buffer: those ten (older ones the service would refuse as too late).
    const old = await missed('fire_all_missed', '60', 1770);
    const r = await runner('sched-catch-up', { syncMs: 3600_000, catchUpMax: 12 });
    await r.start();
    await r.drain(20_000);
    const grid = (s: { expected: number; step: number }, first: number, count: number) => Array.from({ length: count }, (_, i) => s.expected + (first + i) * s.step);
    expect(await runsFired(skip.id)).toEqual([]);
    expect(await runsFired(one.id)).toEqual(grid(one, 30, 1));
    expect(await runsFired(all.id)).toEqual(grid(all, 0, 6));
    expect(await runsFired(capped.id)).toEqual(grid(capped, 39 - 11, 12));
    expect(await runsFired(old.id)).toEqual(grid(old, 29 - 9, 10));
    expect(r.snapshot()).toMatchObject({ schedules: 5, fires_accepted: 1 + 6 + 12 + 10, duplicates: 0, fire_errors: 0 });
    // Each schedule's next run is the first one after now on its grid.
    expect(Date.parse(r.snapshot().next_due_at!)).toBe(capped.expected + 40 * capped.step);
    r.stop();
  }, 30_000);

  test('a running scheduler picks up a schedule added, disabled and enabled again without a restart', async () => {
    const r = await runner('sched-live', { syncMs: 200 });
    await r.start();
    expect(r.snapshot().schedules).toBe(0);
    const s = await newSchedule(live.id, { expression: '1' });
    await until(() => r.snapshot().schedules === 1, 10_000, 'the new schedule to be read');
    await until(async () => (await runsFired(s.id)).length >= 2, 10_000, 'two runs fired');
    await setEnabled(svc.ctx, live.id, s.id, false, TEST_ACTOR);
    await until(() => r.snapshot().schedules === 0, 10_000, 'the disabled schedule to be dropped');
    // Dropped: nothing more is sent for it (the service would refuse it anyway).
    const sent = r.snapshot().fires_sent;
    const fired = (await runsFired(s.id)).length;
    await Bun.sleep(2500);
    expect(r.snapshot()).toMatchObject({ fires_sent: sent, next_due_at: null });
    expect(await runsFired(s.id)).toHaveLength(fired);
    await setEnabled(svc.ctx, live.id, s.id, true, TEST_ACTOR);
    await until(() => r.snapshot().schedules === 1, 10_000, 'the enabled schedule to be read again');
    await until(async () => (await runsFired(s.id)).length >= fired + 2, 10_000, 'runs fired again');
    expect(r.snapshot()).toMatchObject({ duplicates: 0, fire_errors: 0 });
    r.stop();
    await r.drain(5000);
  }, 60_000);
});
