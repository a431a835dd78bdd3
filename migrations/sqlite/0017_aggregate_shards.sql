-- Statistics rows spread over shards (src/stats/store.ts, aggregateShard): on PostgreSQL every
-- upload of a project added to the same project-wide minute and hour rows inside its transaction, so
-- uploads of many agents waited on those rows' locks one after another. Each agent now adds to one of
-- eight rows per (project, span, task name, bucket), chosen by its id; readers sum them, as they sum
-- buckets. SQLite has one writer and keeps shard 0.
CREATE TABLE task_aggregates_sharded (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  span INTEGER NOT NULL,
  task_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  received INTEGER NOT NULL DEFAULT 0,
  started INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  retried INTEGER NOT NULL DEFAULT 0,
  revoked INTEGER NOT NULL DEFAULT 0,
  rejected INTEGER NOT NULL DEFAULT 0,
  runtime_count INTEGER NOT NULL DEFAULT 0,
  runtime_sum_ms INTEGER NOT NULL DEFAULT 0,
  runtime_max_ms INTEGER NOT NULL DEFAULT 0,
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
  shard INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, span, task_name, bucket, shard)
);
--> statement-breakpoint
INSERT INTO task_aggregates_sharded (project_id, span, task_name, bucket, received, started, succeeded, failed, retried, revoked, rejected, runtime_count, runtime_sum_ms, runtime_max_ms, h00, h01, h02, h03, h04, h05, h06, h07, h08, h09, h10, h11, h12, h13, h14, h15, h16, h17, h18, h19, h20, h21, h22, h23, h24, h25, h26, h27, h28, h29, shard) SELECT project_id, span, task_name, bucket, received, started, succeeded, failed, retried, revoked, rejected, runtime_count, runtime_sum_ms, runtime_max_ms, h00, h01, h02, h03, h04, h05, h06, h07, h08, h09, h10, h11, h12, h13, h14, h15, h16, h17, h18, h19, h20, h21, h22, h23, h24, h25, h26, h27, h28, h29, 0 FROM task_aggregates;
--> statement-breakpoint
DROP TABLE task_aggregates;
--> statement-breakpoint
ALTER TABLE task_aggregates_sharded RENAME TO task_aggregates;
--> statement-breakpoint
CREATE INDEX task_aggregates_window ON task_aggregates (project_id, span, bucket, task_name, succeeded, failed);
