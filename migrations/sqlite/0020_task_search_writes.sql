-- SQLite: a task's search entries are keyed 2r and 2r+1 (r: the task's rowid) instead of r, so that
-- a report adding searched text (the result after task.received) adds an entry beside the first
-- instead of replacing it: replacing a contentless entry (a delete by rowid, through a tombstone)
-- cost FTS5 three times what adding one does (src/tasks/store.ts indexForSearch). The index is made
-- again from the tasks as stored, one entry each (migrations 0011 to 0020 took 4.9 s together at
-- 1,000,000 tasks: bench/tasks-scale.ts, docs/benchmarks.md).
INSERT INTO tasks_fts (tasks_fts) VALUES ('delete-all');
--> statement-breakpoint
INSERT INTO tasks_fts (rowid, name, args, kwargs, result, exception)
  SELECT 2 * rowid, name, args, kwargs, result, exception FROM tasks;
--> statement-breakpoint
DROP TRIGGER tasks_fts_delete;
--> statement-breakpoint
CREATE TRIGGER tasks_fts_delete AFTER DELETE ON tasks BEGIN
  DELETE FROM tasks_fts WHERE rowid = 2 * old.rowid;
  DELETE FROM tasks_fts WHERE rowid = 2 * old.rowid + 1;
END;
