-- The task search index, rebuilt as a plain contentless FTS5 table: an entry is now replaced with
-- FTS5's 'delete' command, given the values it was made from (the task row as stored before the
-- write), and not by rowid (contentless_delete = 1, migration 0010). A delete by rowid marks the
-- entry with a tombstone that every later read and merge must skip; replacing an entry that way
-- cost 13-15 µs against 4.3-4.7 µs with the values (bench, 20,000 rows). A task's entry is
-- replaced when its searched text changes: in a worker's usual reports, once (the result or the
-- exception arriving after the arguments).
--
-- The index must always hold exactly what the rows hold: the ingest projection
-- (src/tasks/store.ts upsertTasks) replaces an entry with the values it read in the same
-- transaction, and the trigger below removes a deleted task's entry with the row's own values.
DROP TRIGGER tasks_fts_delete;
--> statement-breakpoint
DROP TABLE tasks_fts;
--> statement-breakpoint
CREATE VIRTUAL TABLE tasks_fts USING fts5(
  name, args, kwargs, result, exception,
  content = '', tokenize = 'unicode61 remove_diacritics 0'
);
--> statement-breakpoint
INSERT INTO tasks_fts (rowid, name, args, kwargs, result, exception)
  SELECT rowid, name, args, kwargs, result, exception FROM tasks;
--> statement-breakpoint
CREATE TRIGGER tasks_fts_delete AFTER DELETE ON tasks BEGIN
  INSERT INTO tasks_fts (tasks_fts, rowid, name, args, kwargs, result, exception)
    VALUES ('delete', old.rowid, old.name, old.args, old.kwargs, old.result, old.exception);
END;
