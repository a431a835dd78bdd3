// Schedules on both databases, through the HTTP API of a listening service and
// real agent connections (the TypeScript test agent): CRUD with its audit rows
// and input errors, the audited denial of a write for lack of role, the
// external-schedule stream svc activates on a scheduler agent and the snapshots
// that reconcile the inventory, controls routed to an online agent advertising
// the schedule's adapter (refused when none is), trigger-now, import diff vs
// apply, fires buffered / replayed on connect / expired with their history,
// the notifications of fire outcomes and of the tasks fires submitted, the next
// runs and the project's time zone, the circuit breaker, and the
// Idempotency-Key of the routes that issue commands.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { expireBufferedFires } from '../../src/commands/service.ts';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { syncFires } from '../../src/schedules/fires.ts';
import { activationSweep } from '../../src/schedules/inventory.ts';
import { testDialect } from '../helpers/app.ts';
import { countRows, liveService, mintTestAgent, until, type LiveService } from '../helpers/agents.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { externalSnapshotEvents, scheduleRow, taskEvent, type ScheduleStream, type TestAgent, type WsAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let admin: Browser;
let viewer: Browser & { id: string };
let operator: Browser & { id: string };
let outsider: Browser & { id: string };
let project: { id: string; slug: string };
const open: WsAgent[] = [];

beforeAll(async () => {
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_SCHEDULE_CIRCUIT_BREAKER_THRESHOLD: '2', SVC_SCHEDULE_FIRE_BUFFER_SECONDS: '60' } });
  admin = await mfaAdmin(svc);
  const p = (await admin.call('GET', '/api/v1/projects/default')).body;
  project = { id: p.id, slug: p.slug };
  viewer = await userBrowser(admin, 'viewer@example.com');
  operator = await userBrowser(admin, 'operator@example.com');
  outsider = await userBrowser(admin, 'outsider@example.com');
  for (const [b, role] of [[viewer, 'viewer'], [operator, 'operator']] as const) {
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: b.id, role } })).status).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  for (const c of open.splice(0)) c.close();
  resetClock();
  await svc.close();
});

const base = '/api/v1/projects/default/schedules';
const auditCount = (action: string) => countRows(svc.ctx.db, 'audit_log', sql`action = ${action}`);
const newSchedule = async (fields: Record<string, unknown> = {}) => {
  const r = await admin.call('POST', base, { body: { name: `s-${crypto.randomUUID().slice(0, 8)}`, engine: 'celery', kind: 'interval', expression: '60', task_name: 'app.tasks.tick', ...fields } });
  expect(r.status).toBe(201);
  return r.body;
};
const connect = async (agent: TestAgent, hello: Record<string, unknown>) => {
  const c = await agent.connect({ hello: hello as never });
  open.push(c);
  return c;
};
/** The next command frame on a socket (skipping acks). */
const nextCommand = async (c: WsAgent, ms = 5000) => {
  for (;;) {
    const f = await c.nextSigned(ms);
    if (f.type === 'command') return f;
  }
};
const scheduler = (name: string) => ({
  engines: [],
  schedulers: [name],
  capabilities: { [name]: ['disable', 'enable', 'external_schedule_stable_snapshot_v1', 'list', 'trigger_now'] },
  runtime_features: ['retry_by_reference', 'external_schedule_protocol_v1'],
});

/** Connects a scheduler agent, answers svc's activation and reports `rows` in a snapshot. */
async function schedulerAgent(name: string, rows: Record<string, unknown>[]) {
  const agent = await mintTestAgent(svc, project.id, svc.baseUrl, `${name}-${crypto.randomUUID().slice(0, 4)}`);
  const c = await connect(agent, scheduler(name));
  await activationSweep(svc.ctx);
  const activate = await nextCommand(c);
  expect(activate.payload).toMatchObject({ action: 'schedule.external.activate', target: { type: 'scheduler', id: name } });
  const p = activate.payload.parameters as any;
  expect(p).toMatchObject({ scheduler: name, owner: name, stable_source: true, epoch_number: 1, source_scope: `{"kind":"scheduler-owner","owner":"${name}","version":1}` });
  const stream: ScheduleStream = { scheduler: name, stream_id: p.stream_id, epoch_uuid: p.epoch_uuid, epoch_number: p.epoch_number, adapter_instance_id: p.adapter_instance_id, source_scope: p.source_scope };
  c.send('command_ack', { delivery_claim_token: null }, activate.id!);
  await report(c, stream, 1, rows);
  c.send('command_result', { status: 'success', result: { scheduler: name, sequence: 1 }, error: null, delivery_claim_token: null }, activate.id!);
  return { agent, c, stream };
}
/** Sends one snapshot, each frame in its own batch, and waits for the acks. */
async function report(c: WsAgent, stream: ScheduleStream, sequence: number, rows: Record<string, unknown>[], perFrame = 2) {
  for (const e of externalSnapshotEvents(stream, sequence, rows as never, perFrame)) {
    const id = c.send('event_batch', { events: [e] } as never);
    for (;;) {
      const f = await c.nextSigned();
      if (f.type === 'event_batch_ack' && f.payload.acked_id === id) break;
    }
  }
}
const listed = async (sched?: string) => (await admin.call('GET', `${base}?limit=500${sched ? `&scheduler=${sched}` : ''}`)).body.items as any[];

describe(`schedules on ${testDialect()}`, () => {
  test('create, read, list, update, delete: each audited; bad input is a 422, a taken name 409, an unknown id 404', async () => {
    const s = await newSchedule({ name: 'nightly', kind: 'cron', expression: '0 3 * * *', timezone: 'Europe/Berlin', args: [1], kwargs: { a: 2 } });
    expect(s).toMatchObject({ name: 'nightly', scheduler: 'svc-scheduler', engine: 'celery', kind: 'cron', is_enabled: true, args: [1], kwargs: { a: 2 }, source: 'dashboard', paused_by: null });
    expect(s.next_run_at).not.toBeNull();
    expect((await admin.call('GET', `${base}/${s.id}`)).body).toEqual(s);
    expect((await listed()).map((x) => x.id)).toContain(s.id);
    expect((await admin.call('POST', base, { body: { name: 'nightly', engine: 'celery', kind: 'interval', expression: '5', task_name: 't' } })).body.error).toBe('conflict');
    for (const bad of [
      { kind: 'cron', expression: 'not cron' },
      { kind: 'interval', expression: '0' },
      { kind: 'clocked', expression: 'tomorrow' },
      { timezone: 'Mars/Olympus' },
      { surprise: true },
      { engine: 'Not An Engine' },
    ]) {
      const r = await admin.call('POST', base, { body: { name: `b-${crypto.randomUUID().slice(0, 6)}`, engine: 'celery', kind: 'interval', expression: '5', task_name: 't', ...bad } });
      expect({ bad, status: r.status, error: r.body.error }).toEqual({ bad, status: 422, error: 'validation_failed' });
    }
    const patched = await admin.call('PATCH', `${base}/${s.id}`, { body: { expression: '30 4 * * *', queue: 'reports' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ expression: '30 4 * * *', queue: 'reports' });
    expect((await admin.call('PATCH', `${base}/${s.id}`, { body: { expression: '61 * * * *' } })).status).toBe(422);
    expect((await admin.call('GET', `${base}/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await admin.call('GET', `${base}/not-a-uuid`)).status).toBe(422);
    expect((await admin.call('DELETE', `${base}/${s.id}`)).body).toEqual({ success: true });
    expect((await admin.call('DELETE', `${base}/${s.id}`)).status).toBe(404);
    expect(await auditCount('schedule.create')).toBeGreaterThanOrEqual(1);
    expect(await auditCount('schedule.update')).toBe(1);
    expect(await auditCount('schedule.delete')).toBe(1);
  });

  test('roles: viewers read, operators control, admins define; a write refused for lack of role is an audit row (rate-limited per caller)', async () => {
    const s = await newSchedule();
    expect((await viewer.call('GET', `${base}/${s.id}`)).status).toBe(200);
    expect((await viewer.call('GET', `${base}/${s.id}/fires`)).status).toBe(200);
    const before = await auditCount('schedules.access.denied');
    const refused = await viewer.call('POST', `${base}/${s.id}/disable`);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('insufficient_role');
    expect((await operator.call('PATCH', `${base}/${s.id}`, { body: { expression: '5' } })).status).toBe(403);
    expect((await viewer.call('POST', `${base}/${s.id}/trigger`)).status).toBe(403); // within the same window: no second row for viewer
    const rows = await svc.ctx.db.all<{ user_id: string; metadata: any; project_id: string }>(
      sql`SELECT user_id, metadata, project_id FROM audit_log WHERE action = 'schedules.access.denied' ORDER BY id`,
    );
    expect(rows.length - before).toBe(2);
    expect(rows.map((r) => r.user_id).sort()).toEqual(expect.arrayContaining([viewer.id, operator.id]));
    expect(rows.every((r) => r.project_id === project.id)).toBe(true);
    // Reads refused are not audited; anonymous writes are (once per address and window), and so are
    // writes of someone outside the project, answered 404 as if it did not exist.
    expect((await svc.call('POST', `${base}/${s.id}/disable`)).status).toBe(401);
    expect(await auditCount('schedules.access.unauth')).toBe(1);
    expect((await outsider.call('GET', `${base}/${s.id}`)).status).toBe(404);
    expect(await auditCount('schedules.access.not_found')).toBe(0);
    const hidden = await outsider.call('POST', `${base}/${s.id}/trigger`);
    expect([hidden.status, hidden.body.error]).toEqual([404, 'not_found']);
    const [notFound] = await svc.ctx.db.all<{ user_id: string; result: string; metadata: any }>(sql`SELECT user_id, result, metadata FROM audit_log WHERE action = 'schedules.access.not_found'`);
    expect(notFound).toMatchObject({ user_id: outsider.id, result: 'denied' });
    expect(typeof notFound!.metadata === 'string' ? JSON.parse(notFound!.metadata) : notFound!.metadata).toMatchObject({ method: 'POST', path: `${base}/${s.id}/trigger`, status: 404 });
    // The operator may control svc's own schedule (no agent needed).
    const off = await operator.call('POST', `${base}/${s.id}/disable`);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ schedule: { is_enabled: false, next_run_at: null }, command_id: null });
    expect((await operator.call('POST', `${base}/${s.id}/enable`)).body.schedule.is_enabled).toBe(true);
    expect(await auditCount('schedule.disable')).toBeGreaterThanOrEqual(1);
  });

  test('a scheduler agent: svc activates its stream, its snapshots reconcile the inventory; frames of an earlier epoch are ignored', async () => {
    const rows = [scheduleRow('rq-scheduler', { name: 'a' }), scheduleRow('rq-scheduler', { name: 'b', kind: 'cron', expression: '*/5 * * * *' }), scheduleRow('rq-scheduler', { name: 'c', is_enabled: false })];
    const { c, stream, agent } = await schedulerAgent('rq-scheduler', rows);
    const inv = await listed('rq-scheduler');
    expect(inv.map((s) => [s.name, s.kind, s.is_enabled, s.agent_id])).toEqual([
      ['a', 'interval', true, agent.agentId],
      ['b', 'cron', true, agent.agentId],
      ['c', 'interval', false, agent.agentId],
    ]);
    expect(inv[0].next_run_at).not.toBeNull();
    expect(inv[2].next_run_at).toBeNull();
    // A later snapshot without b removes it; an older sequence changes nothing.
    await report(c, stream, 3, [rows[0]!, { ...rows[2]!, is_enabled: true }]);
    await report(c, stream, 2, rows);
    expect((await listed('rq-scheduler')).map((s) => [s.name, s.is_enabled])).toEqual([
      ['a', true],
      ['c', true],
    ]);
    // Reconnecting: a new epoch; frames of the old one are ignored.
    c.close();
    const c2 = await connect(agent, scheduler('rq-scheduler'));
    await until(async () => (await activationSweep(svc.ctx)) === 1, 5000, 'second activation');
    const again = await nextCommand(c2);
    expect((again.payload.parameters as any).epoch_number).toBe(2);
    expect((again.payload.parameters as any).stream_id).toBe(stream.stream_id);
    await report(c2, stream, 9, []);
    expect((await listed('rq-scheduler')).length).toBe(2);
    await report(c2, { ...stream, epoch_number: 2, epoch_uuid: (again.payload.parameters as any).epoch_uuid }, 1, [rows[0]!]);
    expect((await listed('rq-scheduler')).map((s) => s.name)).toEqual(['a']);
  });

  test('API keys: schedules:read reads, schedules:write controls and defines (within the role of the key\'s owner)', async () => {
    const s = await newSchedule();
    const keyWith = async (scopes: string[]) => (await admin.call('POST', '/api/v1/api-keys', { body: { name: `k-${scopes.join('-')}`, scopes } })).body.token as string;
    const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
    const reader = await keyWith(['schedules:read']);
    expect((await svc.call('GET', `${base}/${s.id}`, as(reader))).status).toBe(200);
    const refused = await svc.call('POST', `${base}/${s.id}/disable`, as(reader));
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('insufficient_scope');
    const other = await keyWith(['tasks:read']);
    expect((await svc.call('GET', base, as(other))).body.error).toBe('insufficient_scope');
    const writer = await keyWith(['schedules:write']);
    expect((await svc.call('GET', base, as(writer))).status).toBe(200);
    expect((await svc.call('POST', `${base}/${s.id}/disable`, as(writer))).body.schedule.is_enabled).toBe(false);
    expect((await svc.call('PATCH', `${base}/${s.id}`, { ...as(writer), body: { expression: '120' } })).status).toBe(200);
  });

  test("enable / disable / trigger go to an online WebSocket agent advertising the schedule's adapter; none online is a 409", async () => {
    const { c, agent: beat } = await schedulerAgent('celery-beat', [scheduleRow('celery-beat', { name: 'beat-tick', external_id: 'static:abc', source_key: 'static:abc' })]);
    const s = (await listed('celery-beat')).find((x) => x.name === 'beat-tick');
    const off = await operator.call('POST', `${base}/${s.id}/disable`);
    expect(off.status).toBe(200);
    const cmd = await nextCommand(c);
    expect(cmd.id).toBe(off.body.command_id);
    expect(cmd.payload).toMatchObject({
      action: 'schedule.disable',
      target: { type: 'schedule', id: s.id, scheduler: 'celery-beat' },
      parameters: { schedule_id: 'static:abc', schedule_name: 'beat-tick', external_id: 'static:abc', scheduler: 'celery-beat' },
    });
    expect(off.body.schedule.is_enabled).toBe(false);
    const trig = await operator.call('POST', `${base}/${s.id}/trigger`);
    expect(trig.status).toBe(202);
    const tcmd = await nextCommand(c);
    expect(tcmd.payload).toMatchObject({ action: 'schedule.trigger_now', parameters: { schedule_id: 'static:abc', fire_id: trig.body.fire.fire_id } });
    c.send('command_ack', { delivery_claim_token: null }, tcmd.id!);
    c.send('command_result', { status: 'success', result: { schedule_id: 'static:abc', task_name: 't' }, error: null, delivery_claim_token: null }, tcmd.id!);
    await until(async () => (await admin.call('GET', `${base}/${s.id}/fires`)).body[0]?.status === 'succeeded', 5000, 'the trigger fire to succeed');
    const [fire] = (await admin.call('GET', `${base}/${s.id}/fires`)).body;
    expect(fire).toMatchObject({ action: 'schedule.trigger_now', status: 'succeeded', command_id: tcmd.id, error_code: null });
    expect(fire.latency_ms).toBeGreaterThanOrEqual(0);
    // The agent goes away: controls are refused (a long-poll agent reports no adapters, so it does not count).
    c.close();
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${beat.agentId}`));
    const lp = await mintTestAgent(svc, project.id, svc.baseUrl);
    lp.newSession();
    expect((await lp.probe()).status).toBe(200);
    await lp.upload([lp.heartbeat()]);
    const refused = await operator.call('POST', `${base}/${s.id}/enable`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('no_online_agent');
    expect((await operator.call('POST', `${base}/${s.id}/trigger`)).body.error).toBe('no_online_agent');
  });

  test("resync asks every online scheduler agent for a snapshot; 409 when none runs", async () => {
    const empty = await liveService({ env: FAST_IDENTITY_ENV });
    try {
      const a2 = await mfaAdmin(empty);
      expect((await a2.call('POST', `${base}/resync`)).body.error).toBe('no_online_agent');
    } finally {
      await empty.close();
    }
    const { c } = await schedulerAgent('apscheduler', []);
    const keyed = { headers: { 'idempotency-key': 'resync-1' } };
    const r = await admin.call('POST', `${base}/resync`, keyed);
    expect(r.status).toBe(202);
    expect(r.body.schedulers_observed).toContain('apscheduler');
    const cmd = await nextCommand(c);
    expect(cmd.payload).toMatchObject({ action: 'schedule.resync', target: { type: 'project', id: 'default' } });
    // The same key again: the first answer, nothing issued again.
    const resyncs = await countRows(svc.ctx.db, 'commands', sql`action = 'schedule.resync'`);
    const again = await admin.call('POST', `${base}/resync`, keyed);
    expect([again.status, again.body, again.headers.get('idempotent-replayed')]).toEqual([202, r.body, 'true']);
    expect(await countRows(svc.ctx.db, 'commands', sql`action = 'schedule.resync'`)).toBe(resyncs);
  });

  test('trigger, enable and disable take an Idempotency-Key: the same key again is the first answer (one fire, one command); on another request it is 409', async () => {
    // svc's own schedules on an engine no agent runs: each trigger is a buffered schedule.fire with its fire row.
    const s = await newSchedule({ engine: 'arq', task_name: 'jobs.once' });
    const other = await newSchedule({ engine: 'arq', task_name: 'jobs.once' });
    const fires = async (id: string) => (await admin.call('GET', `${base}/${id}/fires`)).body.length as number;
    const commandsOf = (id: string) => countRows(svc.ctx.db, 'commands', sql`target_id = ${id}`);
    const triggerAudits = (id: string) => countRows(svc.ctx.db, 'audit_log', sql`action = 'schedule.trigger_now' AND target_id = ${id}`);
    const key = (k: string) => ({ headers: { 'idempotency-key': k } });
    const t1 = await operator.call('POST', `${base}/${s.id}/trigger`, key('trigger-once'));
    const t2 = await operator.call('POST', `${base}/${s.id}/trigger`, key('trigger-once'));
    expect([t1.status, t2.status]).toEqual([202, 202]);
    expect(t1.body.fire).toMatchObject({ action: 'schedule.trigger_now', status: 'buffered' });
    expect(t2.body).toEqual(t1.body);
    expect([t1.headers.get('idempotent-replayed'), t2.headers.get('idempotent-replayed')]).toEqual([null, 'true']);
    expect([await fires(s.id), await commandsOf(s.id), await triggerAudits(s.id)]).toEqual([1, 1, 1]);
    // The key on another request (another schedule, another control): refused, nothing fired or changed.
    const elsewhere = await operator.call('POST', `${base}/${other.id}/trigger`, key('trigger-once'));
    expect([elsewhere.status, elsewhere.body.error]).toEqual([409, 'idempotency_key_reused']);
    expect([await fires(other.id), await commandsOf(other.id), await triggerAudits(other.id)]).toEqual([0, 0, 0]);
    const disableUnderIt = await operator.call('POST', `${base}/${s.id}/disable`, key('trigger-once'));
    expect([disableUnderIt.status, disableUnderIt.body.error]).toEqual([409, 'idempotency_key_reused']);
    expect((await admin.call('GET', `${base}/${s.id}`)).body.is_enabled).toBe(true);
    // Disable and enable under keys of their own: once each.
    const d1 = await operator.call('POST', `${base}/${s.id}/disable`, key('disable-once'));
    const d2 = await operator.call('POST', `${base}/${s.id}/disable`, key('disable-once'));
    expect([d1.status, d2.status, d2.body]).toEqual([200, 200, d1.body]);
    expect(await countRows(svc.ctx.db, 'audit_log', sql`action = 'schedule.disable' AND target_id = ${s.id}`)).toBe(1);
    // Keys are per caller; without one, every trigger fires; a malformed key is a validation failure.
    expect((await admin.call('POST', `${base}/${s.id}/trigger`, key('trigger-once'))).status).toBe(202);
    expect((await operator.call('POST', `${base}/${s.id}/trigger`)).status).toBe(202);
    expect(await fires(s.id)).toBe(3);
    const bad = await operator.call('POST', `${base}/${s.id}/trigger`, key('has space'));
    expect([bad.status, bad.body.error]).toEqual([422, 'validation_failed']);
    expect(await fires(s.id)).toBe(3);
  });

  test('import: the diff is a dry run; apply does what it said; replace_for_source deletes the missing ones of that source', async () => {
    const body = {
      mode: 'replace_for_source',
      source_filter: 'declarative:repo',
      schedules: [
        { name: 'imp-a', engine: 'celery', kind: 'interval', expression: '10', task_name: 'a', source: 'declarative:repo' },
        { name: 'imp-b', engine: 'celery', kind: 'cron', expression: '0 * * * *', task_name: 'b', source: 'declarative:repo' },
        { name: 'imp-bad', engine: 'celery', kind: 'cron', expression: 'nope', task_name: 'c', source: 'declarative:repo' },
      ],
    };
    const diff = await admin.call('POST', `${base}/diff`, { body });
    expect(diff.status).toBe(200);
    expect(diff.body.summary).toEqual({ inserted: 2, updated: 0, unchanged: 0, deleted: 0, failed: 1 });
    expect(Object.keys(diff.body.errors)).toEqual(['2']);
    expect((await listed()).some((s) => s.name === 'imp-a')).toBe(false);
    const applied = await admin.call('POST', `${base}/import`, { body });
    expect(applied.body).toMatchObject({ inserted: 2, updated: 0, unchanged: 0, deleted: 0, failed: 1 });
    const next = { ...body, schedules: [{ ...body.schedules[0]!, expression: '20' }] };
    const diff2 = (await admin.call('POST', `${base}/diff`, { body: next })).body;
    expect(diff2.summary).toEqual({ inserted: 0, updated: 1, unchanged: 0, deleted: 1, failed: 0 });
    expect(diff2.updated[0]).toMatchObject({ name: 'imp-a', proposed: { expression: '20' }, current: { expression: '10' } });
    expect(diff2.deleted[0].name).toBe('imp-b');
    expect((await admin.call('POST', `${base}/import`, { body: next })).body).toMatchObject({ updated: 1, deleted: 1 });
    expect((await listed()).filter((s) => s.source === 'declarative:repo').map((s) => [s.name, s.expression])).toEqual([['imp-a', '20']]);
    expect((await admin.call('POST', `${base}/import`, { body: { ...next, source_filter: 'dashboard' } })).status).toBe(422);
    expect(await auditCount('schedules.import')).toBe(2);
    expect((await operator.call('POST', `${base}/diff`, { body })).status).toBe(403);
  });

  test("svc's own schedule: trigger now is a schedule.fire buffered without an agent for its engine, replayed on connect, its outcome in the history; another expires as buffer_expired", async () => {
    const s = await newSchedule({ engine: 'dramatiq', task_name: 'jobs.report' });
    const t1 = await operator.call('POST', `${base}/${s.id}/trigger`);
    expect(t1.status).toBe(202);
    expect(t1.body.fire).toMatchObject({ action: 'schedule.trigger_now', status: 'buffered' });
    // The schedule's next run did not move.
    expect((await admin.call('GET', `${base}/${s.id}`)).body.next_run_at).toBe(s.next_run_at);
    const worker = await mintTestAgent(svc, project.id, svc.baseUrl);
    const c = await connect(worker, { engines: ['dramatiq'], capabilities: { dramatiq: ['submit_task'] } });
    const cmd = await nextCommand(c);
    expect(cmd.payload).toMatchObject({ action: 'schedule.fire', parameters: { schedule_id: s.id, task_name: 'jobs.report', engine: 'dramatiq', fire_id: t1.body.fire.fire_id } });
    c.send('command_ack', { delivery_claim_token: null }, cmd.id!);
    c.send('command_result', { status: 'success', result: { task_id: 'dq-1' }, error: null, delivery_claim_token: null }, cmd.id!);
    await until(async () => (await admin.call('GET', `${base}/${s.id}/fires`)).body[0].status === 'succeeded', 5000, 'fire succeeded');
    expect((await admin.call('GET', `${base}/${s.id}/fires`)).body[0]).toMatchObject({ status: 'succeeded', task_id: 'dq-1' });
    c.close();
    await until(() => svc.ctx.agentTransport.sockets.size === 0 || svc.ctx.agentTransport.sockets.of(worker.agentId).length === 0, 5000, 'socket gone');
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${worker.agentId}`));
    const t2 = (await operator.call('POST', `${base}/${s.id}/trigger`)).body;
    expect(t2.fire.status).toBe('buffered');
    setClock(new ManualClock(nowMicros() + 61_000_000));
    try {
      await expireBufferedFires(svc.ctx.db);
      await syncFires(svc.ctx);
    } finally {
      resetClock();
    }
    const fires = (await admin.call('GET', `${base}/${s.id}/fires`)).body;
    expect(fires.map((f: any) => f.status)).toEqual(['buffer_expired', 'succeeded']);
    expect(fires[0]).toMatchObject({ error_code: 'buffer_expired', fire_id: t2.fire.fire_id });
  });

  test('notifications: a fire that succeeded, failed or expired in the buffer, and a task a fire submitted that failed, reach a subscriber\'s inbox linking to the schedule', async () => {
    for (const trigger of ['schedule.fire.succeeded', 'schedule.fire.failed', 'schedule.task_failed']) {
      expect((await viewer.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project.id, trigger, in_app: true } })).status).toBe(201);
    }
    const s = await newSchedule({ engine: 'rq', task_name: 'jobs.nightly', name: 'nightly-rq' });
    const path = `/projects/default/schedules/${s.id}`;
    const inbox = async (trigger: string) => {
      await svc.ctx.notifications.settled();
      return ((await viewer.call('GET', '/api/v1/user/notifications?limit=200')).body.items as any[]).filter((n) => n.trigger === trigger && n.data.schedule_id === s.id);
    };
    const arrived = (trigger: string, n: number) => until(async () => (await inbox(trigger)).length >= n, 5000, `${n} ${trigger} inbox row(s)`);
    const worker = await mintTestAgent(svc, project.id, svc.baseUrl);
    const c = await connect(worker, { engines: ['rq'], capabilities: { rq: ['submit_task'] } });
    const fireOnce = async (result: { status: 'success' | 'failed'; result: unknown; error: string | null }) => {
      expect((await operator.call('POST', `${base}/${s.id}/trigger`)).status).toBe(202);
      const cmd = await nextCommand(c);
      c.send('command_result', { ...result, delivery_claim_token: null } as never, cmd.id!);
    };

    await fireOnce({ status: 'success', result: { job_id: 'rq-job-1' }, error: null });
    await arrived('schedule.fire.succeeded', 1);
    expect(await inbox('schedule.fire.succeeded')).toEqual([expect.objectContaining({ title: 'Schedule fired: nightly-rq', body: '', data: expect.objectContaining({ path, schedule_id: s.id }) })]);

    await fireOnce({ status: 'failed', result: null, error: 'broker down' });
    await arrived('schedule.fire.failed', 1);
    expect(await inbox('schedule.fire.failed')).toEqual([expect.objectContaining({ title: 'Schedule fire failed: nightly-rq', body: 'broker down', data: expect.objectContaining({ path }) })]);

    // The job the first fire submitted fails later: the task's failure names the schedule.
    const batch = c.send('event_batch', { events: [taskEvent({ kind: 'task.failed', engine: 'rq', task_id: 'rq-job-1', data: { task_name: 'jobs.nightly', exception: 'ZeroDivisionError: division by zero' } })] } as never);
    for (let f = await c.nextSigned(); !(f.type === 'event_batch_ack' && f.payload.acked_id === batch); f = await c.nextSigned());
    await arrived('schedule.task_failed', 1);
    expect(await inbox('schedule.task_failed')).toEqual([
      expect.objectContaining({ title: 'Scheduled task failed: nightly-rq', body: 'ZeroDivisionError: division by zero', data: expect.objectContaining({ path, schedule_id: s.id }) }),
    ]);

    // No agent runs rq any more: the next fire waits in the buffer and expires, a failed fire too.
    c.close();
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${worker.agentId}`));
    expect((await operator.call('POST', `${base}/${s.id}/trigger`)).body.fire.status).toBe('buffered');
    setClock(new ManualClock(nowMicros() + 61_000_000));
    try {
      await expireBufferedFires(svc.ctx.db);
      await syncFires(svc.ctx);
    } finally {
      resetClock();
    }
    await arrived('schedule.fire.failed', 2);
    expect((await inbox('schedule.fire.failed'))[0]).toMatchObject({ body: 'buffer_expired: no agent advertising the engine came online in time', data: { path } });
    // One row per outcome: nothing else was told twice.
    expect([(await inbox('schedule.fire.succeeded')).length, (await inbox('schedule.task_failed')).length]).toEqual([1, 1]);
  }, 30_000);

  test("next runs and the project's time zone: counts and ids bounded, the zone checked and its change audited, a refusal audited", async () => {
    const tz = `${base}/timezone`;
    expect((await viewer.call('GET', tz)).body).toEqual({ timezone: 'UTC' });
    const bad = await admin.call('PUT', tz, { body: { timezone: 'Mars/Olympus' } });
    expect([bad.status, bad.body.error, bad.body.details.fields[0].path]).toEqual([422, 'validation_failed', '/timezone']);
    const tzOperator = await userBrowser(admin, 'tz-operator@example.com');
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: tzOperator.id, role: 'operator' } })).status).toBe(201);
    expect((await tzOperator.call('PUT', tz, { body: { timezone: 'Europe/Berlin' } })).status).toBe(403);
    expect(await countRows(svc.ctx.db, 'audit_log', sql`action = 'schedules.access.denied' AND user_id = ${tzOperator.id}`)).toBe(1);
    expect((await admin.call('PUT', tz, { body: { timezone: 'Europe/Berlin' } })).body).toEqual({ timezone: 'Europe/Berlin' });
    expect((await admin.call('PUT', tz, { body: { timezone: 'Europe/Berlin' } })).status).toBe(200); // unchanged: no second row
    const changes = await svc.ctx.db.all<{ target_id: string; metadata: any }>(sql`SELECT target_id, metadata FROM audit_log WHERE action = 'project.updated' AND project_id = ${project.id}`);
    expect(changes.map((r) => [r.target_id, typeof r.metadata === 'string' ? JSON.parse(r.metadata) : r.metadata])).toEqual([[project.id, { changed: ['timezone'], timezone: 'Europe/Berlin', previous: 'UTC' }]]);
    expect((await viewer.call('GET', tz)).body).toEqual({ timezone: 'Europe/Berlin' });

    const nightly = await newSchedule({ kind: 'cron', expression: '0 3 * * *', timezone: 'America/New_York' });
    const other = await newSchedule();
    const one = await viewer.call('GET', `${base}/${nightly.id}/upcoming?count=3`);
    expect(one.status).toBe(200);
    expect(one.body.project_timezone).toBe('Europe/Berlin');
    expect(one.body.schedules.map((x: any) => [x.schedule_id, x.timezone, x.runs.length])).toEqual([[nightly.id, 'America/New_York', 3]]);
    const run = one.body.schedules[0].runs[0];
    expect(run.zones.map((z: any) => z.zone)).toEqual(['UTC', 'Europe/Berlin', 'America/New_York']);
    expect(run.zones[2].local).toMatch(/ 03:00:00$/);
    expect((await viewer.call('GET', `${base}/${nightly.id}/upcoming`)).body.schedules[0].runs).toHaveLength(5);
    for (const count of [0, 21]) expect((await viewer.call('GET', `${base}/${nightly.id}/upcoming?count=${count}`)).status).toBe(422);
    expect((await viewer.call('GET', `${base}/${crypto.randomUUID()}/upcoming`)).status).toBe(404);

    const some = await viewer.call('GET', `${base}/upcoming?ids=${nightly.id},${other.id}&count=20`);
    expect(some.body.schedules.map((x: any) => [x.schedule_id, x.runs.length]).sort()).toEqual([[nightly.id, 20], [other.id, 20]].sort());
    expect((await viewer.call('GET', `${base}/upcoming`)).body.schedules.length).toBeGreaterThan(2);
    // At most 100 ids, in the characters ids have.
    const ids = (n: number) => [nightly.id, ...Array.from({ length: n - 1 }, () => crypto.randomUUID())].join(',');
    expect((await viewer.call('GET', `${base}/upcoming?ids=${ids(100)}`)).body.schedules.map((x: any) => x.schedule_id)).toEqual([nightly.id]);
    const many = await viewer.call('GET', `${base}/upcoming?ids=${ids(101)}`);
    expect([many.status, many.body.error, many.body.details.fields[0].path]).toEqual([422, 'validation_failed', '/ids']);
    expect((await viewer.call('GET', `${base}/upcoming?ids=${encodeURIComponent('é'.repeat(50))}`)).status).toBe(422);
    expect((await viewer.call('GET', `${base}/upcoming?count=21`)).status).toBe(422);
  });

  test('circuit breaker: failed fires in a row pause the schedule, audited and notified; a success in between resets the streak', async () => {
    expect((await admin.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project.id, trigger: 'schedule.circuit_breaker.tripped', in_app: true } })).status).toBe(201);
    const s = await newSchedule({ engine: 'huey', task_name: 'jobs.flaky', name: 'flaky' });
    const worker = await mintTestAgent(svc, project.id, svc.baseUrl);
    const c = await connect(worker, { engines: ['huey'], capabilities: { huey: ['submit_task'] } });
    const fireOnce = async (status: 'success' | 'failed') => {
      const t = (await operator.call('POST', `${base}/${s.id}/trigger`)).body;
      const cmd = await nextCommand(c);
      c.send('command_result', { status, result: status === 'success' ? {} : null, error: status === 'failed' ? 'broker down' : null, delivery_claim_token: null }, cmd.id!);
      await until(async () => (await admin.call('GET', `${base}/${s.id}/fires`)).body.find((f: any) => f.id === t.fire.id)?.status !== 'pending', 5000, 'fire settled');
    };
    await fireOnce('failed');
    await fireOnce('success');
    await fireOnce('failed');
    expect((await admin.call('GET', `${base}/${s.id}`)).body).toMatchObject({ is_enabled: true, consecutive_failures: 1 });
    await fireOnce('failed');
    const paused = (await admin.call('GET', `${base}/${s.id}`)).body;
    expect(paused).toMatchObject({ is_enabled: false, paused_by: 'circuit_breaker', consecutive_failures: 2 });
    expect(await auditCount('schedule.circuit_breaker.tripped')).toBe(1);
    await svc.ctx.notifications.settled();
    await until(async () => (await admin.call('GET', '/api/v1/user/notifications?limit=50')).body.items.some((n: any) => n.trigger === 'schedule.circuit_breaker.tripped'), 5000, 'inbox row');
    const fires = (await admin.call('GET', `${base}/${s.id}/fires`)).body;
    expect(fires[0]).toMatchObject({ status: 'failed', error_code: 'agent_failed', error_message: 'broker down' });
    // Enabling again clears the pause and the streak.
    expect((await operator.call('POST', `${base}/${s.id}/enable`)).body.schedule).toMatchObject({ is_enabled: true, paused_by: null, consecutive_failures: 0 });
  });
});
