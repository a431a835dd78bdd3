-- A task's events are found by the task's row id (tasks.id, time-ordered) instead of its task id.
-- Celery task ids are random UUIDs: each stored event inserted into events_task at a random place,
-- and on a database past a few hundred thousand events nearly every event dirtied an index page of
-- its own at commit. Row ids of new tasks sort last, so their events' entries share the index's
-- last pages.
ALTER TABLE events ADD COLUMN task_ref TEXT;
--> statement-breakpoint
UPDATE events SET task_ref = tasks.id FROM tasks
  WHERE tasks.project_id = events.project_id AND tasks.engine = events.engine AND tasks.task_id = events.task_id AND events.task_id <> '';
--> statement-breakpoint
CREATE INDEX events_task_ref ON events (task_ref);
--> statement-breakpoint
DROP INDEX events_task;
