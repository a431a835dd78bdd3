// What the scheduler endpoint and `svc scheduler` agree on.
export const INSTANCE_HEADER = 'x-svc-scheduler-instance';
export const VERSION_HEADER = 'x-svc-scheduler-version';

/** A schedule as GET /scheduler/v1/schedules lists it (SchedulePublic plus the project's slug). */
export interface WireSchedule {
  id: string;
  project_id: string;
  project_slug: string;
  name: string;
  engine: string;
  task_name: string;
  kind: string;
  expression: string;
  timezone: string;
  queue: string | null;
  args: unknown[];
  kwargs: Record<string, unknown>;
  is_enabled: boolean;
  catch_up: string;
  last_run_at: string | null;
  next_run_at: string | null;
  total_runs: number;
  source: string;
  updated_at: string;
  [k: string]: unknown;
}

export interface WireList {
  token: string;
  changed: boolean;
  server_time?: string;
  /** The service's SVC_SCHEDULE_FIRE_BUFFER_SECONDS: runs older than this are refused (too_late). */
  fire_buffer_seconds?: number;
  schedules?: WireSchedule[];
}
