// The schedules area's tables (migrations/*/0013_schedules.sql is the physical schema).
// Stores reach them through tablesOf(ex), which picks the dialect's variant.
import type { Executor } from '../db/connect.ts';
import { col, defineTable } from '../db/define.ts';

export const schedules = defineTable('schedules', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  engine: col.text('engine').notNull(),
  /** Who fires it: a scheduler adapter's name (`celery-beat`, `rq-scheduler`, ...) or svc's own. */
  scheduler: col.text('scheduler').notNull(),
  name: col.text('name').notNull(),
  task_name: col.text('task_name').notNull(),
  kind: col.text('kind').notNull(),
  expression: col.text('expression').notNull(),
  timezone: col.text('timezone').notNull(),
  queue: col.text('queue'),
  priority: col.text('priority').notNull(),
  args: col.json<unknown[]>('args').notNull(),
  kwargs: col.json<Record<string, unknown>>('kwargs').notNull(),
  is_enabled: col.bool('is_enabled').notNull(),
  last_run_at: col.ts('last_run_at'),
  next_run_at: col.ts('next_run_at'),
  total_runs: col.int('total_runs').notNull(),
  external_id: col.text('external_id'),
  /** The scheduler's own key of the entry (external projections' source_key). */
  source_key: col.text('source_key'),
  catch_up: col.text('catch_up').notNull(),
  source: col.text('source').notNull(),
  source_hash: col.text('source_hash'),
  /** The agent whose scheduler last reported it. */
  agent_id: col.text('agent_id'),
  reported_at: col.ts('reported_at'),
  consecutive_failures: col.int('consecutive_failures').notNull(),
  /** Why svc paused it (`circuit_breaker`), null otherwise. */
  paused_by: col.text('paused_by'),
  /** Set when a misfire was recorded; cleared once the schedule is seen firing again. */
  misfired_at: col.ts('misfired_at'),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export const scheduleFires = defineTable('schedule_fires', {
  id: col.text('id').primaryKey(),
  fire_id: col.text('fire_id').notNull(),
  schedule_id: col.text('schedule_id').notNull(),
  project_id: col.text('project_id').notNull(),
  command_id: col.text('command_id'),
  /** `schedule.fire` or `schedule.trigger_now`. */
  action: col.text('action').notNull(),
  status: col.text('status').$type<FireStatus>().notNull(),
  scheduled_for: col.ts('scheduled_for').notNull(),
  fired_at: col.ts('fired_at').notNull(),
  acked_at: col.ts('acked_at'),
  completed_at: col.ts('completed_at'),
  latency_ms: col.int('latency_ms'),
  error_code: col.text('error_code'),
  error_message: col.text('error_message'),
  /** The task the fire submitted, when the agent's result names it. */
  task_id: col.text('task_id'),
  issued_by: col.text('issued_by'),
});

export const scheduleMisfires = defineTable('schedule_misfires', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  schedule_id: col.text('schedule_id').notNull(),
  scheduler: col.text('scheduler').notNull(),
  name: col.text('name').notNull(),
  engine: col.text('engine').notNull(),
  kind: col.text('kind').notNull(),
  expected_at: col.ts('expected_at').notNull(),
  detected_at: col.ts('detected_at').notNull(),
  lateness_seconds: col.real('lateness_seconds').notNull(),
  grace_seconds: col.int('grace_seconds').notNull(),
});

export const scheduleStreams = defineTable('schedule_streams', {
  agent_id: col.text('agent_id').notNull(),
  scheduler: col.text('scheduler').notNull(),
  project_id: col.text('project_id').notNull(),
  stream_id: col.text('stream_id').notNull(),
  epoch_uuid: col.text('epoch_uuid').notNull(),
  epoch_number: col.int('epoch_number').notNull(),
  adapter_instance_id: col.text('adapter_instance_id').notNull(),
  /** The agent's last_connect_at this epoch was activated for. */
  connect_key: col.text('connect_key').notNull(),
  command_id: col.text('command_id'),
  last_sequence: col.int('last_sequence').notNull(),
  activated_at: col.ts('activated_at').notNull(),
});

export const scheduleSnapshotFrames = defineTable('schedule_snapshot_frames', {
  agent_id: col.text('agent_id').notNull(),
  snapshot_id: col.text('snapshot_id').notNull(),
  frame_index: col.int('frame_index').notNull(),
  scheduler: col.text('scheduler').notNull(),
  epoch_number: col.int('epoch_number').notNull(),
  sequence: col.int('sequence').notNull(),
  frame_count: col.int('frame_count').notNull(),
  row_count: col.int('row_count').notNull(),
  rows: col.json<Record<string, unknown>[]>('rows').notNull(),
  received_at: col.ts('received_at').notNull(),
});

export type FireStatus = 'buffered' | 'pending' | 'dispatched' | 'succeeded' | 'failed' | 'timeout' | 'buffer_expired';
export const OPEN_FIRE_STATUSES: readonly FireStatus[] = ['buffered', 'pending', 'dispatched'];

const ALL = { schedules, scheduleFires, scheduleMisfires, scheduleStreams, scheduleSnapshotFrames };
type Tables = { [K in keyof typeof ALL]: (typeof ALL)[K]['sqlite'] };
const VARIANTS: Record<'sqlite' | 'pg', Tables> = {
  sqlite: Object.fromEntries(Object.entries(ALL).map(([k, v]) => [k, v.sqlite])) as Tables,
  pg: Object.fromEntries(Object.entries(ALL).map(([k, v]) => [k, v.pg])) as Tables,
};

/** This area's tables for the executor's dialect. */
export const tablesOf = (ex: Executor): Tables => VARIANTS[ex.dialect === 'sqlite' ? 'sqlite' : 'pg'];

export type ScheduleRow = typeof schedules.sqlite.$inferSelect;
export type FireRow = typeof scheduleFires.sqlite.$inferSelect;
export type MisfireRow = typeof scheduleMisfires.sqlite.$inferSelect;
export type StreamRow = typeof scheduleStreams.sqlite.$inferSelect;
