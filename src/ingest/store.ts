// Queries of the durable event store.
import { and, asc, eq } from 'drizzle-orm';
import { bulkWrite, type BulkWrite } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';

export type EventRow = typeof import('./tables.ts').events.sqlite.$inferSelect;

const EVENT_WRITE: BulkWrite = {
  table: 'events',
  columns: ['id', 'project_id', 'agent_id', 'engine', 'task_id', 'kind', 'occurred_at', 'received_at', 'frame_id', 'payload'],
  json: new Set(['payload']),
  conflict: 'ON CONFLICT (id) DO NOTHING',
  report: 'id',
};

/** Inserts events, skipping ids already stored; returns the ids that are new. */
export async function insertEvents(ex: Executor, rows: EventRow[]): Promise<Set<string>> {
  return new Set((await bulkWrite(ex, EVENT_WRITE, rows)) as string[]);
}

export async function eventsOfTask(ex: Executor, projectId: string, engine: string, taskId: string): Promise<EventRow[]> {
  const t = ex.t.events;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.project_id, projectId), eq(t.engine, engine), eq(t.task_id, taskId)))
    .orderBy(asc(t.occurred_at), asc(t.id));
}
