-- PostgreSQL: a stored task's search vector is no longer computed for nothing. Ingest writes every
-- report as INSERT ... ON CONFLICT DO UPDATE, and BEFORE INSERT row triggers run for each row
-- proposed, those that then conflict included: the trigger of migration 0018 computed the vector of
-- every report of a stored task (its proposed row carries none) and threw it away, and ran its
-- PL/pgSQL on every update to compare the searched text. With task lifecycles (three reports a
-- task) that was 15-18 of 120 µs an event (bench/ingest-store.ts --pg --lifecycle, docs/benchmarks.md).
--
-- Now an update computes the vector only when its searched text changed (the trigger's WHEN clause,
-- evaluated without calling PL/pgSQL), and an insert is seen only after it happened: a row inserted
-- without a vector (not through ingest, which computes a new task's in its statement, or a stored task
-- deleted meanwhile) gets it by an update of its own. AFTER INSERT row triggers fire for rows inserted,
-- never for a row that conflicted.
DROP TRIGGER tasks_search ON tasks;
--> statement-breakpoint
DROP FUNCTION tasks_search_refresh();
--> statement-breakpoint
CREATE FUNCTION tasks_search_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.search_vector := tasks_search_vector(NEW.name, NEW.args, NEW.kwargs, NEW.result, NEW.exception);
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tasks_search_update BEFORE UPDATE OF name, args, kwargs, result, exception ON tasks
FOR EACH ROW
WHEN (NEW.name IS DISTINCT FROM OLD.name OR NEW.args IS DISTINCT FROM OLD.args OR NEW.kwargs IS DISTINCT FROM OLD.kwargs
      OR NEW.result IS DISTINCT FROM OLD.result OR NEW.exception IS DISTINCT FROM OLD.exception)
EXECUTE FUNCTION tasks_search_refresh();
--> statement-breakpoint
CREATE FUNCTION tasks_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE tasks SET search_vector = tasks_search_vector(NEW.name, NEW.args, NEW.kwargs, NEW.result, NEW.exception) WHERE id = NEW.id;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tasks_search_insert AFTER INSERT ON tasks
FOR EACH ROW WHEN (NEW.search_vector IS NULL)
EXECUTE FUNCTION tasks_search_fill();
