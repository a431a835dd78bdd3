// The task filter of bulk jobs and bulk deletes: the fields of GET /tasks
// (state, engine, name, queue, worker, since/until on when svc first heard of
// the task), explicit task ids (a selection of rows), a failure group's key
// and an exact task name (the dashboard's "retry this group", narrowed to the
// task name the failure groups page shows). Its matches are read once, oldest
// first, when the job is created; later tasks never join it.
//
// Adding a field means: a property here, a condition in matchTasks, and
// nothing else; the job stores the filter as given and the items it matched.
import { Type, type Static } from '@sinclair/typebox';
import { and, asc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { GroupKey } from '../stats/schemas.ts';
import { TaskStateSchema } from '../tasks/schemas.ts';

const Ts = Type.String({ pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\+00:00$' });

export const TaskFilterSchema = Type.Object(
  {
    state: Type.Optional(TaskStateSchema),
    engine: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'case-insensitive substring of the task name' })),
    task_name: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'the task name exactly (as failure groups and stats name tasks)' })),
    queue: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    worker: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    since: Type.Optional(Ts),
    until: Type.Optional(Ts),
    task_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 1000, description: 'these tasks only (with engine: of that engine)' })),
    failure_group: Type.Optional({ ...GroupKey, description: 'the tasks of this failure group (GET /failure-groups): those whose first failure fell in it' }),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    $id: 'TaskFilter',
    description: 'The fields of GET /tasks (since/until bound when svc first heard of a task) plus task_ids, failure_group and task_name (exact); at least one.',
  },
);
export type TaskFilter = Static<typeof TaskFilterSchema>;

export interface MatchedTask {
  id: string;
  engine: string;
  task_id: string;
  name: string | null;
}

function conditions(ex: Executor, projectId: string, f: TaskFilter): SQL[] {
  const t = ex.t.tasks;
  const conds: SQL[] = [eq(t.project_id, projectId)];
  if (f.state) conds.push(eq(t.state, f.state));
  if (f.engine) conds.push(eq(t.engine, f.engine));
  if (f.queue) conds.push(eq(t.queue, f.queue));
  if (f.worker) conds.push(eq(t.worker_name, f.worker));
  if (f.name) {
    const literal = f.name.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    conds.push(sql`lower(${t.name}) LIKE ${`%${literal}%`} ESCAPE '\\'`);
  }
  if (f.task_name) conds.push(eq(t.name, f.task_name));
  if (f.since) conds.push(sql`${t.created_at} >= ${f.since}`);
  if (f.until) conds.push(sql`${t.created_at} < ${f.until}`);
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

/** The project's tasks matching `f`, oldest first, at most `limit`. */
export async function matchTasks(ex: Executor, projectId: string, f: TaskFilter, limit: number): Promise<MatchedTask[]> {
  const t = ex.t.tasks;
  return ex.q
    .select({ id: t.id, engine: t.engine, task_id: t.task_id, name: t.name })
    .from(t)
    .where(and(...conditions(ex, projectId, f)))
    .orderBy(asc(t.created_at), asc(t.id))
    .limit(limit);
}
