-- svc's own scheduler (`svc scheduler`): each run of a schedule is fired once, whichever scheduler
-- process sends it first (several may run side by side); trigger-now fires are not runs and stay
-- free. Projects get the time zone the dashboard shows schedule runs in (besides UTC).
CREATE UNIQUE INDEX schedule_fires_run ON schedule_fires (schedule_id, scheduled_for) WHERE action = 'schedule.fire';
--> statement-breakpoint
ALTER TABLE projects ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';
