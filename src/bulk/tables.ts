import { col, defineTable } from '../db/define.ts';
import type { TaskFilter } from './filter.ts';

export type BulkJobStatus = 'running' | 'completed' | 'aborted' | 'failed';
export type BulkItemStatus = 'queued' | 'issued' | 'succeeded' | 'failed' | 'skipped';

/** A durable bulk job: its filter as given and its items, frozen when it was created. Open until finished_at is set. */
export const bulkJobs = defineTable('bulk_jobs', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  kind: col.text('kind').$type<'retry'>().notNull(),
  status: col.text('status').$type<BulkJobStatus>().notNull(),
  filter: col.json<TaskFilter>('filter').notNull(),
  /** The agent named at creation; null: an online agent advertising each item's engine. */
  agent_id: col.text('agent_id'),
  created_by: col.text('created_by'),
  api_key_id: col.text('api_key_id'),
  total: col.int('total').notNull(),
  /** More tasks matched than SVC_BULK_JOB_MAX_TASKS (or the request's max_tasks) let in. */
  truncated: col.bool('truncated').notNull(),
  max_in_flight: col.int('max_in_flight').notNull(),
  /** Why the job is waiting, when it is (no agent for an engine). */
  note: col.text('note'),
  error: col.text('error'),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
  finished_at: col.ts('finished_at'),
});

/** One task of a job, in the order the filter found them. */
export const bulkJobItems = defineTable('bulk_job_items', {
  job_id: col.text('job_id').notNull(),
  seq: col.int('seq').notNull(),
  engine: col.text('engine').notNull(),
  task_id: col.text('task_id').notNull(),
  task_name: col.text('task_name'),
  status: col.text('status').$type<BulkItemStatus>().notNull(),
  /** The retry command issued for it (the same transaction marked it issued). */
  command_id: col.text('command_id'),
  result: col.json<Record<string, unknown>>('result'),
  error: col.text('error'),
  issued_at: col.ts('issued_at'),
  finished_at: col.ts('finished_at'),
});

export type BulkJobRow = typeof bulkJobs.sqlite.$inferSelect;
export type BulkItemRow = typeof bulkJobItems.sqlite.$inferSelect;

/** The dialect's variant of a table defined here (these tables are not in the shared registry). */
export const on = <T>(ex: { dialect: string }, table: { sqlite: T; pg: T }): T => (ex.dialect === 'sqlite' ? table.sqlite : table.pg);
