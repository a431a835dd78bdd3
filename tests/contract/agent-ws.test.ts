// The WebSocket gateway over a real socket on loopback (on SQLite and PostgreSQL), driven by the
// TypeScript test agent: handshake, acks, commands both ways, close codes for
// every bad input, replacement, caps, revocation, idle timeouts, schedule.fire
// buffering and cross-process delivery.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { agentHealth, findAgent, getAgent, revokeAgent } from '../../src/agents/service.ts';
import { expireBufferedFires, getCommand, type IssueCommandInput } from '../../src/commands/service.ts';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { deliverySweep, idleSweep, revocationSweep } from '../../src/transport/jobs.ts';
import { AgentTransport } from '../../src/transport/runtime.ts';
import { formatFrameTimestamp } from '../../src/transport/timestamp.ts';
import { VERSION, Z4J_AGENT_LINE } from '../../src/version.ts';
import { countRows, issueTestCommand, liveAgentFixture, TEST_ACTOR, until, type LiveService } from '../helpers/agents.ts';
import { metricValue } from '../helpers/metrics.ts';
import { taskEvent, type TestAgent, type WsAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let project: { id: string; slug: string };
let agent: TestAgent;
const open: WsAgent[] = [];

async function start(env: Record<string, string> = {}): Promise<void> {
  ({ svc, project, agent } = await liveAgentFixture(env));
}
beforeEach(() => start());
afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  resetClock();
  await svc.close();
});

const connect = async (opts: Parameters<TestAgent['connect']>[0] = {}, who = agent) => {
  const c = await who.connect(opts);
  open.push(c);
  return c;
};
const count = countRows;
const issue = (fields: Partial<IssueCommandInput> = {}, ctx = svc.ctx) => issueTestCommand(ctx, project.id, agent.agentId, fields);
/** A context standing for another worker process: same database, its own transport state. */
const elsewhere = () => ({ ...svc.ctx, agentTransport: new AgentTransport(svc.ctx.config) });

describe('handshake', () => {
  test('hello -> hello_ack with integer fields and the bound ids; the agent row records what was advertised', async () => {
    const c = await connect({ hello: { engines: ['celery', 'rq'], schedulers: ['celery-beat'], runtime_features: ['retry_by_reference'] } });
    const raw = c.helloAck;
    expect(raw).toMatchObject({ v: 2, type: 'hello_ack', payload: { protocol_version: '2', agent_id: agent.agentId, project_id: project.id } });
    expect(raw.id).toMatch(/^hack_[0-9a-f]{12}$/);
    // The z4j agent line svc is tested against, svc's own version as a local label: a current agent
    // (same major.minor) logs no upgrade warning (tests/interop shows both sides with real agents).
    expect(raw.payload.brain_version).toBe(`${Z4J_AGENT_LINE}.0+svc.${VERSION}`);
    expect(raw.payload.heartbeat_interval_seconds).toBe(10);
    expect(raw.payload.max_frame_size_bytes).toBe(1048576);
    expect(raw.payload.session_id).toMatch(/^[0-9a-f-]{36}$/);
    const pub = await getAgent(svc.ctx.db, project.id, agent.agentId);
    expect(pub).toMatchObject({
      state: 'online',
      protocol_version: '2',
      framework_adapter: 'bare',
      engine_adapters: ['celery', 'rq'],
      scheduler_adapters: ['celery-beat'],
      capabilities: { celery: ['bulk_retry', 'cancel_task', 'retry_by_reference_v1', 'retry_task'] },
      is_outdated: false,
    });
    expect(pub.last_connect_at).not.toBeNull();
    const row = (await findAgent(svc.ctx.db, agent.agentId))!;
    expect(row.runtime_features).toEqual(['retry_by_reference']);
    expect(row.metadata).toMatchObject({ host_name: 'test-host', agent_version: '1.13.0' });
    expect(await count(svc.ctx.db, 'agent_workers', sql`agent_id = ${agent.agentId} AND state = 'online'`)).toBe(1);
  });

  test('a first frame that is not a hello, not JSON, or too big closes 4400; another protocol version closes 4426 and marks the agent outdated', async () => {
    for (const text of ['not json', JSON.stringify({ v: 2, type: 'heartbeat', payload: {} }), JSON.stringify({ v: 2, type: 'hello', payload: {} })]) {
      const c = await connect({ hello: false });
      c.sendText(text);
      expect((await c.closed).code).toBe(4400);
    }
    const big = await connect({ hello: false });
    big.sendText('x'.repeat(1024 * 1024 + 1));
    expect((await big.closed).code).toBe(4400);
    const old = await connect({ hello: false });
    await old.hello({ protocol_version: '1' });
    expect((await old.closed).code).toBe(4426);
    expect((await getAgent(svc.ctx.db, project.id, agent.agentId)).is_outdated).toBe(true);
  });

  test('no hello within 10 seconds: closed 4408', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const c = await connect({ hello: false });
    await until(() => svc.ctx.agentTransport.sockets.handshaking.size === 1, 5000, 'the socket to open');
    clock.advance(10_500);
    idleSweep(svc.ctx);
    expect((await c.closed).code).toBe(4408);
  });
});

describe('frames', () => {
  test('every stored event_batch gets a signed event_batch_ack; a re-sent batch is acked with nothing new; one seq for acks and commands', async () => {
    const c = await connect();
    const events = [taskEvent({ kind: 'task.received' }), taskEvent({ kind: 'task.failed', data: { task_name: 't', exception: 'ValueError' } })];
    const id = c.send('event_batch', { events });
    const ack = await c.nextSigned();
    expect(ack).toMatchObject({ type: 'event_batch_ack', id: `eba_${id}`, seq: 1n, payload: { acked_id: id, received: 2, accepted: 2, rejected: 0 } });
    c.send('event_batch', { events }, id);
    expect((await c.nextSigned()).payload).toEqual({ acked_id: id, received: 2, accepted: 0, rejected: 2 });
    const cmd = await issue();
    const frame = await c.nextSigned();
    expect(frame).toMatchObject({ type: 'command', id: cmd.id, seq: 3n });
    expect(await count(svc.ctx.db, 'events')).toBe(2);
    expect(await count(svc.ctx.db, 'tasks', sql`state = 'failure'`)).toBe(1);
  });

  test('heartbeats carry liveness, queue depths and worker details; agent_status becomes health samples (12 a minute)', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${agent.agentId}`));
    const c = await connect({ hello: { worker_id: 'bare-77-1' } });
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${agent.agentId}`));
    clock.advance(2000);
    const details = { 'w1@host': { stats: { pid: 77, pool: { 'max-concurrency': 4 } }, active: [{}, {}], active_queues: [{ name: 'default' }], registered: [] } };
    c.send('heartbeat', {
      buffer_size: 0,
      last_flush_at: null,
      dropped_events: 0,
      adapter_health: { 'celery.queue_depths': JSON.stringify({ default: 3, mail: 0 }), 'celery.worker_details': JSON.stringify(details) },
    });
    for (let i = 0; i < 14; i++) c.send('agent_status', { agent_version: '1.13.0', buffer_depth: i, telemetry_loss: null });
    const probe = c.send('event_batch', { events: [] });
    expect((await c.nextSigned()).payload.acked_id).toBe(probe);
    expect((await findAgent(svc.ctx.db, agent.agentId))!.state).toBe('online');
    expect(await count(svc.ctx.db, 'queues', sql`name = 'default' AND pending_count = 3`)).toBe(1);
    const [worker] = await svc.ctx.db.all<{ pid: number; concurrency: number; active_tasks: number }>(sql`SELECT pid, concurrency, active_tasks FROM workers WHERE name = 'w1@host'`);
    expect(worker).toEqual({ pid: 77, concurrency: 4, active_tasks: 2 });
    const samples = await agentHealth(svc.ctx.db, project.id, agent.agentId);
    expect(samples).toHaveLength(12);
    expect(samples[0]).toMatchObject({ worker_id: 'bare-77-1', telemetry_loss: null });
  });

  const bound = (c: WsAgent, a: TestAgent, projectId = a.projectId) => ({ binding: { agentId: a.agentId, projectId, sessionId: c.sessionId } });
  const closers: [string, number, RegExp, (c: WsAgent, a: TestAgent) => string][] = [
    ['wrong HMAC', 4403, /hmac signature mismatch/, (c, a) => a.craft({ seq: 2 }, { ...bound(c, a), hmac: '00'.repeat(32) })],
    ['replayed nonce', 4403, /nonce replayed/, (c, a) => a.craft({ seq: 2, nonce: 'NONCE-FROM-FIRST-FRAME' }, bound(c, a))],
    ['stale ts', 4403, /skew window/, (c, a) => a.craft({ seq: 2, ts: formatFrameTimestamp(nowMicros() - 120_000_000) }, bound(c, a))],
    ['seq going back', 4403, /seq not greater/, (c, a) => a.craft({ seq: 1 }, bound(c, a))],
    ['frame bound to another project', 4403, /hmac signature mismatch/, (c, a) => a.craft({ seq: 2 }, bound(c, a, crypto.randomUUID()))],
    ['oversize frame', 4400, /too large/, () => 'x'.repeat(1024 * 1024 + 10)],
    ['non-JSON frame', 4400, /not valid JSON/, () => '{"v":2,'],
    ['unknown frame type', 4400, /unknown frame type/, (c, a) => a.craft({ seq: 2, type: 'telepathy' }, bound(c, a))],
  ];
  for (const [name, code, reason, make] of closers) {
    test(`${name}: closed ${code}; batches acknowledged before it stay stored`, async () => {
      const c = await connect();
      const events = [taskEvent({ task_id: `kept-${name}` })];
      c.sendText(agent.craft({ seq: 1, nonce: 'NONCE-FROM-FIRST-FRAME', type: 'event_batch', id: 'ev_first', payload: { events } }, bound(c, agent)));
      expect((await c.nextSigned()).payload.accepted).toBe(1);
      c.sendText(make(c, agent));
      const closed = await c.closed;
      expect(closed.code).toBe(code);
      expect(closed.reason).toMatch(reason);
      expect(await count(svc.ctx.db, 'events', sql`task_id = ${`kept-${name}`}`)).toBe(1);
    });
  }

  test('a fatal scheduler_upgrade_required error frame answers a batch that needs it; no ack', async () => {
    svc.ctx.agentTransport.needsSchedulerUpgrade = () => true;
    const c = await connect();
    const id = c.send('event_batch', { events: [taskEvent()] });
    const err = await c.nextSigned();
    expect(err).toMatchObject({ type: 'error', id: `err_${id}`, payload: { code: 'scheduler_upgrade_required', fatal: true } });
  });
});

describe('commands over the socket', () => {
  test('pending commands are pushed on connect and live; ack and result are recorded', async () => {
    const before = await issue({ action: 'restart_worker', targetType: 'worker', targetId: 'w1', payload: { worker_name: 'w1' } });
    const c = await connect();
    const pushed = await c.nextSigned();
    expect(pushed).toMatchObject({ type: 'command', id: before.id, seq: 1n, payload: { action: 'restart_worker', parameters: { worker_name: 'w1' } } });
    const live = await issue();
    expect((await c.nextSigned()).id).toBe(live.id);
    c.send('command_ack', {}, live.id);
    c.send('command_result', { status: 'success', result: { cancelled: true }, error: null }, live.id);
    c.send('command_result', { status: 'failed', result: null, error: 'boom' }, before.id);
    c.send('event_batch', { events: [] });
    await c.nextSigned();
    expect(await getCommand(svc.ctx.db, project.id, live.id)).toMatchObject({ status: 'completed', result: { cancelled: true } });
    expect(await getCommand(svc.ctx.db, project.id, before.id)).toMatchObject({ status: 'failed', error: 'boom' });
  });

  test('retry_task only reaches a connection whose capabilities attest the retry contract for its engine', async () => {
    const noContract = await connect({ hello: { capabilities: { celery: ['retry_task'] }, worker_id: 'a' } });
    const retry = await issue({ action: 'retry_task', payload: { engine: 'celery', task_id: 't1' } });
    await expect(noContract.next(300)).rejects.toThrow('no message');
    expect((await getCommand(svc.ctx.db, project.id, retry.id)).status).toBe('pending');
    const withContract = await connect({ hello: { worker_id: 'b' } });
    expect((await withContract.nextSigned()).id).toBe(retry.id);
  });

  test('a retry_task carrying both argument halves needs no retry contract: it replays nothing by reference', async () => {
    const noContract = await connect({ hello: { capabilities: { taskiq: ['submit_task'] }, worker_id: 'a' } });
    const halfGiven = await issue({ action: 'retry_task', payload: { engine: 'taskiq', task_id: 't0', task_name: 'tasks:f', override_args: [1], override_kwargs: null } });
    const given = await issue({ action: 'retry_task', payload: { engine: 'taskiq', task_id: 't1', task_name: 'tasks:f', override_args: [1], override_kwargs: {} } });
    expect((await noContract.nextSigned()).id).toBe(given.id);
    expect((await getCommand(svc.ctx.db, project.id, halfGiven.id)).status).toBe('pending');
  });

  test('many large commands all arrive, in seq order, through backpressure', async () => {
    const big = 'x'.repeat(256 * 1024);
    const ids = [];
    for (let i = 0; i < 40; i++) ids.push((await issue({ action: 'restart_worker', payload: { worker_name: `w${i}`, blob: big } })).id);
    const c = await connect();
    const got: string[] = [];
    for (let i = 0; i < 40; i++) got.push((await c.nextSigned(10_000)).id!);
    expect(got).toEqual(ids);
  });

  test('a command issued in another process reaches this socket through the delivery sweep', async () => {
    const c = await connect();
    // The push of pending commands that follows a connect has run (nothing was pending): a command
    // committed before it would have come that way instead (a clean-clone run saw that race).
    await expect(c.next(300)).rejects.toThrow('no message');
    const cmd = await issue({}, elsewhere());
    await expect(c.next(200)).rejects.toThrow('no message');
    await deliverySweep(svc.ctx);
    expect((await c.nextSigned()).id).toBe(cmd.id);
  });

  test('schedule.fire is buffered without an online WebSocket agent for its engine, replayed on connect, and expires otherwise', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const fire = (engine: string) =>
      issue({ agentId: null, action: 'schedule.fire', targetType: 'schedule', targetId: crypto.randomUUID(), payload: { engine, schedule_name: 'nightly', fire_id: crypto.randomUUID() } });
    // A long-poll agent online in the project does not take it.
    await agent.upload([agent.heartbeat()]);
    const celery = await fire('celery');
    const rq = await fire('rq');
    expect([celery.status, rq.status]).toEqual(['buffered', 'buffered']);
    const c = await connect({ hello: { engines: ['celery'] } });
    const replayed = await c.nextSigned();
    expect(replayed).toMatchObject({ type: 'command', id: celery.id, payload: { action: 'schedule.fire' } });
    expect((await getCommand(svc.ctx.db, project.id, celery.id)).status).toBe('dispatched');
    // With the agent online, a new fire is routed to it at once.
    const next = await fire('celery');
    expect(next.status).toBe('pending');
    expect((await c.nextSigned()).id).toBe(next.id);
    clock.advance(3600_000 + 1000);
    expect(await expireBufferedFires(svc.ctx.db)).toEqual([rq.id]);
    expect((await getCommand(svc.ctx.db, project.id, rq.id)).status).toBe('buffer_expired');
  });

  test('a fire buffered before an agent connected elsewhere is routed by the sweep', async () => {
    const c = await connect({ hello: { engines: ['celery'] } });
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${agent.agentId}`));
    const cmd = await issue({ agentId: null, action: 'schedule.fire', targetType: 'schedule', payload: { engine: 'celery' } });
    expect(cmd.status).toBe('buffered');
    await deliverySweep(svc.ctx);
    expect((await c.nextSigned()).id).toBe(cmd.id);
  });
});

describe('connections', () => {
  test('a second connection of the same (agent, worker) replaces the first with 4002; other workers coexist', async () => {
    const a = await connect({ hello: { worker_id: 'bare-1-1' } });
    const b = await connect({ hello: { worker_id: 'bare-2-1' } });
    const a2 = await connect({ hello: { worker_id: 'bare-1-1' } });
    expect((await a.closed).code).toBe(4002);
    expect(b.closeInfo).toBeNull();
    expect(a2.closeInfo).toBeNull();
    expect(svc.ctx.agentTransport.sockets.size).toBe(2);
  });

  test('SVC_WS_PER_AGENT_CONCURRENCY_CAP: a worker beyond the cap is closed 4429', async () => {
    await svc.close();
    await start({ SVC_WS_PER_AGENT_CONCURRENCY_CAP: '1' });
    await connect({ hello: { worker_id: 'one' } });
    const two = await connect({ hello: { worker_id: 'two' } });
    expect((await two.closed).code).toBe(4429);
  });

  test('revocation commits, then kicks the socket (4003); the old token is refused afterwards (4401)', async () => {
    const c = await connect();
    await revokeAgent(svc.ctx, project.id, agent.agentId, TEST_ACTOR);
    expect((await c.closed).code).toBe(4003);
    const again = await connect({ hello: false });
    expect((await again.closed).code).toBe(4401);
  });

  test('a revoke in another process is noticed by the revocation sweep; frames after it are refused', async () => {
    const c = await connect();
    await revokeAgent(elsewhere(), project.id, agent.agentId, TEST_ACTOR);
    expect(c.closeInfo).toBeNull();
    await revocationSweep(svc.ctx);
    expect((await c.closed).code).toBe(4003);
  });

  test('idle past SVC_WS_IDLE_TIMEOUT_SECONDS: closed 4408', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const c = await connect();
    clock.advance(89_000);
    idleSweep(svc.ctx);
    expect(c.closeInfo).toBeNull();
    clock.advance(2_000);
    idleSweep(svc.ctx);
    expect((await c.closed).code).toBe(4408);
  });

  test('shutting down closes every agent socket with 1001', async () => {
    const c = await connect();
    const waiting = await connect({ hello: false });
    await svc.ctx.agentTransport.closeAllSockets();
    expect((await c.closed).code).toBe(1001);
    expect((await waiting.closed).code).toBe(1001);
  });

  test('svc_agents_online and svc_ws_connections on /metrics', async () => {
    await svc.startJobs();
    await connect();
    const text = await svc.ctx.metrics.text();
    expect(metricValue(text, 'svc_agents_online')).toBe(1);
    expect(metricValue(text, 'svc_project_agents_online', { project: project.slug })).toBe(1);
    expect(metricValue(text, 'svc_ws_connections')).toBe(1);
  });
});
