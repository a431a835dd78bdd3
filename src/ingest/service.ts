// Durable, idempotent event storage: an event_batch's records are inserted
// under content-derived ids (re-sent batches and duplicate reports from other
// agents are absorbed) and only the newly stored ones are projected onto
// tasks, workers and queues, in the caller's transaction. Each event is tied
// to its task's row (task_ref), which is how a task's history is found: the
// row ids are looked up, or chosen for tasks the projection will create,
// before the events are written, so each event row is written once.
import type { Executor } from '../db/connect.ts';
import { newTimeOrderedId } from '../lib/ids.ts';
import { aggregateShard } from '../stats/store.ts';
import { projectEvents, taskStateOfKind } from '../tasks/service.ts';
import { storedTasks, taskKey, taskRowIds, type StoredTask } from '../tasks/store.ts';
import type { TaskState } from '../tasks/tables.ts';
import type { EventRecord } from './events.ts';
import { eventsOfTask, insertEvents, setTaskRefs, type EventRow } from './store.ts';

export { readEvents, MAX_EVENTS_PER_BATCH, type EventRecord } from './events.ts';

export interface StoredBatches {
  /** Per batch, the records newly stored (duplicates, also within the call, excluded). */
  stored: number[];
  /** Task state each newly stored task event set. */
  states: TaskState[];
  /** The newly stored records themselves. */
  added: EventRecord[];
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
  const records: EventRecord[] = [];
  batches.forEach((b, i) => {
    for (const r of b.records) {
      if (owner.has(r.id)) continue;
      owner.set(r.id, i);
      records.push(r);
    }
  });
  const rowIds = await taskRowsFor(ex, where.projectId, records);
  const rows: EventRow[] = records.map((r) => ({
    id: r.id,
    project_id: where.projectId,
    agent_id: where.agentId,
    engine: r.engine,
    task_id: r.taskId,
    kind: r.kind,
    occurred_at: r.occurredAt,
    received_at: now,
    frame_id: batches[owner.get(r.id)!]!.frameId,
    payload: r.data,
    task_ref: r.taskId === '' ? null : (rowIds.ids.get(taskKey(r.engine, r.taskId)) ?? null),
  }));
  // Id order: concurrent inserts of the same events wait on each other in one order (no deadlock).
  rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const fresh = await insertEvents(ex, rows);
  const stored = batches.map(() => 0);
  for (const id of fresh) stored[owner.get(id)!]!++;
  const added = records.filter((r) => fresh.has(r.id));
  if (added.length === 0) return { stored, states: [], added };
  const { states, storedTaskIds, writeShared } = await projectEvents(ex, where.projectId, added, now, rowIds.ids, rowIds.stored, aggregateShard(ex, where.agentId));
  await settleTies(ex, where.projectId, added, rowIds, storedTaskIds);
  // Last: the rows all uploads of the project share stay locked only from here to the commit.
  await writeShared();
  return { stored, states, added };
}

interface TaskRowIds {
  /** Row id of each task the records name, by taskKey. */
  ids: Map<string, string>;
  /** The tasks stored already, as read (by taskKey). */
  stored: Map<string, StoredTask>;
  /** The tasks whose row id was chosen here (not stored yet). */
  chosen: Map<string, { engine: string; taskId: string }>;
}

/** Row ids of the tasks `records` name: stored ones, and new ones for tasks the
 * projection will create (events of kinds that set no task state name a task
 * only once it exists). */
async function taskRowsFor(ex: Executor, projectId: string, records: EventRecord[]): Promise<TaskRowIds> {
  const named = new Map<string, { engine: string; taskId: string; creates: boolean }>();
  for (const r of records) {
    if (r.taskId === '') continue;
    const key = taskKey(r.engine, r.taskId);
    const creates = taskStateOfKind(r.kind) !== null;
    const seen = named.get(key);
    if (!seen) named.set(key, { engine: r.engine, taskId: r.taskId, creates });
    else seen.creates ||= creates;
  }
  const stored = await storedTasks(ex, projectId, named.values());
  const ids = new Map([...stored].map(([key, task]) => [key, task.id]));
  const chosen = new Map<string, { engine: string; taskId: string }>();
  for (const [key, task] of named) {
    if (!task.creates || ids.has(key)) continue;
    ids.set(key, newTimeOrderedId());
    chosen.set(key, task);
  }
  return { ids, stored, chosen };
}

/** Events tied to a row id chosen here that no row took: the projection writes
 * none when every event that would have created the task was stored already (a
 * duplicate: the same kind in the same second under another engine, or one a
 * concurrent transaction stored), and on PostgreSQL another transaction may
 * create the task meanwhile under its own id, which the upsert keeps
 * (`storedTaskIds`, null on SQLite, lacks the chosen one). Such events are tied
 * to the task's actual row, or to none. SQLite's one writer holds the database
 * from the look-up to the commit, so there only the first case arises. */
async function settleTies(ex: Executor, projectId: string, added: EventRecord[], rows: TaskRowIds, storedTaskIds: Set<string> | null): Promise<void> {
  const creating = new Set<string>();
  for (const r of added) if (r.taskId !== '' && taskStateOfKind(r.kind) !== null) creating.add(taskKey(r.engine, r.taskId));
  const unsure = [...rows.chosen].filter(([key]) => !creating.has(key) || (storedTaskIds !== null && !storedTaskIds.has(rows.ids.get(key)!)));
  if (unsure.length === 0) return;
  const actual = await taskRowIds(ex, projectId, unsure.map(([, task]) => task));
  const keys = new Set(unsure.map(([key]) => key));
  const pairs: [string, string | null][] = [];
  for (const r of added) {
    const key = r.taskId === '' ? '' : taskKey(r.engine, r.taskId);
    if (keys.has(key) && actual.get(key) !== rows.ids.get(key)) pairs.push([r.id, actual.get(key) ?? null]);
  }
  // Id order, as the inserts (rows locked in one order).
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  await setTaskRefs(ex, pairs);
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

/** The events of a task row (tasks.id), oldest first (at most `limit`). */
export const taskEvents = (ex: Executor, taskRowId: string, limit?: number) => eventsOfTask(ex, taskRowId, limit);
