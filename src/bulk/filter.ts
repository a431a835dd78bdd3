// The task filter of bulk jobs and bulk deletes: the fields of GET /tasks
// (state, engine, name, queue, worker, priority, since/until on when svc first
// heard of the task, and its full-text search q), explicit task ids (a
// selection of rows), a failure group's key and an exact task name (the
// dashboard's "retry this group", narrowed to the task name the failure groups
// page shows). Its matches are read once, oldest first, when the job is
// created; later tasks never join it.
//
// A filter with q is read by the task list's own search (tasks/explorer.ts
// tasksOfFilter, in first-seen order: every match, never search_truncated),
// with the fields only bulk filters have as conditions on its rows; one
// without q by the query here. Adding a field means: a property here, a
// condition in listConditions (a field the list has: also passed to the
// explorer, see searchMatches) or ownConditions, and nothing else; the job
// stores the filter as given and the items it matched.
import { Type, type Static } from '@sinclair/typebox';
import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { ApiError, validationFailed, type FieldError } from '../http/errors.ts';
import { GroupKey } from '../stats/schemas.ts';
import { ID_MATCHES, tasksOfFilter } from '../tasks/explorer.ts';
import { PriorityFilterSchema, TaskStateSchema } from '../tasks/schemas.ts';
import { MAX_QUERY_CHARS, parseSearch } from '../tasks/search.ts';

const Ts = Type.String({ pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\+00:00$' });

export const TaskFilterSchema = Type.Object(
  {
    state: Type.Optional(TaskStateSchema),
    engine: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'case-insensitive substring of the task name' })),
    task_name: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'the task name exactly (as failure groups and stats name tasks)' })),
    queue: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    worker: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    priority: Type.Optional({ ...PriorityFilterSchema, description: 'comma-separated priorities (critical, high, normal, low), as the task list takes them' }),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_QUERY_CHARS,
        description:
          "the task list's full-text search (GET /tasks q, the same words, phrases and prefixes): the tasks the list finds for it, its word matches and, for a q without spaces, the up to ten tasks whose id is q or starts with it that lead the list. Every match counts: the matches are read oldest first as the list sorted by created_at reads them, which no cap cuts short (search_truncated is only ever true for the list's other sorts), up to the job's limit (truncated says when more matched). A q the list refuses is refused here, 422 on /filter/q",
      }),
    ),
    since: Type.Optional(Ts),
    until: Type.Optional(Ts),
    task_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 1000, description: 'these tasks only (with engine: of that engine)' })),
    failure_group: Type.Optional({ ...GroupKey, description: 'the tasks of this failure group (GET /failure-groups): those whose first failure fell in it' }),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    $id: 'TaskFilter',
    description: 'The fields of GET /tasks, its search q and priority included (since/until bound when svc first heard of a task), plus task_ids, failure_group and task_name (exact); at least one.',
  },
);
export type TaskFilter = Static<typeof TaskFilterSchema>;

export interface MatchedTask {
  id: string;
  engine: string;
  task_id: string;
  name: string | null;
}

/** The conditions of the fields the task list has too (but q). */
function listConditions(ex: Executor, f: TaskFilter): SQL[] {
  const t = ex.t.tasks;
  const conds: SQL[] = [];
  if (f.state) conds.push(eq(t.state, f.state));
  if (f.engine) conds.push(eq(t.engine, f.engine));
  if (f.queue) conds.push(eq(t.queue, f.queue));
  if (f.worker) conds.push(eq(t.worker_name, f.worker));
  if (f.name) {
    const literal = f.name.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    conds.push(sql`lower(${t.name}) LIKE ${`%${literal}%`} ESCAPE '\\'`);
  }
  if (f.priority) conds.push(inArray(t.priority, [...new Set(f.priority.split(','))]));
  if (f.since) conds.push(sql`${t.created_at} >= ${f.since}`);
  if (f.until) conds.push(sql`${t.created_at} < ${f.until}`);
  return conds;
}

/** The conditions of the fields only bulk filters have. */
function ownConditions(ex: Executor, projectId: string, f: TaskFilter): SQL[] {
  const t = ex.t.tasks;
  const conds: SQL[] = [];
  if (f.task_name) conds.push(eq(t.name, f.task_name));
  if (f.task_ids) conds.push(inArray(t.task_id, f.task_ids));
  // A group's tasks are listed at ingest (failure_group_tasks, keyed like tasks by engine and task id). The
  // subquery reads them once through its (project_id, group_key, ...) index, so the group may hold more tasks
  // than task_ids takes and no list of ids travels through the request.
  if (f.failure_group) {
    conds.push(
      sql`(${t.engine}, ${t.task_id}) IN (SELECT g.engine, g.task_id FROM failure_group_tasks g WHERE g.project_id = ${projectId} AND g.group_key = ${f.failure_group})`,
    );
  }
  return conds;
}

/** The project's tasks matching `f`, oldest first, at most `limit`. A `q` the task list refuses is the
 * list's 422, on the body's /filter/q. */
export async function matchTasks(ex: Executor, projectId: string, f: TaskFilter, limit: number): Promise<MatchedTask[]> {
  if (f.q !== undefined) return searchMatches(ex, projectId, f.q, f, limit);
  const t = ex.t.tasks;
  return ex.q
    .select({ id: t.id, engine: t.engine, task_id: t.task_id, name: t.name })
    .from(t)
    .where(and(eq(t.project_id, projectId), ...listConditions(ex, f), ...ownConditions(ex, projectId, f)))
    .orderBy(asc(t.created_at), asc(t.id))
    .limit(limit);
}

/** A filter with q: the task list's search of the list's fields, sorted by created_at (so every match is
 * read), with the bulk filter's own fields as conditions on its rows; the oldest `limit`. The id matches
 * lead the list's first page (at most ID_MATCHES, whatever their age): read `limit` besides them, the
 * oldest `limit` of all are among what was read. Between pages the event loop has a turn (SQLite's reads
 * block it). */
async function searchMatches(ex: Executor, projectId: string, q: string, f: TaskFilter, limit: number): Promise<MatchedTask[]> {
  checkSearch(q);
  const { task_name: _n, task_ids: _i, failure_group: _g, ...list } = f;
  const rows: (MatchedTask & { created_at: string })[] = [];
  const pages = tasksOfFilter(ex, projectId, { ...list, sort: 'created_at', order: 'asc' }, limit + ID_MATCHES, 500, ownConditions(ex, projectId, f));
  for await (const page of pages) {
    for (const r of page) rows.push({ id: r.id, engine: r.engine, task_id: r.task_id, name: r.name, created_at: r.created_at });
    await new Promise((resolve) => setImmediate(resolve));
  }
  rows.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return rows.slice(0, limit).map(({ created_at: _c, ...m }) => m);
}

/** Reads `q` as the task list does; its refusal names the body's field. */
function checkSearch(q: string): void {
  try {
    parseSearch(q);
  } catch (e) {
    if (!(e instanceof ApiError) || e.error !== 'validation_failed') throw e;
    const fields = (e.details.fields as FieldError[]).map((x) => ({ ...x, location: 'body', path: `/filter${x.path}` }));
    throw validationFailed(fields);
  }
}
