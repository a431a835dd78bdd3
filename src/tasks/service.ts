// The task, worker and queue projections. Newly stored events are folded per
// task (terminal states win over non-terminal ones; within a tier the newer
// occurred_at wins) and merged into the rows in SQL; heartbeats carry queue
// depths and worker details in adapter_health.
import type { Executor } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { notFound } from '../http/errors.ts';
import { newTimeOrderedId } from '../lib/ids.ts';
import { parseIsoMicros } from '../lib/clock.ts';
import { elapsedMs, rollupTaskEvents } from '../stats/rollup.ts';
import { isPlaceholderName, LATEST_WINS, queuesOf, taskKey, taskOf, upsertQueues, upsertTasks, upsertWorkers, workersOf, type QueueRow, type StoredTask, type TaskRow, type WorkerRow } from './store.ts';
import type { TaskPage, TaskPublic } from './schemas.ts';
import type { TaskState } from './tables.ts';

export type { QueueRow, TaskRow, WorkerRow };
export type { TaskPage, TaskPublic };

const STATE_OF_KIND: Record<string, TaskState> = {
  'task.sent': 'pending',
  'task.received': 'received',
  'task.started': 'started',
  'task.succeeded': 'success',
  'task.failed': 'failure',
  'task.retried': 'retry',
  'task.revoked': 'revoked',
  'task.rejected': 'rejected',
};
const TERMINAL: ReadonlySet<TaskState> = new Set(['success', 'failure', 'revoked', 'rejected']);
const PRIORITIES: ReadonlySet<string> = new Set(['critical', 'high', 'normal', 'low']);

export const taskStateOfKind = (kind: string): TaskState | null => STATE_OF_KIND[kind] ?? null;

const str = (v: unknown, max = 500): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, max) : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);

/** A failure's exception and traceback. Some agents (z4j-rq) send the whole traceback as the
 * exception: its last line is the exception itself, and the text is the traceback when none came apart. */
function failureOf(d: Record<string, unknown>): { exception: string | null; traceback: string | null } {
  const text = typeof d.exception === 'string' ? d.exception.trim() : '';
  const traceback = str(d.traceback, 10_000);
  if (!text.includes('\n')) return { exception: str(text), traceback };
  const last = text.split('\n').reverse().find((line) => line.trim() !== '')!;
  return { exception: str(last.trim()), traceback: traceback ?? str(text, 10_000) };
}

function taskRowOf(id: string, projectId: string, e: EventRecord, state: TaskState, now: string): TaskRow {
  const d = e.data;
  const failure = e.kind === 'task.failed' ? failureOf(d) : { exception: null, traceback: null };
  const at = e.occurredAt;
  const tags = Array.isArray(d.tags) ? d.tags.filter((x): x is string => typeof x === 'string').slice(0, 64) : [];
  return {
    id,
    project_id: projectId,
    engine: e.engine,
    task_id: e.taskId,
    name: str(d.task_name),
    queue: str(d.queue, 200),
    state,
    state_tier: TERMINAL.has(state) ? 1 : 0,
    state_at: at,
    priority: typeof d.priority === 'string' && PRIORITIES.has(d.priority) ? d.priority : null,
    args: 'args' in d && (e.kind === 'task.received' || e.kind === 'task.started' || e.kind === 'task.sent') ? (d.args ?? null) : null,
    kwargs: 'kwargs' in d && (e.kind === 'task.received' || e.kind === 'task.started' || e.kind === 'task.sent') ? (d.kwargs ?? null) : null,
    result: e.kind === 'task.succeeded' && 'result' in d ? (d.result ?? null) : null,
    exception: failure.exception,
    traceback: failure.traceback,
    retry_count: e.kind === 'task.retried' ? 1 : 0,
    eta: str(d.eta, 64),
    received_at: e.kind === 'task.received' ? at : null,
    started_at: e.kind === 'task.started' ? at : null,
    finished_at: TERMINAL.has(state) ? at : null,
    runtime_ms: int(d.runtime_ms),
    worker_name: str(d.worker, 200),
    parent_task_id: str(d.parent_task_id, 200),
    root_task_id: str(d.root_task_id, 200),
    tags,
    created_at: now,
    updated_at: now,
  };
}

const wins = (a: TaskRow, b: TaskRow): boolean => a.state_tier > b.state_tier || (a.state_tier === b.state_tier && a.state_at >= b.state_at);

/** Folds `next` into `acc` by the same rules the SQL merge applies. */
function fold(acc: TaskRow, next: TaskRow): TaskRow {
  const winner = wins(next, acc) ? next : acc;
  const out: Record<string, unknown> = { ...acc };
  for (const k of LATEST_WINS) out[k] = next[k] ?? acc[k];
  out.name = next.name === null || (acc.name !== null && isPlaceholderName(next.name)) ? acc.name : next.name;
  const earlier = (x: string | null, y: string | null) => (x === null ? y : y === null ? x : x < y ? x : y);
  return {
    ...(out as TaskRow),
    state: winner.state,
    state_tier: winner.state_tier,
    state_at: winner.state_at,
    retry_count: acc.retry_count + next.retry_count,
    received_at: earlier(acc.received_at, next.received_at),
    tags: next.tags.length > 0 ? next.tags : acc.tags,
  };
}

/** The runtime a task's row takes when no report of it carried one (RQ, Dramatiq, arq, Huey and TaskIQ
 * agents send none, z4j-celery none for failures): its end less its start, each as the write leaves it (the
 * call's, else the stored one: `before`, read in this transaction). A runtime the task holds already is
 * kept, so a reported one is never replaced (nor is a derived one when the task runs again); an end
 * before the start (clock skew between workers) derives none. On PostgreSQL a start or end another
 * transaction stores meanwhile is not seen here: the task then keeps none until its next report. */
function runtimeOfRow(row: TaskRow, before: StoredTask | undefined): number | null {
  if (row.runtime_ms !== null || before?.timed) return row.runtime_ms;
  const started = row.started_at ?? before?.started_at;
  const finished = row.finished_at ?? before?.finished_at;
  if (!started || !finished) return null;
  const from = parseIsoMicros(started);
  const to = parseIsoMicros(finished);
  const ms = from === null || to === null ? null : elapsedMs(from, to);
  return ms === null ? null : Math.round(ms);
}

function workerRow(projectId: string, engine: string, name: string, now: string, fields: Partial<WorkerRow>): WorkerRow {
  return {
    id: crypto.randomUUID(),
    project_id: projectId,
    engine,
    name: name.slice(0, 200),
    hostname: null,
    pid: null,
    concurrency: null,
    queues: [],
    state: 'online',
    last_heartbeat: null,
    load_average: null,
    active_tasks: null,
    metadata: {},
    created_at: now,
    updated_at: now,
    ...fields,
  };
}

/** A queue's row is shared by every upload of its project that names it: when all an upload says of a queue
 * is that tasks ran in it (no depth), its last_seen_at is written at most once in QUEUE_TOUCH_MS by each
 * process. Writing it on every upload made the row's lock the one point all uploads of a project waited
 * on in turn (bench/replicas.ts: 16 of 20 transactions at once waiting for it on PostgreSQL). A depth
 * report is always written. last_seen_at is therefore up to this late, per process. */
const QUEUE_TOUCH_MS = 5000;
class QueueTouches {
  private readonly at = new Map<string, number>();
  /** True when `key` was not touched by this process in QUEUE_TOUCH_MS (and counts it touched now). */
  due(key: string): boolean {
    const now = performance.now();
    const last = this.at.get(key);
    if (last !== undefined && now - last < QUEUE_TOUCH_MS) return false;
    if (this.at.size >= 10_000) this.at.clear(); // bounded: forgetting only means one write more
    this.at.set(key, now);
    return true;
  }
}
const queueTouches = new QueueTouches();

function queueRow(projectId: string, engine: string, name: string, now: string, pending: number | null): QueueRow {
  return {
    id: crypto.randomUUID(),
    project_id: projectId,
    engine,
    name: name.slice(0, 200),
    broker_type: null,
    last_seen_at: now,
    pending_count: pending,
    consumer_count: null,
    metadata: {},
    created_at: now,
    updated_at: now,
  };
}

/** Rows in key order: concurrent batches then lock shared rows in the same
 * order, so PostgreSQL never finds them deadlocked. */
const inKeyOrder = <T>(rows: Map<string, T>): T[] => [...rows.keys()].sort().map((k) => rows.get(k)!);

export interface Projected {
  /** Task state each task event set (for metrics). */
  states: TaskState[];
  /** PostgreSQL: the row ids of the tasks written, as stored (see upsertTasks). */
  storedTaskIds: Set<string> | null;
  /** Writes the rows every upload of the project shares (its queues, its statistics). The caller runs
   * it last in its transaction: concurrent uploads wait on those rows' locks until the holder commits,
   * so the less that follows them, the more uploads commit a second (bench/replicas.ts). */
  writeShared: () => Promise<void>;
}

/** Projects newly stored events onto tasks, workers and queues. A task not stored
 * yet gets the row id `rowIds` holds for it (by taskKey), else a new one; `stored`
 * holds the tasks read beforehand in this transaction (storedTasks). */
export async function projectEvents(
  ex: Executor,
  projectId: string,
  records: EventRecord[],
  now: string,
  rowIds: ReadonlyMap<string, string>,
  stored: ReadonlyMap<string, StoredTask>,
  statsShard = 0,
): Promise<Projected> {
  const taskRows = new Map<string, TaskRow>();
  const workerRows = new Map<string, WorkerRow>();
  const queueRows = new Map<string, QueueRow>();
  const states: TaskState[] = [];
  for (const e of records) {
    const state = STATE_OF_KIND[e.kind];
    if (state && e.taskId !== '') {
      states.push(state);
      const key = taskKey(e.engine, e.taskId);
      const row = taskRowOf(rowIds.get(key) ?? newTimeOrderedId(), projectId, e, state, now);
      const acc = taskRows.get(key);
      taskRows.set(key, acc ? fold(acc, row) : row);
    }
    const queue = str(e.data.queue, 200);
    if (queue && (state || e.kind === 'queue.depth_report')) {
      const depth = e.kind === 'queue.depth_report' ? (int(e.data.depth) ?? int(e.data.pending_count)) : null;
      const key = `${e.engine}\u0000${queue}`;
      const prev = queueRows.get(key);
      if (!prev) queueRows.set(key, queueRow(projectId, e.engine, queue, now, depth));
      else if (depth !== null) prev.pending_count = depth;
    }
    if (e.kind === 'worker.online' || e.kind === 'worker.offline' || e.kind === 'worker.heartbeat') {
      const name = str(e.data.hostname, 200) ?? str(e.data.worker_name, 200) ?? str(e.data.worker, 200);
      if (name) {
        workerRows.set(
          `${e.engine}\u0000${name}`,
          workerRow(projectId, e.engine, name, now, {
            state: e.kind === 'worker.offline' ? 'offline' : 'online',
            hostname: str(e.data.hostname, 200),
            pid: int(e.data.pid),
            active_tasks: int(e.data.active),
            last_heartbeat: e.occurredAt,
          }),
        );
      }
    }
  }
  for (const [key, row] of taskRows) row.runtime_ms = runtimeOfRow(row, stored.get(key));
  const storedTaskIds = taskRows.size > 0 ? await upsertTasks(ex, inKeyOrder(taskRows), stored) : null;
  if (workerRows.size > 0) await upsertWorkers(ex, inKeyOrder(workerRows));
  const writeShared = async () => {
    const queues = [...queueRows].filter(([key, row]) => row.pending_count !== null || queueTouches.due(`${projectId}\u0000${key}`));
    if (queues.length > 0) await upsertQueues(ex, inKeyOrder(new Map(queues)));
    // Per-minute and per-hour statistics of the same events, in the same transaction (src/stats/rollup.ts).
    await rollupTaskEvents(ex, projectId, records, statsShard, (engine, taskId) => stored.get(taskKey(engine, taskId))?.started_at ?? null);
  };
  return { states, storedTaskIds, writeShared };
}

const MAX_HEALTH_KEYS = 256;
const MAX_QUEUE_DEPTHS = 1024;
const MAX_WORKER_DETAILS = 256;

function parseJsonText(v: unknown): unknown {
  if (typeof v !== 'string') return null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
}

const asRecord = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** A heartbeat's adapter_health: `<engine>.queue_depths` and `<engine>.worker_details`
 * values (JSON text) update queues and workers; at most 256 keys are read. */
export async function projectAdapterHealth(ex: Executor, projectId: string, health: Record<string, unknown>, now: string): Promise<void> {
  const queues: QueueRow[] = [];
  const workerRowsOut: WorkerRow[] = [];
  for (const key of Object.keys(health).slice(0, MAX_HEALTH_KEYS)) {
    const dot = key.lastIndexOf('.');
    if (dot <= 0) continue;
    const engine = key.slice(0, dot).slice(0, 40);
    const what = key.slice(dot + 1);
    if (what === 'queue_depths') {
      const depths = asRecord(parseJsonText(health[key]));
      if (!depths) continue;
      for (const name of Object.keys(depths).slice(0, MAX_QUEUE_DEPTHS)) {
        if (name === '') continue;
        queues.push(queueRow(projectId, engine, name, now, int(depths[name])));
      }
    } else if (what === 'worker_details') {
      const details = asRecord(parseJsonText(health[key]));
      if (!details) continue;
      for (const host of Object.keys(details).slice(0, MAX_WORKER_DETAILS)) {
        const info = asRecord(details[host]) ?? {};
        const stats = asRecord(info.stats) ?? {};
        const pool = asRecord(stats.pool) ?? {};
        const activeQueues = Array.isArray(info.active_queues)
          ? info.active_queues.map((q) => str(asRecord(q)?.name ?? q, 200)).filter((q): q is string => q !== null)
          : [];
        workerRowsOut.push(
          workerRow(projectId, engine, host, now, {
            hostname: host.slice(0, 200),
            pid: int(stats.pid),
            concurrency: int(pool['max-concurrency']),
            queues: activeQueues,
            last_heartbeat: now,
            active_tasks: Array.isArray(info.active) ? info.active.length : null,
            metadata: { stats, conf: info.conf ?? null, registered: Array.isArray(info.registered) ? info.registered.length : null },
          }),
        );
      }
    }
  }
  if (queues.length > 0) await upsertQueues(ex, inKeyOrder(byKey(queues, (q) => `${q.engine}\u0000${q.name}`)));
  if (workerRowsOut.length > 0) await upsertWorkers(ex, inKeyOrder(byKey(workerRowsOut, (w) => `${w.engine}\u0000${w.name}`)));
}

/** Last row per key: one statement may not touch the same row twice. */
const byKey = <T>(rows: T[], key: (r: T) => string): Map<string, T> => new Map(rows.map((r) => [key(r), r]));

// --- reads (for the task and worker routes) ------------------------------------

export const findTask = (ex: Executor, projectId: string, engine: string, taskId: string) => taskOf(ex, projectId, engine, taskId);
export const listWorkers = (ex: Executor, projectId: string) => workersOf(ex, projectId);
export const listQueues = (ex: Executor, projectId: string) => queuesOf(ex, projectId);

export function toTaskPublic(t: TaskRow): TaskPublic {
  const { state_tier: _tier, state_at: _at, ...rest } = t;
  return { ...rest, runtime_ms: t.runtime_ms === null ? null : Number(t.runtime_ms) };
}

/** One task of the project; 404 when unknown. */
export async function getTask(ex: Executor, projectId: string, engine: string, taskId: string): Promise<TaskPublic> {
  const row = await taskOf(ex, projectId, engine, taskId);
  if (!row) throw notFound('task');
  return toTaskPublic(row);
}
