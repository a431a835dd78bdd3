-- Agents (with revoked tombstones), their per-process inventory and health samples, durable events,
-- the task / worker / queue projections, and commands.
CREATE TABLE agents (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'unknown' CHECK (state IN ('unknown', 'online', 'offline')),
  transport TEXT CHECK (transport IN ('ws', 'longpoll')),
  protocol_version TEXT NOT NULL DEFAULT '',
  framework_adapter TEXT NOT NULL DEFAULT '',
  engine_adapters JSONB NOT NULL DEFAULT '[]'::jsonb,
  scheduler_adapters JSONB NOT NULL DEFAULT '[]'::jsonb,
  capabilities JSONB NOT NULL DEFAULT '{}'::jsonb,
  runtime_features JSONB NOT NULL DEFAULT '[]'::jsonb,
  metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
  last_seen_at TEXT,
  last_connect_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  revoked_at TEXT,
  -- Covers tombstones too: re-minting a name first moves the tombstone into the reserved namespace.
  UNIQUE (project_id, name)
);
--> statement-breakpoint
CREATE UNIQUE INDEX agents_live_token_hash ON agents (token_hash) WHERE revoked_at IS NULL;
--> statement-breakpoint
CREATE INDEX agents_project_state ON agents (project_id, state);
--> statement-breakpoint
CREATE TABLE agent_workers (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  worker_id TEXT NOT NULL,
  role TEXT,
  framework TEXT NOT NULL DEFAULT '',
  pid INTEGER,
  started_at TEXT,
  state TEXT NOT NULL CHECK (state IN ('online', 'offline')),
  last_seen_at TEXT NOT NULL,
  last_connect_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (agent_id, worker_id)
);
--> statement-breakpoint
CREATE TABLE agent_health_samples (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  frame_id TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  captured_at TEXT NOT NULL,
  received_at TEXT NOT NULL,
  telemetry_loss JSONB,
  payload JSONB NOT NULL,
  UNIQUE (agent_id, frame_id)
);
--> statement-breakpoint
CREATE INDEX agent_health_samples_agent ON agent_health_samples (agent_id, captured_at);
--> statement-breakpoint
CREATE INDEX agent_health_samples_received ON agent_health_samples (received_at);
--> statement-breakpoint
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  received_at TEXT NOT NULL,
  frame_id TEXT,
  payload JSONB NOT NULL
);
--> statement-breakpoint
CREATE INDEX events_project_task ON events (project_id, engine, task_id, occurred_at);
--> statement-breakpoint
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  task_id TEXT NOT NULL,
  name TEXT,
  queue TEXT,
  state TEXT NOT NULL,
  state_tier INTEGER NOT NULL,
  state_at TEXT NOT NULL,
  priority TEXT,
  args JSONB,
  kwargs JSONB,
  result JSONB,
  exception TEXT,
  traceback TEXT,
  retry_count INTEGER NOT NULL DEFAULT 0,
  eta TEXT,
  received_at TEXT,
  started_at TEXT,
  finished_at TEXT,
  runtime_ms BIGINT,
  worker_name TEXT,
  parent_task_id TEXT,
  root_task_id TEXT,
  tags JSONB NOT NULL DEFAULT '[]'::jsonb,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project_id, engine, task_id)
);
--> statement-breakpoint
CREATE INDEX tasks_project_state ON tasks (project_id, state, started_at);
--> statement-breakpoint
CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  name TEXT NOT NULL,
  hostname TEXT,
  pid INTEGER,
  concurrency INTEGER,
  queues JSONB NOT NULL DEFAULT '[]'::jsonb,
  state TEXT NOT NULL CHECK (state IN ('online', 'offline', 'draining', 'unknown')),
  last_heartbeat TEXT,
  load_average JSONB,
  active_tasks INTEGER,
  metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project_id, engine, name)
);
--> statement-breakpoint
CREATE TABLE queues (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  name TEXT NOT NULL,
  broker_type TEXT,
  last_seen_at TEXT NOT NULL,
  pending_count BIGINT,
  consumer_count INTEGER,
  metadata JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project_id, engine, name)
);
--> statement-breakpoint
CREATE TABLE commands (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
  issued_by TEXT REFERENCES users (id) ON DELETE SET NULL,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL,
  target_id TEXT,
  engine TEXT,
  payload JSONB NOT NULL,
  idempotency_key TEXT,
  status TEXT NOT NULL CHECK (status IN
    ('pending', 'dispatched', 'completed', 'failed', 'timeout', 'cancelled', 'buffered', 'buffer_expired')),
  result JSONB,
  error TEXT,
  issued_at TEXT NOT NULL,
  dispatched_at TEXT,
  last_sent_at TEXT,
  send_count INTEGER NOT NULL DEFAULT 0,
  acked_at TEXT,
  completed_at TEXT,
  timeout_at TEXT,
  buffer_expires_at TEXT,
  claimed_session TEXT,
  source_ip TEXT,
  UNIQUE (project_id, idempotency_key)
);
--> statement-breakpoint
CREATE INDEX commands_agent_status ON commands (agent_id, status, issued_at);
--> statement-breakpoint
CREATE INDEX commands_project_issued ON commands (project_id, issued_at);
--> statement-breakpoint
CREATE INDEX commands_open_timeout ON commands (timeout_at) WHERE status IN ('pending', 'dispatched');
--> statement-breakpoint
CREATE INDEX commands_buffered ON commands (buffer_expires_at) WHERE status = 'buffered';
