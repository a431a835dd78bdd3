// Durable, idempotent event storage: an event_batch's records are inserted
// under content-derived ids (re-sent batches and duplicate reports from other
// agents are absorbed) and only the newly stored ones are projected onto
// tasks, workers and queues, in the caller's transaction.
import type { Executor } from '../db/connect.ts';
import { projectEvents } from '../tasks/service.ts';
import type { TaskState } from '../tasks/tables.ts';
import type { EventRecord } from './events.ts';
import { eventsOfTask, insertEvents, type EventRow } from './store.ts';

export { readEvents, MAX_EVENTS_PER_BATCH, type EventRecord } from './events.ts';

export interface StoredBatches {
  /** Per batch, the records newly stored (duplicates, also within the call, excluded). */
  stored: number[];
  /** Task state each newly stored task event set. */
  states: TaskState[];
}

/** Stores the records of several event_batch frames of one agent in one go. */
export async function storeEventBatches(
  ex: Executor,
  where: { projectId: string; agentId: string },
  batches: { frameId: string | null; records: EventRecord[] }[],
  now: string,
): Promise<StoredBatches> {
  // The first occurrence of an id owns it (a batch may repeat an event, or re-send an earlier frame's).
  const owner = new Map<string, number>();
  const rows: EventRow[] = [];
  const records: EventRecord[] = [];
  batches.forEach((b, i) => {
    for (const r of b.records) {
      if (owner.has(r.id)) continue;
      owner.set(r.id, i);
      records.push(r);
      rows.push({
        id: r.id,
        project_id: where.projectId,
        agent_id: where.agentId,
        engine: r.engine,
        task_id: r.taskId,
        kind: r.kind,
        occurred_at: r.occurredAt,
        received_at: now,
        frame_id: b.frameId,
        payload: r.data,
      });
    }
  });
  // Id order: concurrent inserts of the same events wait on each other in one order (no deadlock).
  rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const fresh = await insertEvents(ex, rows);
  const stored = batches.map(() => 0);
  for (const id of fresh) stored[owner.get(id)!]!++;
  const added = records.filter((r) => fresh.has(r.id));
  const states = added.length > 0 ? await projectEvents(ex, where.projectId, added, now) : [];
  return { stored, states };
}

/** One frame's records (see storeEventBatches). */
export async function storeEvents(
  ex: Executor,
  where: { projectId: string; agentId: string; frameId: string | null },
  records: EventRecord[],
  now: string,
): Promise<{ stored: number; states: TaskState[] }> {
  const r = await storeEventBatches(ex, where, [{ frameId: where.frameId, records }], now);
  return { stored: r.stored[0]!, states: r.states };
}

export const taskEvents = (ex: Executor, projectId: string, engine: string, taskId: string) => eventsOfTask(ex, projectId, engine, taskId);
