-- Keyset paging of the task list, newest first, with or without a state filter.
CREATE INDEX tasks_project_created ON tasks (project_id, created_at, id);
--> statement-breakpoint
CREATE INDEX tasks_project_state_created ON tasks (project_id, state, created_at, id);
