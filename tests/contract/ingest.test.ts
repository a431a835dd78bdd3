// Durable events and their projections on both databases: content-derived
// ids (re-sent batches and duplicate reports absorbed), the task state rules,
// workers and queues, and the metrics the router keeps.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { readEvents, storeEvents, taskEvents } from '../../src/ingest/service.ts';
import { EVENT_ID_NAMESPACE, uuidV5 } from '../../src/ingest/event-ids.ts';
import { nowIso, nowMicros } from '../../src/lib/clock.ts';
import { findTask, listQueues, listWorkers, projectAdapterHealth } from '../../src/tasks/service.ts';
import { toPlainObject } from '../../src/transport/json-convert.ts';
import { parseJson, type JsonObject } from '../../src/transport/json.ts';
import { newFrameContext, routeFrames } from '../../src/transport/router.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { FrameVerifier } from '../../src/transport/verifier.ts';
import { testDialect, type TestService } from '../helpers/app.ts';
import { agentFixture, insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { metricValue } from '../helpers/metrics.ts';

let svc: TestService;
let project: { id: string };
let agentId: string;
beforeEach(async () => {
  ({ svc, project, agentId } = await agentFixture('ingest'));
});
afterEach(() => svc.close());

const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace('Z', '+00:00');
const ev = (kind: string, taskId: string, offsetMs: number, data: Record<string, unknown> = {}) => ({
  id: crypto.randomUUID(),
  kind,
  engine: 'celery',
  task_id: taskId,
  occurred_at: iso(offsetMs),
  data: { task_name: 'app.add', queue: 'default', worker: 'w1', ...data },
});
/** Reads and stores one batch the way the router does (payload parsed from wire JSON). */
async function ingest(events: unknown[], frameId: string | null = `ev_${crypto.randomUUID().slice(0, 12)}`, agent = agentId, projectId = project.id) {
  // "__BIG__" stands for an integer beyond 2^53, which JSON.stringify cannot write.
  const text = JSON.stringify({ events }).replaceAll('"__BIG__"', '123456789012345678901234567890');
  const payload = toPlainObject(parseJson(text) as JsonObject);
  const read = readEvents(payload, { projectId, agentId: agent, frameId, nowMicros: nowMicros() });
  const stored = await svc.ctx.db.tx((tx) => storeEvents(tx, { projectId, agentId: agent, frameId }, read.records, nowIso()));
  return { ...read, ...stored };
}

describe(`ingest on ${testDialect()}`, () => {
  test('re-sent batches and the same lifecycle event from another agent are stored once', async () => {
    const batch = [ev('task.started', 'job-1', -2000), ev('task.succeeded', 'job-1', -1000, { result: { n: 1 }, runtime_ms: 5 })];
    expect((await ingest(batch, 'ev_aaaaaaaaaaaa')).stored).toBe(2);
    expect((await ingest(batch, 'ev_aaaaaaaaaaaa')).stored).toBe(0);
    const other = (await mintAgent(svc.ctx, project.id, 'second', TEST_ACTOR)).agent.id;
    const sameEvent = [{ ...batch[0], id: crypto.randomUUID() }];
    expect((await ingest(sameEvent, 'ev_bbbbbbbbbbbb', other)).stored).toBe(0);
    expect(await taskEvents(svc.ctx.db, project.id, 'celery', 'job-1')).toHaveLength(2);
  });

  test('event ids: task events by (project, task, kind, second); others by the agent id, or by frame and position when unusable', async () => {
    const at = Date.UTC(2026, 4, 1, 12, 0, 0);
    const text = new Date(at).toISOString().replace('Z', '+00:00');
    const nonTask = { id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE', kind: 'worker.online', engine: 'celery', task_id: '', occurred_at: text, data: {} };
    const payload = toPlainObject(parseJson(JSON.stringify({ events: [ev('task.started', 'abc', 0), nonTask, { ...nonTask, id: 'not-a-uuid' }, { ...nonTask, id: null }] })) as JsonObject);
    (payload.events as Record<string, unknown>[])[0]!.occurred_at = text;
    const read = readEvents(payload, { projectId: project.id, agentId, frameId: 'ev_1', nowMicros: at * 1000 });
    expect(read.records.map((r) => r.id)).toEqual([
      uuidV5(EVENT_ID_NAMESPACE, `${project.id}:abc:task.started:${at / 1000}`),
      uuidV5(EVENT_ID_NAMESPACE, `${project.id}:aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee`),
      uuidV5(EVENT_ID_NAMESPACE, `${project.id}:${agentId}:ev_1:2`),
      uuidV5(EVENT_ID_NAMESPACE, `${project.id}:${agentId}:ev_1:3`),
    ]);
  });

  test('records without engine or kind are dropped; unknown kinds stored as unknown; occurred_at clamped; large ints and NUL survive storage', async () => {
    const r = await ingest([
      { ...ev('task.started', 'x', 0), engine: '' },
      { ...ev('task.started', 'y', 0), kind: '' },
      'not an object',
      { ...ev('telepathy.happened', 'z', 0) },
      { ...ev('task.received', 'far', 0), occurred_at: '1999-01-01T00:00:00' },
      ev('task.received', 'big', 0, { kwargs: { n: '__BIG__' }, note: 'a\u0000b' }),
    ]);
    expect(r.dropped).toBe(3);
    expect(r.stored).toBe(3);
    const kinds = await svc.ctx.db.all<{ kind: string; occurred_at: string }>(sql`SELECT kind, occurred_at FROM events WHERE task_id IN ('z', 'far') ORDER BY task_id`);
    expect(kinds[0]!.kind).toBe('task.received');
    expect(kinds[0]!.occurred_at > new Date(Date.now() - 401 * 86_400_000).toISOString()).toBe(true);
    expect(kinds[1]!.kind).toBe('unknown');
    const big = await taskEvents(svc.ctx.db, project.id, 'celery', 'big');
    expect(big[0]!.payload).toMatchObject({ note: 'a\ufffdb', kwargs: { n: '123456789012345678901234567890' } });
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'big'))!.kwargs).toEqual({ n: '123456789012345678901234567890' });
  });

  test("a task's events: by task id alone in the index, this project's and engine's only, oldest first", async () => {
    await ingest([ev('task.succeeded', 'shared-id', -1000), ev('task.started', 'shared-id', -3000), { ...ev('task.started', 'shared-id', -2000), engine: 'rq' }]);
    const other = await insertProject(svc.ctx.db, 'other');
    const otherAgent = (await mintAgent(svc.ctx, other.id, 'elsewhere', TEST_ACTOR)).agent.id;
    await ingest([ev('task.received', 'shared-id', -4000)], null, otherAgent, other.id);
    const found = await taskEvents(svc.ctx.db, project.id, 'celery', 'shared-id');
    expect(found.map((e) => e.kind)).toEqual(['task.started', 'task.succeeded']);
    expect((await taskEvents(svc.ctx.db, other.id, 'celery', 'shared-id')).map((e) => e.kind)).toEqual(['task.received']);
    if (testDialect() === 'sqlite') {
      const plan = await svc.ctx.db.all<{ detail: string }>(
        sql`EXPLAIN QUERY PLAN SELECT * FROM events WHERE project_id = ${project.id} AND engine = 'celery' AND task_id = 'shared-id' ORDER BY occurred_at, id`,
      );
      expect(plan.map((p) => p.detail).join('; ')).toContain('USING INDEX events_task (task_id=?)');
    } else {
      const [ix] = await svc.ctx.db.all<{ indexdef: string }>(sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'events_task'`);
      expect(ix!.indexdef).toContain('(task_id)');
    }
  });

  test('task projection: terminal states win over later non-terminal ones; newer wins within a tier; retries counted; fields merged', async () => {
    await ingest([ev('task.received', 't1', -5000, { args: [1, 2], kwargs: { a: 1 } }), ev('task.started', 't1', -4000)]);
    await ingest([ev('task.succeeded', 't1', -3000, { result: 3, runtime_ms: 40 })]);
    await ingest([ev('task.started', 't1', -1000)]); // late duplicate start: success stays
    let t = (await findTask(svc.ctx.db, project.id, 'celery', 't1'))!;
    expect(t).toMatchObject({ state: 'success', name: 'app.add', queue: 'default', args: [1, 2], kwargs: { a: 1 }, result: 3, runtime_ms: 40, worker_name: 'w1' });
    expect(t.received_at).not.toBeNull();
    expect(t.finished_at).not.toBeNull();

    await ingest([ev('task.started', 't2', -6000), ev('task.retried', 't2', -5000, { reason: 'x' })]);
    await ingest([ev('task.started', 't2', -4000)]);
    await ingest([ev('task.retried', 't2', -3000)]);
    await ingest([ev('task.failed', 't2', -2000, { exception: 'ValueError', traceback: 'Traceback...' })]);
    await ingest([ev('task.revoked', 't2', -9000)]); // older terminal: failure (newer) stays
    t = (await findTask(svc.ctx.db, project.id, 'celery', 't2'))!;
    expect(t).toMatchObject({ state: 'failure', retry_count: 2, exception: 'ValueError', traceback: 'Traceback...' });

    // Out of order within one batch.
    await ingest([ev('task.succeeded', 't3', -1000), ev('task.received', 't3', -3000), ev('task.started', 't3', -2000)]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 't3'))!.state).toBe('success');
  });

  test("an agent's placeholder name (<unknown...>) never replaces a known one, in one batch or across batches", async () => {
    await ingest([ev('task.started', 'p1', -3000), ev('task.failed', 'p1', -2000, { task_name: '<unknown:default:p1>' })]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'p1'))!).toMatchObject({ state: 'failure', name: 'app.add' });
    await ingest([ev('task.started', 'p2', -3000)]);
    await ingest([ev('task.failed', 'p2', -2000, { task_name: '<unknown:p2>' })]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'p2'))!).toMatchObject({ state: 'failure', name: 'app.add' });
    // Known nowhere else: the placeholder names the task, and a real name replaces it later.
    await ingest([ev('task.failed', 'p3', -2000, { task_name: '<unknown:p3>' })]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'p3'))!.name).toBe('<unknown:p3>');
    await ingest([ev('task.retried', 'p3', -1000, { task_name: 'app.real' })]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'p3'))!.name).toBe('app.real');
  });

  test('workers and queues from events and from heartbeat adapter_health', async () => {
    await ingest([ev('worker.online', '', 0, { hostname: 'w9@box', pid: 99 }), ev('task.received', 'q1', 0, { queue: 'mail' })]);
    await svc.ctx.db.tx((tx) =>
      projectAdapterHealth(
        tx,
        project.id,
        {
          'celery.queue_depths': JSON.stringify({ default: 12, mail: 1 }),
          'celery.worker_details': JSON.stringify({ 'w9@box': { stats: { pid: 99, pool: { 'max-concurrency': 8 } }, active: [{}], active_queues: [{ name: 'mail' }] } }),
          'celery.broken': '{nope',
          nodot: 'x',
        },
        nowIso(),
      ),
    );
    const workers = await listWorkers(svc.ctx.db, project.id);
    expect(workers).toHaveLength(1);
    expect(workers[0]).toMatchObject({ engine: 'celery', name: 'w9@box', state: 'online', pid: 99, concurrency: 8, queues: ['mail'], active_tasks: 1 });
    const queues = (await listQueues(svc.ctx.db, project.id)).map((q) => [q.name, q.pending_count]);
    expect(queues).toEqual([
      ['default', 12],
      ['mail', 1],
    ]);
    await ingest([ev('worker.offline', '', 1000, { hostname: 'w9@box' })]);
    expect((await listWorkers(svc.ctx.db, project.id))[0]).toMatchObject({ state: 'offline', concurrency: 8 });
  });

  test('the router stores a signed batch, acknowledges counts, and counts svc_tasks_total{state}', async () => {
    const binding = { agentId, projectId: project.id, sessionId: 's' };
    const key = svc.ctx.agentTransport.signingKey(project.id);
    const signer = new FrameSigner(key, binding);
    const verifier = new FrameVerifier(key, binding);
    const frames = [ev('task.started', 'r1', -1000), ev('task.succeeded', 'r1', 0)].map((e, i) => verifier.verify(signer.sign('event_batch', `ev_${i}`, { events: [e] })));
    const fc = newFrameContext({ agentId, projectId: project.id, transport: 'longpoll', workerId: 'x' });
    const outcomes = await routeFrames(svc.ctx, fc, frames as never);
    expect(outcomes).toEqual([
      { kind: 'durable', ack: { received: 1, accepted: 1, rejected: 0 } },
      { kind: 'durable', ack: { received: 1, accepted: 1, rejected: 0 } },
    ]);
    const text = await svc.ctx.metrics.text();
    expect(metricValue(text, 'svc_tasks_total', { state: 'success' })).toBe(1);
    expect(metricValue(text, 'svc_tasks_total', { state: 'started' })).toBe(1);
    expect(metricValue(text, 'svc_events_ingested_total')).toBe(2);
  });
});
