-- The task explorer: full-text search over tasks, the list's sorts and the task tree.
--
-- tasks.search_vector holds the 'simple' text-search vector (no stemming, no stop words) of a
-- task's name, args, kwargs, result and exception (task ids are found through their own index), with ASCII punctuation read as
-- spaces first: tokens are then runs of letters and digits, as SQLite's index makes them (the
-- default parser alone keeps e-mail addresses, paths and signed numbers whole). Each field is
-- indexed up to its first 65,536 characters (a tsvector holds at most 1 MB). A trigger fills it
-- on insert and whenever the searched text changes, so the ingest code writes tasks as before.
ALTER TABLE tasks ADD COLUMN search_vector tsvector;
--> statement-breakpoint
CREATE FUNCTION tasks_search_vector(name text, args jsonb, kwargs jsonb, result jsonb, exception text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('simple'::regconfig, translate(
    concat_ws(' ', left(name, 65536), left(args::text, 65536), left(kwargs::text, 65536), left(result::text, 65536), left(exception, 65536)),
    '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~',
    '                                '))
$$;
--> statement-breakpoint
-- Backfill: the tasks stored before this migration (before the index and the trigger exist).
UPDATE tasks SET search_vector = tasks_search_vector(name, args, kwargs, result, exception);
--> statement-breakpoint
CREATE INDEX tasks_search ON tasks USING gin (search_vector);
--> statement-breakpoint
-- The ingest upsert names every column in its SET list; only a change of the searched text
-- computes the vector again (a task is indexed when first stored and again when its result or
-- exception arrives, not on each state change).
CREATE FUNCTION tasks_search_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.name IS DISTINCT FROM OLD.name OR NEW.args IS DISTINCT FROM OLD.args OR NEW.kwargs IS DISTINCT FROM OLD.kwargs
     OR NEW.result IS DISTINCT FROM OLD.result OR NEW.exception IS DISTINCT FROM OLD.exception THEN
    NEW.search_vector := tasks_search_vector(NEW.name, NEW.args, NEW.kwargs, NEW.result, NEW.exception);
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tasks_search BEFORE INSERT OR UPDATE OF name, args, kwargs, result, exception ON tasks
FOR EACH ROW EXECUTE FUNCTION tasks_search_refresh();
--> statement-breakpoint
-- Keyset paging of the list by each sortable column, newest or oldest first (ties by row id).
-- The indexes hold every project's tasks (the planner reads a small project's own rows through
-- tasks_project_created and sorts them instead): narrower entries, which ingest writes for every
-- task, cost it a fraction of what (project_id, column, id) would. By state the list pages on
-- tasks_project_state_created.
CREATE INDEX tasks_received ON tasks (received_at, id);
--> statement-breakpoint
CREATE INDEX tasks_started ON tasks (started_at, id);
--> statement-breakpoint
CREATE INDEX tasks_finished ON tasks (finished_at, id);
--> statement-breakpoint
CREATE INDEX tasks_runtime ON tasks (runtime_ms, id);
--> statement-breakpoint
CREATE INDEX tasks_name ON tasks (name, id);
--> statement-breakpoint
-- The task tree: a task's children by parent id. Only tasks that have a parent (members of a
-- chain, group or chord) are in it, so standalone tasks cost it nothing.
CREATE INDEX tasks_project_parent ON tasks (project_id, engine, parent_task_id) WHERE parent_task_id IS NOT NULL;
