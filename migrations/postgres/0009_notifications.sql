-- Notifications: project and personal channels, subscriptions and project defaults, the in-app
-- inbox and the delivery log.
CREATE TABLE notification_channels (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  config JSONB NOT NULL,
  is_active BOOLEAN NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
--> statement-breakpoint
CREATE INDEX notification_channels_project ON notification_channels (project_id, name);
--> statement-breakpoint
CREATE TABLE user_channels (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  config JSONB NOT NULL,
  is_active BOOLEAN NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (user_id, name)
);
--> statement-breakpoint
CREATE TABLE user_subscriptions (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  trigger TEXT NOT NULL,
  filters JSONB NOT NULL,
  in_app BOOLEAN NOT NULL,
  user_channel_ids JSONB NOT NULL,
  project_channel_ids JSONB NOT NULL,
  cooldown_seconds INTEGER NOT NULL,
  muted_until TEXT,
  last_fired_at TEXT,
  is_active BOOLEAN NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (user_id, project_id, trigger)
);
--> statement-breakpoint
CREATE INDEX user_subscriptions_firing ON user_subscriptions (project_id, trigger);
--> statement-breakpoint
CREATE TABLE project_default_subscriptions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  trigger TEXT NOT NULL,
  filters JSONB NOT NULL,
  in_app BOOLEAN NOT NULL,
  project_channel_ids JSONB NOT NULL,
  cooldown_seconds INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project_id, trigger)
);
--> statement-breakpoint
CREATE TABLE user_notifications (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  subscription_id TEXT REFERENCES user_subscriptions (id) ON DELETE SET NULL,
  trigger TEXT NOT NULL,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  data JSONB NOT NULL,
  read_at TEXT,
  created_at TEXT NOT NULL
);
--> statement-breakpoint
CREATE INDEX user_notifications_inbox ON user_notifications (user_id, created_at);
--> statement-breakpoint
CREATE INDEX user_notifications_unread ON user_notifications (user_id) WHERE read_at IS NULL;
--> statement-breakpoint
CREATE TABLE notification_deliveries (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects (id) ON DELETE CASCADE,
  user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
  subscription_id TEXT REFERENCES user_subscriptions (id) ON DELETE SET NULL,
  channel_id TEXT REFERENCES notification_channels (id) ON DELETE SET NULL,
  user_channel_id TEXT REFERENCES user_channels (id) ON DELETE SET NULL,
  channel_name TEXT NOT NULL,
  channel_type TEXT NOT NULL,
  trigger TEXT NOT NULL,
  task_engine TEXT,
  task_id TEXT,
  task_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('sent', 'failed')),
  response_code INTEGER,
  response_body TEXT,
  error TEXT,
  triggered_by_user_id TEXT REFERENCES users (id) ON DELETE SET NULL,
  sent_at TEXT NOT NULL
);
--> statement-breakpoint
CREATE INDEX notification_deliveries_project ON notification_deliveries (project_id, sent_at);
--> statement-breakpoint
CREATE INDEX notification_deliveries_user ON notification_deliveries (user_id, sent_at);
