// Queries of the task, worker and queue projections. Upserts merge in SQL
// (ON CONFLICT ... DO UPDATE with CASE/COALESCE) so concurrent batches from
// several agents about one task never lose each other's fields.
import { and, asc, eq, sql } from 'drizzle-orm';
import { arrayLiteral, bulkWrite, sqliteClient, storedText, type BulkWrite } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';

export type TaskRow = typeof import('./tables.ts').tasks.sqlite.$inferSelect;
export type WorkerRow = typeof import('./tables.ts').workers.sqlite.$inferSelect;
export type QueueRow = typeof import('./tables.ts').queues.sqlite.$inferSelect;

/** Task fields where the later report, when it has a value, replaces the earlier (service.ts folds a batch the same way). */
export const LATEST_WINS = [
  'queue', 'priority', 'args', 'kwargs', 'result', 'exception', 'traceback', 'eta',
  'started_at', 'finished_at', 'runtime_ms', 'worker_name', 'parent_task_id', 'root_task_id',
] as const;

// The incoming state wins when its tier is higher, or equal and at least as recent.
const WINS = 'excluded.state_tier > tasks.state_tier OR (excluded.state_tier = tasks.state_tier AND excluded.state_at >= tasks.state_at)';
const pick = (c: string) => `${c} = CASE WHEN ${WINS} THEN excluded.${c} ELSE tasks.${c} END`;
const newer = (table: string, c: string) => `${c} = COALESCE(excluded.${c}, ${table}.${c})`;
const earliest = (c: string) =>
  `${c} = CASE WHEN tasks.${c} IS NULL OR (excluded.${c} IS NOT NULL AND excluded.${c} < tasks.${c}) THEN excluded.${c} ELSE tasks.${c} END`;
const unlessEmpty = (table: string, c: string, empty: string) => `${c} = CASE WHEN excluded.${c} = '${empty}' THEN ${table}.${c} ELSE excluded.${c} END`;

// Agents send a placeholder (`<unknown>`, `<unknown:queue:id>`) when they
// cannot tell a task's name, as z4j-celery does for some failure events: it
// names a task no better name is known for, and never replaces one.
const PLACEHOLDER = '<unknown';
export const isPlaceholderName = (name: string): boolean => name.startsWith(PLACEHOLDER);
const NAME = `name = CASE WHEN excluded.name IS NULL OR (tasks.name IS NOT NULL AND substr(excluded.name, 1, ${PLACEHOLDER.length}) = '${PLACEHOLDER}') THEN tasks.name ELSE excluded.name END`;

const TASK_WRITE: BulkWrite = {
  table: 'tasks',
  columns: [
    'id', 'project_id', 'engine', 'task_id', 'name', 'queue', 'state', 'state_tier', 'state_at', 'priority', 'args', 'kwargs', 'result',
    'exception', 'traceback', 'retry_count', 'eta', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'worker_name',
    'parent_task_id', 'root_task_id', 'tags', 'created_at', 'updated_at',
  ],
  json: new Set(['args', 'kwargs', 'result', 'tags']),
  pgTypes: { state_tier: 'integer', retry_count: 'integer', runtime_ms: 'bigint' },
  conflict: `ON CONFLICT (project_id, engine, task_id) DO UPDATE SET ${[
    pick('state'),
    pick('state_tier'),
    pick('state_at'),
    NAME,
    ...LATEST_WINS.map((c) => newer('tasks', c)),
    'retry_count = tasks.retry_count + excluded.retry_count',
    earliest('received_at'),
    unlessEmpty('tasks', 'tags', '[]'),
    'updated_at = excluded.updated_at',
  ].join(', ')}`,
};

const WORKER_WRITE: BulkWrite = {
  table: 'workers',
  columns: ['id', 'project_id', 'engine', 'name', 'hostname', 'pid', 'concurrency', 'queues', 'state', 'last_heartbeat', 'load_average', 'active_tasks', 'metadata', 'created_at', 'updated_at'],
  json: new Set(['queues', 'load_average', 'metadata']),
  pgTypes: { pid: 'integer', concurrency: 'integer', active_tasks: 'integer' },
  conflict: `ON CONFLICT (project_id, engine, name) DO UPDATE SET ${[
    'state = excluded.state',
    ...['hostname', 'pid', 'concurrency', 'last_heartbeat', 'load_average', 'active_tasks'].map((c) => newer('workers', c)),
    unlessEmpty('workers', 'queues', '[]'),
    unlessEmpty('workers', 'metadata', '{}'),
    'updated_at = excluded.updated_at',
  ].join(', ')}`,
};

const QUEUE_WRITE: BulkWrite = {
  table: 'queues',
  columns: ['id', 'project_id', 'engine', 'name', 'broker_type', 'last_seen_at', 'pending_count', 'consumer_count', 'metadata', 'created_at', 'updated_at'],
  json: new Set(['metadata']),
  pgTypes: { pending_count: 'bigint', consumer_count: 'integer' },
  conflict: `ON CONFLICT (project_id, engine, name) DO UPDATE SET ${[
    'last_seen_at = excluded.last_seen_at',
    ...['broker_type', 'pending_count', 'consumer_count'].map((c) => newer('queues', c)),
    'updated_at = excluded.updated_at',
  ].join(', ')}`,
};

/** A task's key among a project's tasks (of the text as stored). */
export const taskKey = (engine: string, taskId: string): string => `${storedText(engine)}\u0000${storedText(taskId)}`;

/** One row per (project, engine, task id) in `rows` (the caller folds a batch first:
 * PostgreSQL refuses to update one row twice in a statement). A task already
 * stored keeps its row id. On PostgreSQL returns the row ids as stored, which
 * tell a task another transaction created meanwhile; SQLite's one writer never
 * meets one, and RETURNING on its upsert costs some 15 µs a row (measured), so
 * there: null. */
export async function upsertTasks(ex: Executor, rows: TaskRow[]): Promise<Set<string> | null> {
  if (ex.dialect === 'sqlite') {
    // New rows get rowids above the highest one (SQLite's one writer holds the database).
    const top = sqliteClient(ex).query<{ m: number | null }, []>('SELECT max(rowid) AS m FROM tasks').get()?.m ?? 0;
    await bulkWrite(ex, TASK_WRITE, rows);
    indexForSearch(ex, rows, top);
    return null;
  }
  // PostgreSQL: the tasks_search trigger keeps search_vector in step (migration 0010).
  return new Set((await bulkWrite(ex, { ...TASK_WRITE, report: 'id' }, rows)) as string[]);
}

/** SQLite: the search index's entries of the rows just written (migration 0010), made from the
 * rows as stored: those inserted (rowids above `top`, read in one range) get one; those stored
 * before lose theirs by rowid and get a new one. Deletes all come first: FTS5 flushes the terms it
 * holds in memory to a new segment before a delete, so interleaved they would cost a segment per
 * row (as a trigger in the upsert statement would, through its savepoint). Values are bound, not
 * selected into the index: INSERT INTO a virtual table ... SELECT stages its rows first and
 * cost twice as much. */
function indexForSearch(ex: Executor, rows: TaskRow[], top: number): void {
  const client = sqliteClient(ex);
  const inserted = client
    .query<SearchedRow & { project_id: string; engine: string; task_id: string }, [number]>(
      'SELECT rowid AS r, project_id, engine, task_id, name, args, kwargs, result, exception FROM tasks WHERE rowid > ?',
    )
    .all(top);
  const key = (projectId: string, engine: string, taskId: string) => `${projectId}\u0000${engine}\u0000${taskId}`;
  const isNew = new Set(inserted.map((r) => key(r.project_id, r.engine, r.task_id)));
  const read = client.query<SearchedRow, [string, string, string]>(
    'SELECT rowid AS r, name, args, kwargs, result, exception FROM tasks WHERE project_id = ? AND engine = ? AND task_id = ?',
  );
  const updated: SearchedRow[] = [];
  for (const row of rows) {
    const engine = storedText(row.engine);
    const taskId = storedText(row.task_id);
    if (isNew.has(key(row.project_id, engine, taskId))) continue;
    const stored = read.get(row.project_id, engine, taskId);
    if (stored) updated.push(stored);
  }
  const drop = client.query('DELETE FROM tasks_fts WHERE rowid = ?');
  for (const s of updated) drop.run(s.r);
  const add = client.query('INSERT INTO tasks_fts (rowid, name, args, kwargs, result, exception) VALUES (?, ?, ?, ?, ?, ?)');
  for (const s of [...inserted, ...updated]) add.run(s.r, s.name, s.args, s.kwargs, s.result, s.exception);
}

interface SearchedRow {
  r: number;
  name: string | null;
  args: string | null;
  kwargs: string | null;
  result: string | null;
  exception: string | null;
}

export const upsertWorkers = (ex: Executor, rows: WorkerRow[]): Promise<unknown> => bulkWrite(ex, WORKER_WRITE, rows);
export const upsertQueues = (ex: Executor, rows: QueueRow[]): Promise<unknown> => bulkWrite(ex, QUEUE_WRITE, rows);

/** Row ids of the project's tasks named in `tasks`, by taskKey; unknown tasks are absent. */
export async function taskRowIds(ex: Executor, projectId: string, tasks: Iterable<{ engine: string; taskId: string }>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const wanted = [...tasks];
  if (wanted.length === 0) return out;
  if (ex.dialect === 'sqlite') {
    // A prepared probe per task: a few microseconds each, where a query builder takes tens.
    const probe = sqliteClient(ex).query<{ id: string }, [string, string, string]>('SELECT id FROM tasks WHERE project_id = ? AND engine = ? AND task_id = ?');
    for (const { engine, taskId } of wanted) {
      const row = probe.get(projectId, storedText(engine), storedText(taskId));
      if (row) out.set(taskKey(engine, taskId), row.id);
    }
    return out;
  }
  const engines = arrayLiteral(wanted.map((w) => storedText(w.engine)));
  const taskIds = arrayLiteral(wanted.map((w) => storedText(w.taskId)));
  const rows = await ex.all<{ id: string; engine: string; task_id: string }>(
    sql`SELECT t.id, t.engine, t.task_id FROM tasks t JOIN unnest(${engines}::text[], ${taskIds}::text[]) AS k(engine, task_id)
        ON t.engine = k.engine AND t.task_id = k.task_id WHERE t.project_id = ${projectId}`,
  );
  for (const r of rows) out.set(taskKey(r.engine, r.task_id), r.id);
  return out;
}

export async function taskOf(ex: Executor, projectId: string, engine: string, taskId: string): Promise<TaskRow | null> {
  const t = ex.t.tasks;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.engine, engine), eq(t.task_id, taskId))))[0] ?? null;
}

export async function workersOf(ex: Executor, projectId: string): Promise<WorkerRow[]> {
  const t = ex.t.workers;
  return ex.q.select().from(t).where(eq(t.project_id, projectId)).orderBy(asc(t.engine), asc(t.name));
}

export async function queuesOf(ex: Executor, projectId: string): Promise<QueueRow[]> {
  const t = ex.t.queues;
  return ex.q.select().from(t).where(eq(t.project_id, projectId)).orderBy(asc(t.engine), asc(t.name));
}
