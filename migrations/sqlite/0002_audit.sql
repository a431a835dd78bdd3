-- The HMAC-chained audit log, its authenticated chain state, and the
-- maintenance switch that alone lets retention pruning delete rows.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  occurred_at TEXT NOT NULL,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL DEFAULT '',
  target_id TEXT NOT NULL DEFAULT '',
  result TEXT NOT NULL,
  outcome TEXT NOT NULL,
  event_id TEXT,
  user_id TEXT,
  actor_digest TEXT,
  api_key_id TEXT,
  project_id TEXT,
  source_ip TEXT,
  user_agent TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  prev_row_hmac TEXT,
  row_hmac TEXT NOT NULL,
  hmac_key_id TEXT NOT NULL,
  chain_generation TEXT NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX audit_log_order ON audit_log (occurred_at, id);
--> statement-breakpoint
-- Fork prevention: no two rows may extend the same predecessor.
CREATE UNIQUE INDEX audit_log_prev_unique ON audit_log (prev_row_hmac) WHERE prev_row_hmac IS NOT NULL;
--> statement-breakpoint
CREATE INDEX audit_log_project ON audit_log (project_id, occurred_at, id);
--> statement-breakpoint
CREATE INDEX audit_log_action ON audit_log (action, occurred_at, id);
--> statement-breakpoint
CREATE INDEX audit_log_user ON audit_log (user_id, occurred_at);
--> statement-breakpoint
CREATE TABLE audit_maintenance (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  active INTEGER NOT NULL DEFAULT 0
);
--> statement-breakpoint
INSERT INTO audit_maintenance (id, active) VALUES (1, 0);
--> statement-breakpoint
-- Append-only. The one permitted update is anonymising the actor of a
-- deleted user (user_id to NULL, nothing else changes; actor_digest, which
-- the chain covers, stays). Deletes only while maintenance is switched on
-- inside the pruning transaction.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
WHEN NOT (
  NEW.user_id IS NULL AND OLD.user_id IS NOT NULL
  AND NEW.id IS OLD.id AND NEW.occurred_at IS OLD.occurred_at AND NEW.action IS OLD.action
  AND NEW.target_type IS OLD.target_type AND NEW.target_id IS OLD.target_id AND NEW.result IS OLD.result
  AND NEW.outcome IS OLD.outcome AND NEW.event_id IS OLD.event_id AND NEW.actor_digest IS OLD.actor_digest
  AND NEW.api_key_id IS OLD.api_key_id AND NEW.project_id IS OLD.project_id AND NEW.source_ip IS OLD.source_ip
  AND NEW.user_agent IS OLD.user_agent AND NEW.metadata IS OLD.metadata AND NEW.prev_row_hmac IS OLD.prev_row_hmac
  AND NEW.row_hmac IS OLD.row_hmac AND NEW.hmac_key_id IS OLD.hmac_key_id AND NEW.chain_generation IS OLD.chain_generation
)
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN NOT EXISTS (SELECT 1 FROM audit_maintenance WHERE id = 1 AND active = 1)
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only');
END;
--> statement-breakpoint
CREATE TABLE audit_chain_state (
  singleton_id TEXT PRIMARY KEY CHECK (singleton_id = 'audit-chain'),
  format_version INTEGER NOT NULL,
  installation_id TEXT NOT NULL,
  generation TEXT NOT NULL,
  state_key_id TEXT NOT NULL,
  head_row_hmac TEXT,
  head_key_id TEXT,
  head_occurred_at TEXT,
  head_id TEXT,
  prune_row_hmac TEXT,
  prune_key_id TEXT,
  prune_occurred_at TEXT,
  prune_id TEXT,
  active_row_count INTEGER NOT NULL,
  active_key_counts TEXT NOT NULL,
  frozen_row_count INTEGER NOT NULL,
  frozen_snapshot_digest TEXT,
  state_mac TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
--> statement-breakpoint
-- Rows moved aside by `svc audit fork-cleanup`.
CREATE TABLE audit_log_forks (
  id TEXT PRIMARY KEY,
  quarantined_at TEXT NOT NULL,
  row_json TEXT NOT NULL
);
