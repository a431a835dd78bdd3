-- events_project_task (project_id, engine, task_id, occurred_at) keyed a task's events by some
-- 120 bytes, every key starting with the same project id, and each stored event inserts into it at
-- a random place: the ingest bench spent more time there than in the rest of the event insert. Task
-- ids are unique enough to find a task's handful of events alone (the query filters project and
-- engine and sorts them), with keys a third the size.
DROP INDEX events_project_task;
--> statement-breakpoint
CREATE INDEX events_task ON events (task_id);
