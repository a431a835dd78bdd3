-- The HMAC-chained audit log, its authenticated chain state, and the
-- maintenance switch that alone lets retention pruning delete rows.
CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  occurred_at TEXT COLLATE "C" NOT NULL,
  action TEXT COLLATE "C" NOT NULL,
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
  metadata JSONB NOT NULL DEFAULT '{}',
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
-- Append-only. The one permitted update is anonymising the actor of a
-- deleted user (user_id to NULL, nothing else changes; actor_digest, which
-- the chain covers, stays). Deletes only inside a transaction that ran
-- SET LOCAL svc.audit_maintenance = 'on' (retention pruning).
CREATE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF coalesce(current_setting('svc.audit_maintenance', true), '') = 'on' THEN
      RETURN OLD;
    END IF;
  ELSIF NEW.user_id IS NULL AND OLD.user_id IS NOT NULL
    AND (to_jsonb(NEW) - 'user_id') = (to_jsonb(OLD) - 'user_id') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only';
END;
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION audit_log_guard() FROM PUBLIC;
--> statement-breakpoint
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_guard();
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
  active_row_count BIGINT NOT NULL,
  active_key_counts JSONB NOT NULL,
  frozen_row_count BIGINT NOT NULL,
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
