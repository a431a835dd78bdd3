// Queries of the statistics tables (migration 0011): the roll-up writes of the
// ingest path, the window reads of the stats, trends, home and failure-group
// routes, and the maintenance deletes. Reads never touch events or tasks,
// except the failed-task list, which joins the tasks of one group's page.
import { sql, type SQL } from 'drizzle-orm';
import { arrayLiteral, bulkWrite, sqliteClient, type BulkWrite } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';
import { BIN_COLUMNS } from './histogram.ts';

export const MINUTE = 60;
export const HOUR = 3600;
export type Span = typeof MINUTE | typeof HOUR;

/** Counters of an aggregate row that add up. */
export const COUNTERS = ['received', 'started', 'succeeded', 'failed', 'retried', 'revoked', 'rejected', 'runtime_count', 'runtime_sum_ms'] as const;
export type Counter = (typeof COUNTERS)[number];

/** What a row (or a sum of rows) counts: the counters, and the largest runtime. */
export type Counts = Record<Counter, number> & { runtime_max_ms: number };

/** A row of task_aggregates as the roll-up writes it: its key, its counts and its bins (h00..h29). */
export type AggregateRow = Counts & { project_id: string; span: Span; task_name: string; bucket: number; shard: number } & { [bin: string]: number | string };

/** Sums of a set of aggregate rows (also what the window reads return). */
export type Totals = Counts & { bins: number[] };

export const emptyCounts = (): Counts => ({ ...(Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<Counter, number>), runtime_max_ms: 0 });
export const emptyTotals = (): Totals => ({ ...emptyCounts(), bins: BIN_COLUMNS.map(() => 0) });

/** Adds a row read from the database (numbers, or numeric text) into `into`. */
export function addInto(into: Totals, row: Record<string, unknown>): Totals {
  for (const c of COUNTERS) into[c] += Number(row[c] ?? 0);
  into.runtime_max_ms = Math.max(into.runtime_max_ms, Number(row.runtime_max_ms ?? 0));
  BIN_COLUMNS.forEach((c, i) => (into.bins[i]! += Number(row[c] ?? 0)));
  return into;
}

// --- writes (the ingest path) ------------------------------------------------------

/** Rows per (project, span, task name, bucket) on PostgreSQL (migration 0017): each agent adds to one of them, so
 * uploads of different agents seldom wait on one row's lock; every read sums them. */
export const AGGREGATE_SHARDS = 8;

/** The shard an agent's uploads add to: PostgreSQL spreads agents over AGGREGATE_SHARDS (by a hash of the
 * id, so one agent keeps its rows); SQLite, with its one writer, keeps one row (shard 0). */
export function aggregateShard(ex: Executor, agentId: string): number {
  if (ex.dialect === 'sqlite') return 0;
  let h = 2166136261; // FNV-1a
  for (let i = 0; i < agentId.length; i++) h = Math.imul(h ^ agentId.charCodeAt(i), 16777619);
  return (h >>> 0) % AGGREGATE_SHARDS;
}

const AGG_COLUMNS = ['project_id', 'span', 'task_name', 'bucket', 'shard', ...COUNTERS, 'runtime_max_ms', ...BIN_COLUMNS];
const aggregateWrite = (greatest: string): BulkWrite => ({
  table: 'task_aggregates',
  columns: AGG_COLUMNS,
  json: new Set(),
  pgTypes: Object.fromEntries(AGG_COLUMNS.filter((c) => c !== 'project_id' && c !== 'task_name').map((c) => [c, c === 'bucket' || c.endsWith('_ms') ? 'bigint' : 'integer'])),
  conflict: `ON CONFLICT (project_id, span, task_name, bucket, shard) DO UPDATE SET ${[
    ...[...COUNTERS, ...BIN_COLUMNS].map((c) => `${c} = task_aggregates.${c} + excluded.${c}`),
    `runtime_max_ms = ${greatest}(task_aggregates.runtime_max_ms, excluded.runtime_max_ms)`,
  ].join(', ')}`,
});
const AGGREGATE_WRITE = { sqlite: aggregateWrite('max'), postgres: aggregateWrite('GREATEST') };

const rowOrder = (a: { span: number; task_name: string; bucket: number; shard: number }, b: typeof a): number =>
  a.span - b.span || a.bucket - b.bucket || (a.task_name < b.task_name ? -1 : a.task_name > b.task_name ? 1 : 0) || a.shard - b.shard;

/** Adds `rows` to the stored aggregates (in key order: concurrent PostgreSQL transactions lock shared rows alike). */
export async function addAggregates(ex: Executor, rows: AggregateRow[]): Promise<void> {
  if (rows.length === 0) return;
  rows.sort(rowOrder);
  if (ex.dialect === 'sqlite') {
    await bulkWrite(ex, AGGREGATE_WRITE.sqlite, rows);
    return;
  }
  // The rows as one JSON parameter: an upload's roll-up writes a handful of rows of 44 columns, and
  // the statement with 44 array parameters (bulkWrite's form) took 3.2-3.7 µs an event of
  // `bench/ingest-store.ts --pg` against 1.8-2.4 for this one. Texts are as stored (storedText: no NUL).
  const columns = AGG_COLUMNS.join(', ');
  await ex.run(
    sql`${sql.raw(`INSERT INTO task_aggregates (${columns}) SELECT ${columns} FROM json_populate_recordset(NULL::task_aggregates, `)}${JSON.stringify(rows)}${sql.raw(
      `::json) ${AGGREGATE_WRITE.postgres.conflict}`,
    )}`,
  );
}

export interface FailureTaskRow {
  project_id: string;
  engine: string;
  task_id: string;
  group_key: string;
  task_name: string;
  failed_at: string;
}

export const failureTaskKey = (engine: string, taskId: string): string => `${engine}\u0000${taskId}`;

/** Records each task's first failure; returns the keys (failureTaskKey) of those not recorded before.
 * Texts must be as stored already (storedText), so the keys match what PostgreSQL returns. */
export async function recordFailedTasks(ex: Executor, rows: FailureTaskRow[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  if (rows.length === 0) return fresh;
  rows.sort((a, b) => (failureTaskKey(a.engine, a.task_id) < failureTaskKey(b.engine, b.task_id) ? -1 : 1));
  const text = 'INSERT INTO failure_group_tasks (project_id, engine, task_id, group_key, task_name, failed_at)';
  if (ex.dialect === 'sqlite') {
    const statement = sqliteClient(ex).query(`${text} VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
    for (const r of rows) {
      if (statement.run(r.project_id, r.engine, r.task_id, r.group_key, r.task_name, r.failed_at).changes > 0) fresh.add(failureTaskKey(r.engine, r.task_id));
    }
    return fresh;
  }
  const arrays = (['project_id', 'engine', 'task_id', 'group_key', 'task_name', 'failed_at'] as const).map((k) => sql`${arrayLiteral(rows.map((r) => r[k]))}::text[]`);
  const inserted = await ex.all<{ engine: string; task_id: string }>(
    sql`${sql.raw(text)} SELECT * FROM unnest(${sql.join(arrays, sql`, `)}) ON CONFLICT DO NOTHING RETURNING engine, task_id`,
  );
  for (const r of inserted) fresh.add(failureTaskKey(r.engine, r.task_id));
  return fresh;
}

export type FailureAggregateRow = {
  project_id: string;
  span: Span;
  bucket: number;
  group_key: string;
  task_name: string;
  failures: number;
};

const FAILURE_AGGREGATE_WRITE: BulkWrite = {
  table: 'failure_aggregates',
  columns: ['project_id', 'span', 'bucket', 'group_key', 'task_name', 'failures'],
  json: new Set(),
  pgTypes: { span: 'integer', bucket: 'bigint', failures: 'integer' },
  conflict: 'ON CONFLICT (project_id, span, bucket, group_key, task_name) DO UPDATE SET failures = failure_aggregates.failures + excluded.failures',
};

export type FailureGroupRow = {
  project_id: string;
  group_key: string;
  exception_type: string;
  message: string;
  sample_message: string;
  failures: number;
  first_seen: string;
  last_seen: string;
};

const failureGroupWrite = (least: string, greatest: string): BulkWrite => ({
  table: 'failure_groups',
  columns: ['project_id', 'group_key', 'exception_type', 'message', 'sample_message', 'failures', 'first_seen', 'last_seen'],
  json: new Set(),
  pgTypes: { failures: 'bigint' },
  conflict: `ON CONFLICT (project_id, group_key) DO UPDATE SET failures = failure_groups.failures + excluded.failures, first_seen = ${least}(failure_groups.first_seen, excluded.first_seen), last_seen = ${greatest}(failure_groups.last_seen, excluded.last_seen)`,
});
const FAILURE_GROUP_WRITE = { sqlite: failureGroupWrite('min', 'max'), postgres: failureGroupWrite('LEAST', 'GREATEST') };

export async function addFailures(ex: Executor, groups: FailureGroupRow[], aggregates: FailureAggregateRow[]): Promise<void> {
  if (groups.length === 0) return;
  await bulkWrite(ex, FAILURE_GROUP_WRITE[ex.dialect], groups.sort((a, b) => (a.group_key < b.group_key ? -1 : 1)));
  const order = (a: FailureAggregateRow, b: FailureAggregateRow) =>
    a.span - b.span || a.bucket - b.bucket || (a.group_key < b.group_key ? -1 : a.group_key > b.group_key ? 1 : a.task_name < b.task_name ? -1 : 1);
  await bulkWrite(ex, FAILURE_AGGREGATE_WRITE, aggregates.sort(order));
}

// --- window reads ------------------------------------------------------------------

/** One piece of a time range read at one resolution: rows of `span` with bucket in [from, to). */
export interface Part {
  span: Span;
  from: number;
  to: number;
}

const sumOf = (c: string) => sql.raw(`CAST(COALESCE(SUM(${c}), 0) AS BIGINT) AS ${c}`);
const TOTALS_SELECT = sql.join([...[...COUNTERS, ...BIN_COLUMNS].map(sumOf), sql.raw('CAST(COALESCE(MAX(runtime_max_ms), 0) AS BIGINT) AS runtime_max_ms')], sql`, `);
const inList = (values: readonly string[]) => sql.join(values.map((v) => sql`${v}`), sql`, `);

/** The aggregate rows of `parts` (each an index range), as one derived table. */
function rowsOf(projectIds: readonly string[], parts: readonly Part[], taskName: SQL): SQL {
  const pieces = parts.map(
    (p) =>
      sql`SELECT * FROM task_aggregates WHERE project_id IN (${inList(projectIds)}) AND span = ${p.span} AND ${taskName} AND bucket >= ${p.from} AND bucket < ${p.to}`,
  );
  return sql.join(pieces, sql` UNION ALL `);
}

/** Per project, the sums over `parts` of the project-wide rows (or of one task name's). */
export async function projectTotals(ex: Executor, projectIds: readonly string[], parts: readonly Part[], taskName = ''): Promise<Map<string, Totals>> {
  const out = new Map<string, Totals>();
  if (projectIds.length === 0 || parts.length === 0) return out;
  const rows = await ex.all<Record<string, unknown>>(
    sql`SELECT project_id, ${TOTALS_SELECT} FROM (${rowsOf(projectIds, parts, sql`task_name = ${taskName}`)}) AS a GROUP BY project_id`,
  );
  for (const r of rows) out.set(String(r.project_id), addInto(emptyTotals(), r));
  return out;
}

export interface NameCounts {
  project_id: string;
  task_name: string;
  /** Which part of the split window: 0 before `split`, 1 from it. */
  half: 0 | 1;
  succeeded: number;
  failed: number;
}

/** Per project and task name, successes and failures over `parts`, before and from `split` (Unix seconds). */
export async function nameCounts(ex: Executor, projectIds: readonly string[], parts: readonly Part[], split: number): Promise<NameCounts[]> {
  if (projectIds.length === 0 || parts.length === 0) return [];
  const pieces = parts.map(
    (p) =>
      sql`SELECT project_id, task_name, CASE WHEN bucket < ${split} THEN 0 ELSE 1 END AS half, succeeded, failed FROM task_aggregates
          WHERE project_id IN (${inList(projectIds)}) AND span = ${p.span} AND bucket >= ${p.from} AND bucket < ${p.to} AND task_name <> ''`,
  );
  const rows = await ex.all<NameCounts>(
    sql`SELECT project_id, task_name, half, CAST(SUM(succeeded) AS BIGINT) AS succeeded, CAST(SUM(failed) AS BIGINT) AS failed
        FROM (${sql.join(pieces, sql` UNION ALL `)}) AS a GROUP BY project_id, task_name, half`,
  );
  return rows.map((r) => ({ ...r, half: Number(r.half) as 0 | 1, succeeded: Number(r.succeeded), failed: Number(r.failed) }));
}

/** One series (the project's, or one task name's) over `part`, summed per slot of `width` seconds from
 * `part.from` (slot number -> sums). Slots of one row are read as rows; wider ones are summed by the
 * database, which sends one row a slot instead of all it read (a day's 1,440 minute rows in 96 slots
 * of 15 minutes, say). */
export async function seriesTotals(ex: Executor, projectId: string, part: Part, taskName: string, width: number): Promise<Map<number, Totals>> {
  const where = sql`project_id = ${projectId} AND span = ${part.span} AND task_name = ${taskName} AND bucket >= ${part.from} AND bucket < ${part.to}`;
  const out = new Map<number, Totals>();
  if (width === part.span) {
    // A bucket's shards (AGGREGATE_SHARDS) come as rows of their own: summed here.
    for (const r of await ex.all<Record<string, unknown>>(sql`SELECT * FROM task_aggregates WHERE ${where}`)) {
      const slot = (Number(r.bucket) - part.from) / width;
      out.set(slot, addInto(out.get(slot) ?? emptyTotals(), r));
    }
    return out;
  }
  const slot = sql`CAST((bucket - ${part.from}) / ${width} AS BIGINT)`;
  for (const r of await ex.all<Record<string, unknown>>(sql`SELECT ${slot} AS slot, ${TOTALS_SELECT} FROM task_aggregates WHERE ${where} GROUP BY 1`)) {
    out.set(Number(r.slot), addInto(emptyTotals(), r));
  }
  return out;
}

/** Start (Unix seconds) of each project's latest minute or hour with task activity. */
export async function lastActivity(ex: Executor, projectIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (projectIds.length === 0) return out;
  // Per project and span a backwards walk of the primary key (project_id, span, task_name, bucket); in
  // slices, as SQLite takes at most 500 terms in one compound SELECT.
  for (let i = 0; i < projectIds.length; i += 100) {
    const pieces = projectIds.slice(i, i + 100).flatMap((id) =>
      [MINUTE, HOUR].map((span) => sql`SELECT ${id} AS project_id, (SELECT MAX(bucket) FROM task_aggregates WHERE project_id = ${id} AND span = ${span} AND task_name = '') AS bucket`),
    );
    for (const r of await ex.all<{ project_id: string; bucket: number | string | null }>(sql.join(pieces, sql` UNION ALL `))) {
      if (r.bucket === null) continue;
      out.set(r.project_id, Math.max(out.get(r.project_id) ?? 0, Number(r.bucket)));
    }
  }
  return out;
}

/** Stored names of tasks (by failureTaskKey of their texts as stored); tasks unknown or unnamed are absent. */
export async function storedTaskNames(ex: Executor, projectId: string, tasks: readonly { engine: string; task_id: string }[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < tasks.length; i += 500) {
    const pairs = sql.join(tasks.slice(i, i + 500).map((t) => sql`(${t.engine}, ${t.task_id})`), sql`, `);
    const rows = await ex.all<{ engine: string; task_id: string; name: string }>(
      sql`SELECT engine, task_id, name FROM tasks WHERE project_id = ${projectId} AND (engine, task_id) IN (VALUES ${pairs}) AND name IS NOT NULL`,
    );
    for (const r of rows) out.set(failureTaskKey(r.engine, r.task_id), r.name);
  }
  return out;
}

// --- agents, workers and commands of a set of projects ------------------------------

export interface AgentFacts {
  project_id: string;
  id: string;
  name: string;
  state: string;
  last_seen_at: string | null;
}

/** Live (not revoked) agents of the projects. */
export const agentsOf = (ex: Executor, projectIds: readonly string[]): Promise<AgentFacts[]> =>
  projectIds.length === 0
    ? Promise.resolve([])
    : ex.all<AgentFacts>(
        sql`SELECT project_id, id, name, state, last_seen_at FROM agents WHERE project_id IN (${inList(projectIds)}) AND revoked_at IS NULL ORDER BY project_id, name`,
      );

/** Per project, workers known and workers online (state online and heard from since `freshSince`). */
export async function workerCounts(ex: Executor, projectIds: readonly string[], freshSince: string): Promise<Map<string, { total: number; online: number }>> {
  const out = new Map<string, { total: number; online: number }>();
  if (projectIds.length === 0) return out;
  const rows = await ex.all<{ project_id: string; total: number; online: number }>(
    sql`SELECT project_id, COUNT(*) AS total,
          COALESCE(SUM(CASE WHEN state = 'online' AND COALESCE(last_heartbeat, updated_at) >= ${freshSince} THEN 1 ELSE 0 END), 0) AS online
        FROM workers WHERE project_id IN (${inList(projectIds)}) GROUP BY project_id`,
  );
  for (const r of rows) out.set(r.project_id, { total: Number(r.total), online: Number(r.online) });
  return out;
}

export interface CommandFacts {
  pending: number;
  dispatched: number;
  stuck: number;
  completed: number;
  failed: number;
  timeout: number;
}

/** Per project: commands open now (pending, dispatched, and of those the ones past their timeout_at), and
 * commands issued since `since` that completed, failed or timed out. */
export async function commandCounts(ex: Executor, projectIds: readonly string[], now: string, since: string): Promise<Map<string, CommandFacts>> {
  const out = new Map<string, CommandFacts>();
  if (projectIds.length === 0) return out;
  const ids = inList(projectIds);
  const [open, ended] = await Promise.all([
    ex.all<{ project_id: string; status: string; n: number; stuck: number }>(
      sql`SELECT project_id, status, COUNT(*) AS n, COALESCE(SUM(CASE WHEN timeout_at < ${now} THEN 1 ELSE 0 END), 0) AS stuck
          FROM commands WHERE project_id IN (${ids}) AND status IN ('pending', 'dispatched') GROUP BY project_id, status`,
    ),
    ex.all<{ project_id: string; status: string; n: number }>(
      sql`SELECT project_id, status, COUNT(*) AS n FROM commands
          WHERE project_id IN (${ids}) AND issued_at >= ${since} AND status IN ('completed', 'failed', 'timeout') GROUP BY project_id, status`,
    ),
  ]);
  const of = (id: string) => {
    let f = out.get(id);
    if (!f) out.set(id, (f = { pending: 0, dispatched: 0, stuck: 0, completed: 0, failed: 0, timeout: 0 }));
    return f;
  };
  for (const r of open) {
    const f = of(r.project_id);
    f[r.status as 'pending' | 'dispatched'] += Number(r.n);
    f.stuck += Number(r.stuck);
  }
  for (const r of ended) of(r.project_id)[r.status as 'completed' | 'failed' | 'timeout'] += Number(r.n);
  return out;
}

// --- failure groups ----------------------------------------------------------------------

export interface GroupNameCount {
  group_key: string;
  task_name: string;
  failures: number;
}

/** Failures per group and task name over `parts`. */
export async function groupNameCounts(ex: Executor, projectId: string, parts: readonly Part[]): Promise<GroupNameCount[]> {
  if (parts.length === 0) return [];
  const pieces = parts.map(
    (p) => sql`SELECT group_key, task_name, failures FROM failure_aggregates WHERE project_id = ${projectId} AND span = ${p.span} AND bucket >= ${p.from} AND bucket < ${p.to}`,
  );
  const rows = await ex.all<GroupNameCount>(
    sql`SELECT group_key, task_name, CAST(SUM(failures) AS BIGINT) AS failures FROM (${sql.join(pieces, sql` UNION ALL `)}) AS a GROUP BY group_key, task_name`,
  );
  return rows.map((r) => ({ ...r, failures: Number(r.failures) }));
}

/** Failures per group and bucket of `part` (the groups named). */
export async function groupSeries(ex: Executor, projectId: string, part: Part, keys: readonly string[]): Promise<{ group_key: string; bucket: number; failures: number }[]> {
  if (keys.length === 0) return [];
  const rows = await ex.all<{ group_key: string; bucket: number; failures: number }>(
    sql`SELECT group_key, bucket, CAST(SUM(failures) AS BIGINT) AS failures FROM failure_aggregates
        WHERE project_id = ${projectId} AND span = ${part.span} AND bucket >= ${part.from} AND bucket < ${part.to} AND group_key IN (${inList(keys)})
        GROUP BY group_key, bucket`,
  );
  return rows.map((r) => ({ group_key: r.group_key, bucket: Number(r.bucket), failures: Number(r.failures) }));
}

export async function failureGroupsByKey(ex: Executor, projectId: string, keys: readonly string[]): Promise<FailureGroupRow[]> {
  if (keys.length === 0) return [];
  const rows = await ex.all<FailureGroupRow>(sql`SELECT * FROM failure_groups WHERE project_id = ${projectId} AND group_key IN (${inList(keys)})`);
  return rows.map((r) => ({ ...r, failures: Number(r.failures) }));
}

export interface FailedTaskRow {
  engine: string;
  task_id: string;
  task_name: string;
  failed_at: string;
  task_ref: string | null;
  state: string | null;
  queue: string | null;
  worker_name: string | null;
  exception: string | null;
  retry_count: number | null;
  runtime_ms: number | null;
}

/** A page of a group's failed tasks, newest failure first, with what the task row says now (null when pruned). */
export async function failedTasksPage(
  ex: Executor,
  projectId: string,
  groupKey: string,
  o: { since?: string; until?: string; before?: { failed_at: string; engine: string; task_id: string }; limit: number },
): Promise<FailedTaskRow[]> {
  const conds = [sql`g.project_id = ${projectId}`, sql`g.group_key = ${groupKey}`];
  if (o.since) conds.push(sql`g.failed_at >= ${o.since}`);
  if (o.until) conds.push(sql`g.failed_at < ${o.until}`);
  if (o.before) conds.push(sql`(g.failed_at, g.engine, g.task_id) < (${o.before.failed_at}, ${o.before.engine}, ${o.before.task_id})`);
  const rows = await ex.all<FailedTaskRow>(
    sql`SELECT g.engine, g.task_id, g.task_name, g.failed_at, t.id AS task_ref, t.state, t.queue, t.worker_name, t.exception, t.retry_count, t.runtime_ms
        FROM failure_group_tasks g LEFT JOIN tasks t ON t.project_id = g.project_id AND t.engine = g.engine AND t.task_id = g.task_id
        WHERE ${sql.join(conds, sql` AND `)}
        ORDER BY g.failed_at DESC, g.engine DESC, g.task_id DESC LIMIT ${o.limit}`,
  );
  return rows.map((r) => ({ ...r, retry_count: r.retry_count === null ? null : Number(r.retry_count), runtime_ms: r.runtime_ms === null ? null : Number(r.runtime_ms) }));
}

// --- maintenance -------------------------------------------------------------------------

export const projectIdsWithStats = (ex: Executor): Promise<{ id: string }[]> => ex.all(sql`SELECT id FROM projects ORDER BY id`);

/** Deletes up to `batch` rows of `table` of one project matching `where` (by primary key); returns how many. */
async function deleteBatch(ex: Executor, table: string, key: string, projectId: string, where: SQL, batch: number): Promise<number> {
  const rows = await ex.all<{ n: number }>(
    sql`DELETE FROM ${sql.raw(table)} WHERE (${sql.raw(key)}) IN (SELECT ${sql.raw(key)} FROM ${sql.raw(table)} WHERE project_id = ${projectId} AND ${where} LIMIT ${batch}) RETURNING 1 AS n`,
  );
  return rows.length;
}

export const pruneAggregates = (ex: Executor, projectId: string, span: Span, before: number, batch: number) =>
  deleteBatch(ex, 'task_aggregates', 'project_id, span, task_name, bucket, shard', projectId, sql`span = ${span} AND bucket < ${before}`, batch);
export const pruneFailureAggregates = (ex: Executor, projectId: string, span: Span, before: number, batch: number) =>
  deleteBatch(ex, 'failure_aggregates', 'project_id, span, bucket, group_key, task_name', projectId, sql`span = ${span} AND bucket < ${before}`, batch);
export const pruneFailedTasks = (ex: Executor, projectId: string, before: string, batch: number) =>
  deleteBatch(ex, 'failure_group_tasks', 'project_id, engine, task_id', projectId, sql`failed_at < ${before}`, batch);
export const pruneFailureGroups = (ex: Executor, projectId: string, before: string, batch: number) =>
  deleteBatch(ex, 'failure_groups', 'project_id, group_key', projectId, sql`last_seen < ${before}`, batch);
