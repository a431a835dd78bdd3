-- Schedules: the inventory (reported by scheduler agents, imported, or created in svc), their fires
-- (schedule.fire / schedule.trigger_now commands and what became of them), detected misfires, the
-- external-schedule streams svc activated on scheduler agents and the frames of snapshots still
-- being assembled.
CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  engine TEXT NOT NULL,
  scheduler TEXT NOT NULL,
  name TEXT NOT NULL,
  task_name TEXT NOT NULL,
  kind TEXT NOT NULL,
  expression TEXT NOT NULL,
  timezone TEXT NOT NULL,
  queue TEXT,
  priority TEXT NOT NULL,
  args JSONB NOT NULL,
  kwargs JSONB NOT NULL,
  is_enabled BOOLEAN NOT NULL,
  last_run_at TEXT,
  next_run_at TEXT,
  total_runs INTEGER NOT NULL,
  external_id TEXT,
  source_key TEXT,
  catch_up TEXT NOT NULL,
  source TEXT NOT NULL,
  source_hash TEXT,
  agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
  reported_at TEXT,
  consecutive_failures INTEGER NOT NULL,
  paused_by TEXT,
  misfired_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project_id, scheduler, name)
);
--> statement-breakpoint
CREATE INDEX schedules_by_name ON schedules (project_id, name, id);
--> statement-breakpoint
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE is_enabled;
--> statement-breakpoint
CREATE TABLE schedule_fires (
  id TEXT PRIMARY KEY,
  fire_id TEXT NOT NULL UNIQUE,
  schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  command_id TEXT REFERENCES commands (id) ON DELETE SET NULL,
  action TEXT NOT NULL,
  status TEXT NOT NULL,
  scheduled_for TEXT NOT NULL,
  fired_at TEXT NOT NULL,
  acked_at TEXT,
  completed_at TEXT,
  latency_ms INTEGER,
  error_code TEXT,
  error_message TEXT,
  task_id TEXT,
  issued_by TEXT
);
--> statement-breakpoint
CREATE INDEX schedule_fires_history ON schedule_fires (schedule_id, fired_at, id);
--> statement-breakpoint
CREATE INDEX schedule_fires_open ON schedule_fires (status) WHERE status IN ('buffered', 'pending', 'dispatched');
--> statement-breakpoint
CREATE INDEX schedule_fires_command ON schedule_fires (command_id);
--> statement-breakpoint
CREATE INDEX schedule_fires_task ON schedule_fires (task_id) WHERE task_id IS NOT NULL;
--> statement-breakpoint
CREATE TABLE schedule_misfires (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  schedule_id TEXT NOT NULL,
  scheduler TEXT NOT NULL,
  name TEXT NOT NULL,
  engine TEXT NOT NULL,
  kind TEXT NOT NULL,
  expected_at TEXT NOT NULL,
  detected_at TEXT NOT NULL,
  lateness_seconds DOUBLE PRECISION NOT NULL,
  grace_seconds INTEGER NOT NULL
);
--> statement-breakpoint
CREATE INDEX schedule_misfires_newest ON schedule_misfires (project_id, detected_at, id);
--> statement-breakpoint
CREATE TABLE schedule_streams (
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  scheduler TEXT NOT NULL,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  stream_id TEXT NOT NULL,
  epoch_uuid TEXT NOT NULL,
  epoch_number INTEGER NOT NULL,
  adapter_instance_id TEXT NOT NULL,
  connect_key TEXT NOT NULL,
  command_id TEXT,
  last_sequence INTEGER NOT NULL,
  activated_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, scheduler)
);
--> statement-breakpoint
CREATE TABLE schedule_snapshot_frames (
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  snapshot_id TEXT NOT NULL,
  frame_index INTEGER NOT NULL,
  scheduler TEXT NOT NULL,
  epoch_number INTEGER NOT NULL,
  sequence INTEGER NOT NULL,
  frame_count INTEGER NOT NULL,
  row_count INTEGER NOT NULL,
  rows JSONB NOT NULL,
  received_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, snapshot_id, frame_index)
);
