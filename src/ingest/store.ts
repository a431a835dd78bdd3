// Queries of the durable event store.
import { asc, eq } from 'drizzle-orm';
import { bulkSet, bulkWrite, type BulkWrite } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';

export type EventRow = typeof import('./tables.ts').events.sqlite.$inferSelect;

const EVENT_WRITE: BulkWrite = {
  table: 'events',
  columns: ['id', 'project_id', 'agent_id', 'engine', 'task_id', 'kind', 'occurred_at', 'received_at', 'frame_id', 'payload', 'task_ref'],
  json: new Set(['payload']),
  conflict: 'ON CONFLICT (id) DO NOTHING',
  report: 'id',
};

/** Inserts events, skipping ids already stored; returns the ids that are new. */
export async function insertEvents(ex: Executor, rows: EventRow[]): Promise<Set<string>> {
  return new Set((await bulkWrite(ex, EVENT_WRITE, rows)) as string[]);
}

/** Sets events' task_ref: pairs of [event id, task row id or null]. */
export const setTaskRefs = (ex: Executor, pairs: (readonly [string, string | null])[]): Promise<void> =>
  bulkSet(ex, { table: 'events', key: 'id', column: 'task_ref' }, pairs);

/** The events of a task row, oldest first (at most `limit`). */
export async function eventsOfTask(ex: Executor, taskRowId: string, limit?: number): Promise<EventRow[]> {
  const t = ex.t.events;
  const query = ex.q.select().from(t).where(eq(t.task_ref, taskRowId)).orderBy(asc(t.occurred_at), asc(t.id));
  return limit === undefined ? query : query.limit(limit);
}
