-- Statistics rows spread over shards (src/stats/store.ts, aggregateShard): on PostgreSQL every
-- upload of a project added to the same project-wide minute and hour rows inside its transaction, so
-- uploads of many agents waited on those rows' locks one after another. Each agent now adds to one of
-- eight rows per (project, span, task name, bucket), chosen by its id; readers sum them, as they sum
-- buckets. SQLite has one writer and keeps shard 0.
ALTER TABLE task_aggregates ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0;
--> statement-breakpoint
ALTER TABLE task_aggregates DROP CONSTRAINT task_aggregates_pkey, ADD PRIMARY KEY (project_id, span, task_name, bucket, shard);
