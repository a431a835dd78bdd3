// Bulk delete of stored tasks by filter: svc's own records only (no command
// reaches an agent; the engines keep their tasks). The matches (at most
// SVC_BULK_JOB_MAX_TASKS, oldest first) go with their events in one
// transaction with the `tasks.bulk_delete` audit row that counts them.
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../auth/actor.ts';
import { Answer } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { deleteTaskRows } from '../tasks/retention.ts';
import { matchTasks, TaskFilterSchema, type TaskFilter } from './filter.ts';

export const BulkDeleteRequest = Type.Object({ filter: TaskFilterSchema }, { additionalProperties: false });

export const BulkDeleteResult = Answer(
  {
    deleted_count: Type.Integer(),
    events_deleted: Type.Integer(),
    truncated: Type.Boolean({ description: 'more tasks matched than one request deletes (SVC_BULK_JOB_MAX_TASKS): send it again' }),
  },
  'BulkDeleteResult',
);
export type BulkDeleteResult = Static<typeof BulkDeleteResult>;

export async function bulkDeleteTasks(ctx: AppContext, projectId: string, filter: TaskFilter, actor: Actor): Promise<BulkDeleteResult> {
  const cap = ctx.config.SVC_BULK_JOB_MAX_TASKS;
  const matched = await matchTasks(ctx.db, projectId, filter, cap + 1);
  const truncated = matched.length > cap;
  const ids = matched.slice(0, cap).map((t) => t.id);
  return ctx.db.tx(async (tx) => {
    const deleted = await deleteTaskRows(tx, projectId, ids);
    await ctx.audit.append(tx, {
      ...actor,
      action: 'tasks.bulk_delete',
      target_type: 'project',
      target_id: projectId,
      project_id: projectId,
      metadata: { filter, deleted_count: deleted.tasks, events_deleted: deleted.events, truncated },
    });
    return { deleted_count: deleted.tasks, events_deleted: deleted.events, truncated };
  });
}
