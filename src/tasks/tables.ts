import { col, defineTable } from '../db/define.ts';

export type TaskState = 'pending' | 'received' | 'started' | 'success' | 'failure' | 'retry' | 'revoked' | 'rejected' | 'unknown';

/** One row per (project, engine, task id), projected from events. */
export const tasks = defineTable('tasks', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  engine: col.text('engine').notNull(),
  task_id: col.text('task_id').notNull(),
  name: col.text('name'),
  queue: col.text('queue'),
  state: col.text('state').$type<TaskState>().notNull(),
  /** 1 for terminal states, 0 otherwise: a terminal state always wins over a non-terminal one. */
  state_tier: col.int('state_tier').notNull(),
  /** occurred_at of the event that set `state` (newer wins within a tier). */
  state_at: col.ts('state_at').notNull(),
  priority: col.text('priority'),
  args: col.json<unknown>('args'),
  kwargs: col.json<unknown>('kwargs'),
  result: col.json<unknown>('result'),
  exception: col.text('exception'),
  traceback: col.text('traceback'),
  retry_count: col.int('retry_count').notNull(),
  eta: col.text('eta'),
  received_at: col.ts('received_at'),
  started_at: col.ts('started_at'),
  finished_at: col.ts('finished_at'),
  runtime_ms: col.bigint('runtime_ms'),
  worker_name: col.text('worker_name'),
  parent_task_id: col.text('parent_task_id'),
  root_task_id: col.text('root_task_id'),
  tags: col.json<string[]>('tags').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export const workers = defineTable('workers', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  engine: col.text('engine').notNull(),
  name: col.text('name').notNull(),
  hostname: col.text('hostname'),
  pid: col.int('pid'),
  concurrency: col.int('concurrency'),
  queues: col.json<string[]>('queues').notNull(),
  state: col.text('state').$type<'online' | 'offline' | 'draining' | 'unknown'>().notNull(),
  last_heartbeat: col.ts('last_heartbeat'),
  load_average: col.json<number[]>('load_average'),
  active_tasks: col.int('active_tasks'),
  metadata: col.json<Record<string, unknown>>('metadata').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export const queues = defineTable('queues', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  engine: col.text('engine').notNull(),
  name: col.text('name').notNull(),
  broker_type: col.text('broker_type'),
  last_seen_at: col.ts('last_seen_at').notNull(),
  pending_count: col.bigint('pending_count'),
  consumer_count: col.int('consumer_count'),
  metadata: col.json<Record<string, unknown>>('metadata').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});
