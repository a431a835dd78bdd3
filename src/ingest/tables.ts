import { col, defineTable } from '../db/define.ts';

/** Durable task events; `id` is content-derived so re-sent batches never duplicate rows. */
export const events = defineTable('events', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  agent_id: col.text('agent_id').notNull(),
  engine: col.text('engine').notNull(),
  task_id: col.text('task_id').notNull(),
  kind: col.text('kind').notNull(),
  occurred_at: col.ts('occurred_at').notNull(),
  received_at: col.ts('received_at').notNull(),
  frame_id: col.text('frame_id'),
  payload: col.json<Record<string, unknown>>('payload').notNull(),
  /** The task row (tasks.id) the event belongs to; null for events of no known task. Its
   * index finds a task's events: task row ids are time-ordered, so new events land at
   * the end of it, where task ids (random UUIDs) would land anywhere. */
  task_ref: col.text('task_ref'),
});
