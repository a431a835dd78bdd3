-- The task explorer: full-text search over tasks, the list's sorts and the task tree.
--
-- tasks_fts indexes the name, args, kwargs, result and exception of every task, keyed by the task
-- row's rowid (task ids are found through their own index, exactly or by their start). It holds tokens only (contentless: rows are read from tasks) and entries
-- are deleted by rowid (contentless_delete, SQLite 3.43 or later), so an entry never has to be
-- matched against the text it was made from. Tokens are runs of letters and digits, case
-- folded, diacritics kept (as PostgreSQL's 'simple' configuration keeps them).
--
-- The ingest projection (src/tasks/store.ts upsertTasks) indexes the rows it writes, a batch at a
-- time, in its transaction: an FTS5 write made by a trigger inside the upsert statement flushes
-- FTS5's pending terms to a segment of its own for every row (the statement's savepoint), which
-- cost more than the upsert itself. Deletes (retention, bulk delete) go through the trigger below.
CREATE VIRTUAL TABLE tasks_fts USING fts5(
  name, args, kwargs, result, exception,
  content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 0'
);
--> statement-breakpoint
-- Backfill: the tasks stored before this migration.
INSERT INTO tasks_fts (rowid, name, args, kwargs, result, exception)
  SELECT rowid, name, args, kwargs, result, exception FROM tasks;
--> statement-breakpoint
CREATE TRIGGER tasks_fts_delete AFTER DELETE ON tasks BEGIN
  DELETE FROM tasks_fts WHERE rowid = old.rowid;
END;
--> statement-breakpoint
-- Keyset paging of the list by each sortable column, newest or oldest first. Each index holds the
-- column alone (ties come in rowid order, every entry carries the rowid): ingest writes an entry
-- of each for every task, and entries of a third the width cost it half as much. The list reads a
-- project's rows from them (skipping other projects'), or, for a project with few tasks, from
-- tasks_project_created. By state the list pages on tasks_project_state_created.
CREATE INDEX tasks_received ON tasks (received_at);
--> statement-breakpoint
CREATE INDEX tasks_started ON tasks (started_at);
--> statement-breakpoint
CREATE INDEX tasks_finished ON tasks (finished_at);
--> statement-breakpoint
CREATE INDEX tasks_runtime ON tasks (runtime_ms);
--> statement-breakpoint
CREATE INDEX tasks_name ON tasks (name);
--> statement-breakpoint
-- The task tree: a task's children by parent id. Only tasks that have a parent (members of a
-- chain, group or chord) are in it, so standalone tasks cost it nothing.
CREATE INDEX tasks_project_parent ON tasks (project_id, engine, parent_task_id) WHERE parent_task_id IS NOT NULL;
