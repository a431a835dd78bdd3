-- Saved views: a user's named queries of a dashboard page (the task list) in one project. They go
-- with the user and with the project.
CREATE TABLE saved_views (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  page TEXT NOT NULL,
  name TEXT NOT NULL,
  query TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (user_id, project_id, page, name)
);
--> statement-breakpoint
CREATE INDEX saved_views_project ON saved_views (project_id);
