-- Operator actions at scale: durable bulk jobs (a task filter frozen into items at creation, worked
-- off by one leader), Idempotency-Key answers of command-issuing routes, single-use purge
-- confirmations, and the indexes retention prunes by.
CREATE TABLE bulk_jobs (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('retry')),
  status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'aborted', 'failed')),
  filter TEXT NOT NULL,
  agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
  created_by TEXT REFERENCES users (id) ON DELETE SET NULL,
  api_key_id TEXT,
  total INTEGER NOT NULL,
  truncated INTEGER NOT NULL,
  max_in_flight INTEGER NOT NULL,
  note TEXT,
  error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);
--> statement-breakpoint
CREATE INDEX bulk_jobs_project ON bulk_jobs (project_id, created_at, id);
--> statement-breakpoint
CREATE INDEX bulk_jobs_open ON bulk_jobs (created_at) WHERE finished_at IS NULL;
--> statement-breakpoint
CREATE TABLE bulk_job_items (
  job_id TEXT NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  engine TEXT NOT NULL,
  task_id TEXT NOT NULL,
  task_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'issued', 'succeeded', 'failed', 'skipped')),
  command_id TEXT REFERENCES commands (id) ON DELETE SET NULL,
  result TEXT,
  error TEXT,
  issued_at TEXT,
  finished_at TEXT,
  PRIMARY KEY (job_id, seq)
);
--> statement-breakpoint
CREATE INDEX bulk_job_items_status ON bulk_job_items (job_id, status, seq);
--> statement-breakpoint
CREATE TABLE idempotency_keys (
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status_code INTEGER NOT NULL,
  response TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (project_id, principal, key)
);
--> statement-breakpoint
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
--> statement-breakpoint
CREATE TABLE purge_confirmations (
  token_hash TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  principal TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  queue TEXT NOT NULL,
  depth INTEGER,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
--> statement-breakpoint
CREATE INDEX purge_confirmations_expiry ON purge_confirmations (expires_at);
--> statement-breakpoint
-- Retention prunes events that belong to no task by age; task events go with their task (events_task_ref).
CREATE INDEX events_untasked_received ON events (received_at) WHERE task_ref IS NULL;
