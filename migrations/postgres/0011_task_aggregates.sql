-- Task statistics (src/stats/, docs/tasks-stats.md): counts, runtimes and failures rolled up at
-- ingest, in the transaction that stores the events, per project, bucket and task name. Each event
-- adds to a minute row (span 60) and an hour row (span 3600), once for its task name and once for
-- the project as a whole (task_name ''). Minute rows are kept SVC_STATS_MINUTE_RETENTION_HOURS,
-- hour rows SVC_STATS_RETENTION_DAYS. `bucket` is the bucket's start in Unix seconds. h00..h29 are
-- the runtime histogram's bins (src/stats/histogram.ts).
CREATE TABLE task_aggregates (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  span INTEGER NOT NULL,
  task_name TEXT NOT NULL,
  bucket BIGINT NOT NULL,
  received INTEGER NOT NULL DEFAULT 0,
  started INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  retried INTEGER NOT NULL DEFAULT 0,
  revoked INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0,
  runtime_count INTEGER NOT NULL DEFAULT 0,
  runtime_sum_ms BIGINT NOT NULL DEFAULT 0,
  runtime_max_ms BIGINT NOT NULL DEFAULT 0,
  h00 INTEGER NOT NULL DEFAULT 0,
  h01 INTEGER NOT NULL DEFAULT 0,
  h02 INTEGER NOT NULL DEFAULT 0,
  h03 INTEGER NOT NULL DEFAULT 0,
  h04 INTEGER NOT NULL DEFAULT 0,
  h05 INTEGER NOT NULL DEFAULT 0,
  h06 INTEGER NOT NULL DEFAULT 0,
  h07 INTEGER NOT NULL DEFAULT 0,
  h08 INTEGER NOT NULL DEFAULT 0,
  h09 INTEGER NOT NULL DEFAULT 0,
  h10 INTEGER NOT NULL DEFAULT 0,
  h11 INTEGER NOT NULL DEFAULT 0,
  h12 INTEGER NOT NULL DEFAULT 0,
  h13 INTEGER NOT NULL DEFAULT 0,
  h14 INTEGER NOT NULL DEFAULT 0,
  h15 INTEGER NOT NULL DEFAULT 0,
  h16 INTEGER NOT NULL DEFAULT 0,
  h17 INTEGER NOT NULL DEFAULT 0,
  h18 INTEGER NOT NULL DEFAULT 0,
  h19 INTEGER NOT NULL DEFAULT 0,
  h20 INTEGER NOT NULL DEFAULT 0,
  h21 INTEGER NOT NULL DEFAULT 0,
  h22 INTEGER NOT NULL DEFAULT 0,
  h23 INTEGER NOT NULL DEFAULT 0,
  h24 INTEGER NOT NULL DEFAULT 0,
  h25 INTEGER NOT NULL DEFAULT 0,
  h26 INTEGER NOT NULL DEFAULT 0,
  h27 INTEGER NOT NULL DEFAULT 0,
  h28 INTEGER NOT NULL DEFAULT 0,
  h29 INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, span, task_name, bucket)
);
--> statement-breakpoint
-- The primary key keeps each series (the project's, task_name '', or one task name's) in bucket
-- order: trends and totals read a range of it. This index serves every task name of a window (the
-- per-task figures of stats and home) without visiting the rows: it carries the two counts read.
CREATE INDEX task_aggregates_window ON task_aggregates (project_id, span, bucket, task_name, succeeded, failed);
--> statement-breakpoint
-- One row per failure group and project: what it is, and when it was first and last seen.
CREATE TABLE failure_groups (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  group_key TEXT NOT NULL,
  exception_type TEXT NOT NULL,
  message TEXT NOT NULL,
  sample_message TEXT NOT NULL,
  failures BIGINT NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  PRIMARY KEY (project_id, group_key)
);
--> statement-breakpoint
-- Failures per group and task name, per minute and per hour (as task_aggregates).
CREATE TABLE failure_aggregates (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  span INTEGER NOT NULL,
  bucket BIGINT NOT NULL,
  group_key TEXT NOT NULL,
  task_name TEXT NOT NULL,
  failures INTEGER NOT NULL,
  PRIMARY KEY (project_id, span, bucket, group_key, task_name)
);
--> statement-breakpoint
-- The failed tasks of each group, one row per task (its first failure counted): what
-- GET .../failure-groups/{group_key}/tasks lists and a task filter by group joins on.
CREATE TABLE failure_group_tasks (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  task_id TEXT NOT NULL,
  group_key TEXT NOT NULL,
  task_name TEXT NOT NULL,
  failed_at TEXT NOT NULL,
  PRIMARY KEY (project_id, engine, task_id)
);
--> statement-breakpoint
CREATE INDEX failure_group_tasks_group ON failure_group_tasks (project_id, group_key, failed_at, engine, task_id);
--> statement-breakpoint
CREATE INDEX failure_group_tasks_failed ON failure_group_tasks (project_id, failed_at);
