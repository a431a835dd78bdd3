// Misfire detection on both databases: a schedule whose expected run passes its
// grace without a fire (svc's own) or without a live scheduler (an adapter's,
// its agent offline) is recorded once per outage: a misfire row, a
// `scheduler.misfire_detected` audit row and a schedule.misfired notification
// (an inbox row through the dispatcher). While an agent advertising the adapter
// is online the expectation just moves on. Two processes sweeping at once record
// one misfire. GET /schedules/misfires lists them newest first, for viewers,
// the project's or one schedule's.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { sweepOfflineAgents } from '../../src/agents/service.ts';
import { AgentTransport } from '../../src/transport/runtime.ts';
import { isoMicros, ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { misfireSweep } from '../../src/schedules/jobs.ts';
import { activationSweep } from '../../src/schedules/inventory.ts';
import { testDialect } from '../helpers/app.ts';
import { countRows, liveService, mintTestAgent, until, type LiveService } from '../helpers/agents.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { externalSnapshotEvents, scheduleRow, type WsAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let admin: Browser;
let viewer: Browser & { id: string };
let outsider: Browser & { id: string };
let project: { id: string; slug: string };
let clock: ManualClock;
const base = '/api/v1/projects/default/schedules';
const open: WsAgent[] = [];

beforeAll(async () => {
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_SCHEDULER_MISFIRE_GRACE_SECONDS: '30' } });
  admin = await mfaAdmin(svc);
  const p = (await admin.call('GET', '/api/v1/projects/default')).body;
  project = { id: p.id, slug: p.slug };
  viewer = await userBrowser(admin, 'viewer@example.com');
  expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: viewer.id, role: 'viewer' } })).status).toBe(201);
  outsider = await userBrowser(admin, 'outsider@example.com');
  expect((await viewer.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project.id, trigger: 'schedule.misfired', in_app: true } })).status).toBe(201);
}, 60_000);
afterAll(async () => {
  for (const c of open.splice(0)) c.close();
  resetClock();
  await svc.close();
});

const misfires = async (who: Browser = viewer, query = '') => who.call('GET', `${base}/misfires${query}`);
const inbox = async () => (await viewer.call('GET', '/api/v1/user/notifications?limit=200')).body.items as any[];
const advance = (seconds: number) => {
  clock = new ManualClock(nowMicros() + seconds * 1_000_000);
  setClock(clock);
};

describe(`misfires on ${testDialect()}`, () => {
  test("svc's own schedule not fired past its grace: one misfire row, audit row and notification per outage; the list is newest first", async () => {
    const s = (await admin.call('POST', base, { body: { name: 'hourly-report', engine: 'celery', kind: 'interval', expression: '60', task_name: 'reports.hourly' } })).body;
    try {
      advance(60 + 10);
      expect(await misfireSweep(svc.ctx)).toBe(0); // late, but within the grace
      advance(25);
      expect(await misfireSweep(svc.ctx)).toBe(1);
      advance(120);
      expect(await misfireSweep(svc.ctx)).toBe(0); // the same outage is not reported again
    } finally {
      resetClock();
    }
    const list = (await misfires()).body;
    expect(list.project).toBe('default');
    expect(list.misfires).toHaveLength(1);
    const m = list.misfires[0];
    expect(m).toMatchObject({ schedule_id: s.id, name: 'hourly-report', engine: 'celery', kind: 'interval', scheduler: 'svc-scheduler', expected_at: s.next_run_at, grace_seconds: 30 });
    expect(m.lateness_seconds).toBeGreaterThanOrEqual(35);
    expect(m.lateness_seconds).toBeLessThan(36);
    const [audit] = await svc.ctx.db.all<{ target_id: string; project_id: string; metadata: any }>(sql`SELECT target_id, project_id, metadata FROM audit_log WHERE action = 'scheduler.misfire_detected'`);
    expect(audit).toMatchObject({ target_id: s.id, project_id: project.id });
    await svc.ctx.notifications.settled();
    await until(async () => (await inbox()).some((n) => n.trigger === 'schedule.misfired'), 5000, 'the misfire notification');
    const note = (await inbox()).find((n) => n.trigger === 'schedule.misfired');
    expect(note).toMatchObject({ title: 'Schedule misfired: hourly-report', data: { schedule_id: s.id } });
    expect((await admin.call('GET', `${base}/${s.id}`)).body.misfired_at).not.toBeNull();
  });

  test("an adapter's schedule: no misfire while an agent advertising the adapter is online; one once it is offline", async () => {
    const agent = await mintTestAgent(svc, project.id, svc.baseUrl, 'beat');
    const hello = { engines: [], schedulers: ['celery-beat'], capabilities: { 'celery-beat': ['external_schedule_stable_snapshot_v1', 'list', 'trigger_now'] }, runtime_features: ['external_schedule_protocol_v1'] };
    const c = await agent.connect({ hello: hello as never });
    open.push(c);
    await activationSweep(svc.ctx);
    let f = await c.nextSigned();
    while (f.type !== 'command') f = await c.nextSigned();
    const p = f.payload.parameters as any;
    const stream = { scheduler: 'celery-beat', ...p };
    const row = scheduleRow('celery-beat', { name: 'beat-every-10s', expression: '10', task_name: 'beat.tick' });
    for (const e of externalSnapshotEvents(stream, 1, [row])) {
      const id = c.send('event_batch', { events: [e] } as never);
      for (let a = await c.nextSigned(); !(a.type === 'event_batch_ack' && a.payload.acked_id === id); a = await c.nextSigned());
    }
    const s = (await admin.call('GET', `${base}?scheduler=celery-beat`)).body.items[0];
    expect(s.name).toBe('beat-every-10s');
    const before = (await misfires()).body.misfires.length;
    try {
      advance(300);
      expect(await misfireSweep(svc.ctx)).toBe(0);
      const moved = (await admin.call('GET', `${base}/${s.id}`)).body.next_run_at;
      expect(Date.parse(moved)).toBeGreaterThan(Date.parse(s.next_run_at));
      // The beat stops: its agent goes offline.
      c.close();
      advance(600);
      await sweepOfflineAgents(svc.ctx, isoMicros(), isoMicros(nowMicros() - 30_000_000));
      expect(await misfireSweep(svc.ctx)).toBe(1);
    } finally {
      resetClock();
    }
    const list = (await misfires()).body.misfires;
    expect(list.length).toBe(before + 1);
    expect(list[0]).toMatchObject({ schedule_id: s.id, name: 'beat-every-10s', engine: 'celery', kind: 'interval', scheduler: 'celery-beat' });
    // Newest first.
    expect(Date.parse(list[0].detected_at)).toBeGreaterThanOrEqual(Date.parse(list[list.length - 1].detected_at));
  });

  test('two processes sweeping at once record one misfire', async () => {
    await admin.call('POST', base, { body: { name: 'race', engine: 'celery', kind: 'interval', expression: '5', task_name: 'race.t' } });
    const n0 = await countRows(svc.ctx.db, 'schedule_misfires');
    try {
      advance(100);
      const other = { ...svc.ctx, agentTransport: new AgentTransport(svc.ctx.config) };
      const counts = await Promise.all([misfireSweep(svc.ctx), misfireSweep(other), misfireSweep(svc.ctx)]);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    } finally {
      resetClock();
    }
    expect(await countRows(svc.ctx.db, 'schedule_misfires')).toBe(n0 + 1);
  });

  test('GET /schedules/misfires: viewers of the project, limit, one schedule\'s, 404 outside it, 422 for a bad limit or schedule id', async () => {
    expect((await misfires(viewer, '?limit=1')).body.misfires).toHaveLength(1);
    const all = (await misfires()).body.misfires as any[];
    const ids = [...new Set(all.map((m) => m.schedule_id))];
    expect(ids.length).toBeGreaterThan(1);
    for (const id of ids) {
      const one = (await misfires(viewer, `?schedule_id=${id}`)).body.misfires;
      expect(one).toEqual(all.filter((m) => m.schedule_id === id));
    }
    expect((await misfires(viewer, `?schedule_id=${crypto.randomUUID()}`)).body.misfires).toEqual([]);
    expect((await misfires(viewer, '?schedule_id=nope')).status).toBe(422);
    expect((await misfires(outsider)).status).toBe(404);
    expect((await misfires(viewer, '?limit=0')).status).toBe(422);
    expect((await misfires(viewer, '?limit=1001')).status).toBe(422);
    expect((await svc.call('GET', `${base}/misfires`)).status).toBe(401);
  });
});
