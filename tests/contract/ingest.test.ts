// Durable events and their projections on both databases: content-derived
// ids (re-sent batches and duplicate reports absorbed), the task state rules,
// workers and queues, and the metrics the router keeps.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { readEvents, storeEvents, taskEvents } from '../../src/ingest/service.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { EVENT_ID_NAMESPACE, timePrefixedV5, uuidV5 } from '../../src/ingest/event-ids.ts';
import { nowIso, nowMicros } from '../../src/lib/clock.ts';
import { findTask, listQueues, listWorkers, projectAdapterHealth } from '../../src/tasks/service.ts';
import { toPlainObject } from '../../src/transport/json-convert.ts';
import { parseJson, type JsonObject } from '../../src/transport/json.ts';
import { routeFrames } from '../../src/transport/router.ts';
import { newFrameContext } from '../../src/transport/session-state.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { FrameVerifier } from '../../src/transport/verifier.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
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
  const stored = await svc.ctx.db.tx(async (tx) => {
    const r = await storeEvents(tx, { projectId, agentId: agent, frameId }, read.records, nowIso());
    await holdOpen?.(); // a test holding the transaction open
    return r;
  });
  return { ...read, ...stored };
}
let holdOpen: (() => Promise<void>) | null = null;

/** A task's history as the task detail route reads it (none for an unknown task). */
async function eventsOf(projectId: string, engine: string, taskId: string) {
  const task = await findTask(svc.ctx.db, projectId, engine, taskId);
  return task ? taskEvents(svc.ctx.db, task.id) : [];
}

describe(`ingest on ${testDialect()}`, () => {
  test('re-sent batches and the same lifecycle event from another agent are stored once', async () => {
    const batch = [ev('task.started', 'job-1', -2000), ev('task.succeeded', 'job-1', -1000, { result: { n: 1 }, runtime_ms: 5 })];
    expect((await ingest(batch, 'ev_aaaaaaaaaaaa')).stored).toBe(2);
    expect((await ingest(batch, 'ev_aaaaaaaaaaaa')).stored).toBe(0);
    const other = (await mintAgent(svc.ctx, project.id, 'second', TEST_ACTOR)).agent.id;
    const sameEvent = [{ ...batch[0], id: crypto.randomUUID() }];
    expect((await ingest(sameEvent, 'ev_bbbbbbbbbbbb', other)).stored).toBe(0);
    expect(await eventsOf(project.id, 'celery', 'job-1')).toHaveLength(2);
  });

  test('event ids: task events by (project, task, kind, second), led by that second; others by the agent id, or by frame and position when unusable', async () => {
    const at = Date.UTC(2026, 4, 1, 12, 0, 0);
    const text = new Date(at).toISOString().replace('Z', '+00:00');
    const nonTask = { id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE', kind: 'worker.online', engine: 'celery', task_id: '', occurred_at: text, data: {} };
    const payload = toPlainObject(parseJson(JSON.stringify({ events: [ev('task.started', 'abc', 0), nonTask, { ...nonTask, id: 'not-a-uuid' }, { ...nonTask, id: null }] })) as JsonObject);
    (payload.events as Record<string, unknown>[])[0]!.occurred_at = text;
    const read = readEvents(payload, { projectId: project.id, agentId, frameId: 'ev_1', nowMicros: at * 1000 });
    expect(read.records.map((r) => r.id)).toEqual([
      timePrefixedV5(EVENT_ID_NAMESPACE, `${project.id}:abc:task.started:${at / 1000}`, at),
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
    const big = await eventsOf(project.id, 'celery', 'big');
    expect(big[0]!.payload).toMatchObject({ note: 'a\ufffdb', kwargs: { n: '123456789012345678901234567890' } });
    expect((await findTask(svc.ctx.db, project.id, 'celery', 'big'))!.kwargs).toEqual({ n: '123456789012345678901234567890' });
  });

  test("a task's events: by its row id in the index, this project's and engine's only, oldest first", async () => {
    await ingest([ev('task.succeeded', 'shared-id', -1000), ev('task.started', 'shared-id', -3000), { ...ev('task.started', 'shared-id', -2000), engine: 'rq' }]);
    const other = await insertProject(svc.ctx.db, 'other');
    const otherAgent = (await mintAgent(svc.ctx, other.id, 'elsewhere', TEST_ACTOR)).agent.id;
    await ingest([ev('task.received', 'shared-id', -4000)], null, otherAgent, other.id);
    const found = await eventsOf(project.id, 'celery', 'shared-id');
    expect(found.map((e) => e.kind)).toEqual(['task.started', 'task.succeeded']);
    expect((await eventsOf(project.id, 'rq', 'shared-id')).map((e) => e.kind)).toEqual(['task.started']);
    expect((await eventsOf(other.id, 'celery', 'shared-id')).map((e) => e.kind)).toEqual(['task.received']);
    const task = (await findTask(svc.ctx.db, project.id, 'celery', 'shared-id'))!;
    if (testDialect() === 'sqlite') {
      const plan = await svc.ctx.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN SELECT * FROM events WHERE task_ref = ${task.id} ORDER BY occurred_at, id`);
      expect(plan.map((p) => p.detail).join('; ')).toContain('USING INDEX events_task_ref (task_ref=?)');
    } else {
      const [ix] = await svc.ctx.db.all<{ indexdef: string }>(sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'events_task_ref'`);
      expect(ix!.indexdef).toContain('(task_ref)');
    }
  });

  test('events of unknown kinds that name a task join its history when the task is known; re-sent ones are not tied twice', async () => {
    await ingest([ev('telepathy.early', 'u1', -5000)]); // no task u1 yet: stored, in no history
    await ingest([ev('task.started', 'u1', -4000)]);
    const late = [ev('telepathy.late', 'u1', -3000), ev('task.succeeded', 'u1', -2000)];
    await ingest(late, 'ev_late00000000');
    expect((await ingest(late, 'ev_late00000000')).stored).toBe(0);
    expect((await eventsOf(project.id, 'celery', 'u1')).map((e) => e.kind)).toEqual(['task.started', 'unknown', 'task.succeeded']);
    const loose = await svc.ctx.db.all<{ kind: string; task_ref: string | null }>(sql`SELECT kind, task_ref FROM events WHERE task_id = 'u1' AND task_ref IS NULL`);
    expect(loose).toEqual([{ kind: 'unknown', task_ref: null }]);
  });

  test('a task first stored by a transaction that commits while another stores events of it: every event in its history', async () => {
    // On PostgreSQL the second transaction looks the task up before the first commits, chooses a
    // row id of its own, then finds the first one's row at its upsert: its events are tied again.
    // (SQLite runs the two one after the other.)
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    holdOpen = () => released;
    const first = ingest([ev('task.received', 'race', -3000)]);
    await Bun.sleep(100);
    holdOpen = null;
    const second = ingest([ev('task.started', 'race', -2000), ev('task.succeeded', 'race', -1000)]);
    await Bun.sleep(300);
    release();
    await Promise.all([first, second]);
    expect((await eventsOf(project.id, 'celery', 'race')).map((e) => e.kind)).toEqual(['task.received', 'task.started', 'task.succeeded']);
    expect(await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM tasks WHERE task_id = 'race'`)).toEqual([{ n: 1 }]);
  });

  test('...and when that transaction stored the very event that would have created the task, the rest still join its history', async () => {
    const received = ev('task.received', 'race-2', -3000);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    holdOpen = () => released;
    const first = ingest([received]);
    await Bun.sleep(100);
    holdOpen = null;
    // The same task.received (so the same event id: a duplicate once the first commits) and an event of a kind svc does not know.
    const second = ingest([{ ...received, id: crypto.randomUUID() }, ev('telepathy.noted', 'race-2', -2000)]);
    await Bun.sleep(300);
    release();
    await Promise.all([first, second]);
    expect((await eventsOf(project.id, 'celery', 'race-2')).map((e) => e.kind)).toEqual(['task.received', 'unknown']);
  });

  test('a task id cut in the middle of a character (200 UTF-16 units) keeps one task and its whole history', async () => {
    const id = `${'x'.repeat(199)}\u{1F600}`; // cut to 199 x and half of the emoji
    await ingest([ev('task.received', id, -5000)]);
    await ingest([ev('task.started', id, -4000)]);
    await ingest([ev('task.succeeded', id, -3000)]);
    const rows = await svc.ctx.db.all<{ task_id: string }>(sql`SELECT task_id FROM tasks WHERE task_id LIKE 'xxxxx%'`);
    expect(rows).toEqual([{ task_id: `${'x'.repeat(199)}\ufffd` }]);
    expect((await eventsOf(project.id, 'celery', rows[0]!.task_id)).map((e) => e.kind)).toEqual(['task.received', 'task.started', 'task.succeeded']);
  });

  test("an event that would create a task but is another engine's duplicate (same task id, kind and second) leaves the rest untied, never tied to no row", async () => {
    const started = ev('task.started', 'twin', -5000);
    await ingest([started]);
    // Event ids of task events carry no engine (as the z4j brain's): rq's report of the same second is a duplicate.
    await ingest([{ ...started, engine: 'rq', id: crypto.randomUUID() }, { ...ev('telepathy.noted', 'twin', -4500), engine: 'rq' }]);
    await ingest([{ ...ev('task.succeeded', 'twin', -1000), engine: 'rq' }]);
    expect((await eventsOf(project.id, 'rq', 'twin')).map((e) => e.kind)).toEqual(['task.succeeded']);
    const dangling = await svc.ctx.db.all<{ kind: string }>(
      sql`SELECT kind FROM events e WHERE task_ref IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.task_ref)`,
    );
    expect(dangling).toEqual([]);
    expect(await svc.ctx.db.all<{ engine: string; task_ref: string | null }>(sql`SELECT engine, task_ref FROM events WHERE kind = 'unknown'`)).toEqual([{ engine: 'rq', task_ref: null }]);
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

    // A traceback sent as the exception (z4j-rq): its last line is the exception, the text the traceback.
    const rqText = `Traceback (most recent call last):\n  File "rq/job.py", line 1, in perform\n${'    x = 1\n'.repeat(80)}ValueError: interop failure: ws\n`;
    await ingest([ev('task.failed', 't4', -1000, { exception: rqText })]);
    expect(await findTask(svc.ctx.db, project.id, 'celery', 't4')).toMatchObject({ exception: 'ValueError: interop failure: ws', traceback: rqText.trim() });

    // Out of order within one batch.
    await ingest([ev('task.succeeded', 't3', -1000), ev('task.received', 't3', -3000), ev('task.started', 't3', -2000)]);
    expect((await findTask(svc.ctx.db, project.id, 'celery', 't3'))!.state).toBe('success');
  });

  test('runtime_ms without a reported one: finished_at less started_at, across batches and in any order; a reported one is kept; clock skew derives none', async () => {
    // Times from one instant (ev's are from the moment each is made).
    const base = Date.now();
    const at = (kind: string, taskId: string, offsetMs: number, data: Record<string, unknown> = {}) => ({
      ...ev(kind, taskId, 0, data),
      occurred_at: new Date(base + offsetMs).toISOString().replace('Z', '+00:00'),
    });
    const rq = (...a: Parameters<typeof at>) => ({ ...at(...a), engine: 'rq' });
    const runtime = async (engine: string, taskId: string) => {
      const ms = (await findTask(svc.ctx.db, project.id, engine, taskId))!.runtime_ms;
      return ms === null ? null : Number(ms);
    };
    await ingest([rq('task.received', 'r1', -5000), rq('task.started', 'r1', -4000), rq('task.started', 'r2', -4000), rq('task.started', 'skew', -1000)]);
    await ingest([rq('task.succeeded', 'r1', -1500, { result: 1 }), rq('task.failed', 'r2', -3000, { exception: 'ValueError' }), rq('task.succeeded', 'skew', -2000)]);
    expect(await runtime('rq', 'r1')).toBe(2500);
    expect(await runtime('rq', 'r2')).toBe(1000);
    expect(await runtime('rq', 'skew')).toBeNull();
    // The end stored first, its start later; and both in one batch.
    await ingest([rq('task.succeeded', 'r3', -1000)]);
    expect(await runtime('rq', 'r3')).toBeNull();
    await ingest([rq('task.started', 'r3', -3000)]);
    expect(await runtime('rq', 'r3')).toBe(2000);
    await ingest([rq('task.started', 'r4', -3000), rq('task.succeeded', 'r4', -2750)]);
    expect(await runtime('rq', 'r4')).toBe(250);
    // Reported: kept whatever the start and end say, before or after them.
    await ingest([at('task.started', 'c1', -4000)]);
    await ingest([at('task.succeeded', 'c1', -3000, { runtime_ms: 40 })]);
    await ingest([at('task.succeeded', 'c2', -3000, { runtime_ms: 40 })]);
    await ingest([at('task.started', 'c2', -5000)]);
    expect([await runtime('celery', 'c1'), await runtime('celery', 'c2')]).toEqual([40, 40]);
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

describe(`migration 0008 on ${testDialect()}`, () => {
  test("ties the events stored before it to their tasks' rows; events of no task stay untied", async () => {
    const old = await testService({ migrate: false });
    try {
      const db = old.ctx.db;
      await upgrade(db, '0007');
      const p = await insertProject(db, 'before-0008');
      const agent = (await mintAgent(old.ctx, p.id, 'a', TEST_ACTOR)).agent.id;
      const at = '2026-11-01T00:00:00.000000+00:00';
      const event = (id: string, engine: string, taskId: string, kind: string) =>
        sql`INSERT INTO events (id, project_id, agent_id, engine, task_id, kind, occurred_at, received_at, payload) VALUES (${id}, ${p.id}, ${agent}, ${engine}, ${taskId}, ${kind}, ${at}, ${at}, '{}')`;
      await db.tx(async (tx) => {
        await tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, state, state_tier, state_at, tags, created_at, updated_at) VALUES ('row-c', ${p.id}, 'celery', 't1', 'success', 1, ${at}, '[]', ${at}, ${at})`);
        await tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, state, state_tier, state_at, tags, created_at, updated_at) VALUES ('row-r', ${p.id}, 'rq', 't1', 'started', 0, ${at}, '[]', ${at}, ${at})`);
        await tx.run(event('e1', 'celery', 't1', 'task.started'));
        await tx.run(event('e2', 'celery', 't1', 'task.succeeded'));
        await tx.run(event('e3', 'rq', 't1', 'task.started'));
        await tx.run(event('e4', 'celery', 'never-projected', 'unknown'));
        await tx.run(event('e5', 'celery', '', 'worker.online'));
      });
      expect(await upgrade(db, '0008')).toEqual(['0008']);
      const rows = await db.all<{ id: string; task_ref: string | null }>(sql`SELECT id, task_ref FROM events ORDER BY id`);
      expect(rows).toEqual([
        { id: 'e1', task_ref: 'row-c' },
        { id: 'e2', task_ref: 'row-c' },
        { id: 'e3', task_ref: 'row-r' },
        { id: 'e4', task_ref: null },
        { id: 'e5', task_ref: null },
      ]);
      expect((await taskEvents(db, 'row-c')).map((e) => e.id)).toEqual(['e1', 'e2']);
    } finally {
      await old.close();
    }
  });
});
