// Queries of the task, worker and queue projections. Upserts merge in SQL
// (ON CONFLICT ... DO UPDATE with CASE/COALESCE) so concurrent batches from
// several agents about one task never lose each other's fields.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Database, Statement } from 'bun:sqlite';
import { arrayLiteral, bulkWrite, cellsOf, sqliteClient, storedText, type BulkWrite } from '../db/bulk.ts';
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

const TASK_COLUMNS = [
  'id', 'project_id', 'engine', 'task_id', 'name', 'queue', 'state', 'state_tier', 'state_at', 'priority', 'args', 'kwargs', 'result',
  'exception', 'traceback', 'retry_count', 'eta', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'worker_name',
  'parent_task_id', 'root_task_id', 'tags', 'created_at', 'updated_at',
] as const;
const TASK_CONFLICT = 'ON CONFLICT (project_id, engine, task_id) DO UPDATE SET';

/** How a stored task takes each reported column: set whenever a report arrives (the state
 * machine's columns and updated_at) ... */
const TASK_SET_ALWAYS = [pick('state'), pick('state_tier'), pick('state_at'), 'updated_at = excluded.updated_at'];
/** ... or only when the report carries a value (the expression keeps the stored one otherwise). */
const TASK_SET_CARRIED: readonly (readonly [column: (typeof TASK_COLUMNS)[number], set: string])[] = [
  ['name', NAME],
  ...LATEST_WINS.map((c) => [c, newer('tasks', c)] as const),
  ['retry_count', 'retry_count = tasks.retry_count + excluded.retry_count'],
  ['received_at', earliest('received_at')],
  ['tags', unlessEmpty('tasks', 'tags', '[]')],
];

const TASK_WRITE: BulkWrite = {
  table: 'tasks',
  columns: TASK_COLUMNS,
  json: new Set(['args', 'kwargs', 'result', 'tags']),
  pgTypes: { state_tier: 'integer', retry_count: 'integer', runtime_ms: 'bigint' },
  conflict: `${TASK_CONFLICT} ${[...TASK_SET_ALWAYS.slice(0, 3), ...TASK_SET_CARRIED.map(([, set]) => set), TASK_SET_ALWAYS[3]].join(', ')}`,
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
 * PostgreSQL refuses to update one row twice in a statement); `stored`, those of
 * them read in this transaction beforehand (storedTasks). A task already
 * stored keeps its row id. On PostgreSQL returns the row ids as stored, which
 * tell a task another transaction created meanwhile; SQLite's one writer never
 * meets one, and RETURNING on its upsert costs some 15 µs a row (measured), so
 * there: null. */
export async function upsertTasks(ex: Executor, rows: TaskRow[], stored: ReadonlyMap<string, StoredTask>): Promise<Set<string> | null> {
  if (ex.dialect === 'sqlite') {
    upsertTasksSqlite(sqliteClient(ex), rows, stored);
    return null;
  }
  // PostgreSQL: the search vector of a task not stored yet is computed in the statement; a stored
  // task's row proposes none, and the tasks_search trigger computes it again only when its searched
  // text changes (migration 0018). A task created meanwhile by another transaction gets a vector
  // computed for nothing; one deleted meanwhile is inserted without one, and the trigger computes it.
  const flagged = rows.map((row) => ({ ...row, search_vector: stored.has(taskKey(row.engine, row.task_id)) ? null : 'new' }));
  return new Set((await bulkWrite(ex, TASK_WRITE_PG, flagged)) as string[]);
}

/** PostgreSQL: the task write, with the search vector of the rows flagged new, reporting row ids.
 * Ingest writes every report as INSERT ... ON CONFLICT DO UPDATE, and the BEFORE INSERT trigger that
 * computed the vector ran for the proposed row of each, a stored task's too: a task reported three
 * times had it computed four times (bench/ingest-store.ts --lifecycle), now twice. */
const TASK_WRITE_PG: BulkWrite = {
  ...TASK_WRITE,
  columns: [...TASK_COLUMNS, 'search_vector'],
  pgSelect: {
    search_vector: "CASE WHEN u.search_vector = 'new' THEN tasks_search_vector(u.name, u.args::jsonb, u.kwargs::jsonb, u.result::jsonb, u.exception) END",
  },
  report: 'id',
};

const SEARCHED = ['name', 'args', 'kwargs', 'result', 'exception'] as const;
type Searched = Record<(typeof SEARCHED)[number], string | null>;
type StoredSearch = Searched & { r: number };
const column = (name: (typeof TASK_COLUMNS)[number]): number => TASK_COLUMNS.indexOf(name);
const SEARCHED_AT = SEARCHED.map(column);
const CARRIED_AT = TASK_SET_CARRIED.map(([c]) => column(c));

/** A cell that changes nothing when a stored task takes it (see TASK_SET_CARRIED). */
const carriesNothing = (name: string, cell: unknown): boolean => cell === null || (name === 'retry_count' && cell === 0) || (name === 'tags' && cell === '[]');

/** SQLite: the upsert of each row names in its SET list only the columns the row carries. SQLite
 * rewrites the entry of every index over a column named in SET, changed or not, so the one
 * statement naming them all rewrote the task's eight secondary indexes for each report of it (a
 * task.started carries no result, a task.succeeded no arguments). One statement per set of
 * columns carried (a bit each), per connection, held here: looking its text up in bun:sqlite's
 * cache for every row (a hash of 1.5 kB) cost as much as the write. */
const upserts = new WeakMap<Database, Map<number, Statement>>();
const ALL_CARRIED = 2 ** TASK_SET_CARRIED.length - 1;
function upsertStatement(client: Database, cells: (string | number | null)[] | null): Statement {
  // A new row (null): its SET list never runs, so any statement does.
  let mask = cells ? 0 : ALL_CARRIED;
  if (cells) for (let i = 0; i < TASK_SET_CARRIED.length; i++) if (!carriesNothing(TASK_SET_CARRIED[i]![0], cells[CARRIED_AT[i]!])) mask |= 1 << i;
  let cached = upserts.get(client);
  if (!cached) upserts.set(client, (cached = new Map()));
  let statement = cached.get(mask);
  if (!statement) {
    const sets = [...TASK_SET_ALWAYS, ...TASK_SET_CARRIED.filter((_, i) => mask & (1 << i)).map(([, set]) => set)];
    const marks = TASK_COLUMNS.map(() => '?').join(', ');
    cached.set(mask, (statement = client.query(`INSERT INTO tasks (${TASK_COLUMNS.join(', ')}) VALUES (${marks}) ${TASK_CONFLICT} ${sets.join(', ')}`)));
  }
  return statement;
}

/** SQLite: the rows and their search index entries (migrations 0010, 0020). `stored` holds each stored
 * task as read in this transaction (SQLite's one writer: nothing changed since); a task absent from
 * it is new. A searched value a task already holds is left out of the write (z4j agents repeat the
 * task's name in every event), and its search entries are written only when a searched value changed. */
function upsertTasksSqlite(client: Database, rows: TaskRow[], stored: ReadonlyMap<string, StoredTask>): void {
  const added: [rowid: number, values: (string | number | null)[]][] = [];
  const completed: number[] = [];
  const rewritten: number[] = [];
  for (const row of rows) {
    const cells = cellsOf(TASK_WRITE, row);
    const before = stored.size > 0 ? stored.get(taskKey(row.engine, row.task_id))?.search : undefined;
    if (!before) {
      const { lastInsertRowid } = upsertStatement(client, null).run(...(cells as never[]));
      added.push([Number(lastInsertRowid), SEARCHED_AT.map((i) => cells[i]!)]);
      continue;
    }
    let gained = false;
    let replaced = false;
    SEARCHED.forEach((name, i) => {
      const at = SEARCHED_AT[i]!;
      const cell = cells[at];
      if (cell === null) return;
      // Unchanged by the write: the value held already, or a placeholder name where a name is known (NAME).
      if (cell === before[name] || (name === 'name' && before.name !== null && isPlaceholderName(cell as string))) cells[at] = null;
      else if (before[name] === null) gained = true;
      else replaced = true;
    });
    upsertStatement(client, cells).run(...(cells as never[]));
    if (replaced) rewritten.push(before.r);
    else if (gained) completed.push(before.r);
  }
  indexForSearch(client, added, completed, rewritten);
}

/** SQLite: a task's search entries (migration 0020). Entry 2r (r: the task's rowid) is made when the
 * task is first stored; entry 2r+1, the completion entry, is made again whenever a report adds
 * searched values the task did not hold (its result, its exception), from the row as stored then. A
 * task's entries are adjacent in rowid order (ftsWalk reads them as one task) and each holds only
 * words of the task's current text, the last one all of them: since a search is words and phrases
 * that must all appear, a task matches exactly when its text as stored does. A report that replaces
 * a value (a new exception, a real name for a placeholder) would leave the old words in entry 2r, so
 * then both entries are deleted and 2r made again from the row as stored.
 *
 * Adding an entry costs FTS5 a third of what replacing one does (a contentless entry is deleted by
 * rowid through a tombstone): with task lifecycles (received, then the result) 1.1 against 3.9 µs an
 * event. Deletes come first: FTS5 flushes the terms it holds in memory to a new segment before a
 * delete, so interleaved they would cost a segment per row. Values are bound, not selected into the
 * index: INSERT INTO a virtual table ... SELECT stages its rows first and cost twice as much. */
function indexForSearch(client: Database, added: [number, (string | number | null)[]][], completed: number[], rewritten: number[]): void {
  const columns = SEARCHED.join(', ');
  if (completed.length + rewritten.length > 0) {
    const drop = client.query('DELETE FROM tasks_fts WHERE rowid = ?');
    for (const r of completed) drop.run(2 * r + 1);
    for (const r of rewritten) {
      drop.run(2 * r);
      drop.run(2 * r + 1);
    }
  }
  const add = client.query(`INSERT INTO tasks_fts (rowid, ${columns}) VALUES (?, ?, ?, ?, ?, ?)`);
  for (const [r, values] of added) add.run(2 * r, ...(values as never[]));
  if (completed.length + rewritten.length === 0) return;
  const read = client.query<Searched, [number]>(`SELECT ${columns} FROM tasks WHERE rowid = ?`);
  const addNow = (entry: number, r: number) => {
    const now = read.get(r)!;
    add.run(entry, ...SEARCHED.map((name) => now[name]));
  };
  for (const r of completed) addNow(2 * r + 1, r);
  for (const r of rewritten) addNow(2 * r, r);
}

export const upsertWorkers = (ex: Executor, rows: WorkerRow[]): Promise<unknown> => bulkWrite(ex, WORKER_WRITE, rows);
export const upsertQueues = (ex: Executor, rows: QueueRow[]): Promise<unknown> => bulkWrite(ex, QUEUE_WRITE, rows);

/** A stored task as ingest reads it before writing: its row id; its start and end and whether it
 * holds a runtime (the projection derives a runtime for a task none was reported for, the roll-up
 * times an end from a start an earlier upload brought); and on SQLite its rowid and searched text
 * (upsertTasks needs them). One read serves all. */
export interface StoredTask {
  id: string;
  started_at: string | null;
  finished_at: string | null;
  timed: boolean;
  search?: StoredSearch;
}
/** The columns of a stored task the projection and the roll-up read (see StoredTask). */
const TIMES = 'started_at, finished_at, runtime_ms IS NOT NULL AS timed';
type StoredTimes = { started_at: string | null; finished_at: string | null; timed: boolean | number };
const storedTask = (id: string, row: StoredTimes, search?: StoredSearch): StoredTask => ({
  id,
  started_at: row.started_at,
  finished_at: row.finished_at,
  timed: Boolean(row.timed),
  search,
});

/** The project's tasks named in `tasks`, by taskKey; unknown tasks are absent. */
export async function storedTasks(ex: Executor, projectId: string, tasks: Iterable<{ engine: string; taskId: string }>): Promise<Map<string, StoredTask>> {
  const out = new Map<string, StoredTask>();
  const wanted = [...tasks];
  if (wanted.length === 0) return out;
  if (ex.dialect === 'sqlite') {
    // A prepared probe per task: a few microseconds each, where a query builder takes tens.
    const probe = sqliteClient(ex).query<StoredSearch & StoredTimes & { id: string }, [string, string, string]>(
      `SELECT id, rowid AS r, ${SEARCHED.join(', ')}, ${TIMES} FROM tasks WHERE project_id = ? AND engine = ? AND task_id = ?`,
    );
    for (const { engine, taskId } of wanted) {
      const row = probe.get(projectId, storedText(engine), storedText(taskId));
      if (row) out.set(taskKey(engine, taskId), storedTask(row.id, row, row));
    }
    return out;
  }
  const engines = arrayLiteral(wanted.map((w) => storedText(w.engine)));
  const taskIds = arrayLiteral(wanted.map((w) => storedText(w.taskId)));
  // One index probe per key, whatever the planner thinks of the table: as a plain join, with statistics
  // older than the table's growth, it hashed every task of the project for each upload (11.8 ms for 500
  // keys at 20,000 tasks, growing with the project, against 1.9 ms this way). LIMIT 1 (the key is unique)
  // keeps the lateral subquery from being flattened back into that join.
  const rows = await ex.all<StoredTimes & { id: string; engine: string; task_id: string }>(
    sql`SELECT t.*, k.engine, k.task_id FROM unnest(${engines}::text[], ${taskIds}::text[]) AS k(engine, task_id)
        CROSS JOIN LATERAL (SELECT id, ${sql.raw(TIMES)} FROM tasks WHERE project_id = ${projectId} AND engine = k.engine AND task_id = k.task_id LIMIT 1) AS t`,
  );
  for (const r of rows) out.set(taskKey(r.engine, r.task_id), storedTask(r.id, r));
  return out;
}

/** Row ids of the project's tasks named in `tasks`, by taskKey; unknown tasks are absent. */
export async function taskRowIds(ex: Executor, projectId: string, tasks: Iterable<{ engine: string; taskId: string }>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [key, task] of await storedTasks(ex, projectId, tasks)) out.set(key, task.id);
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
