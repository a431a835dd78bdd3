-- A single sign-on login started from a signed-in session to confirm the user again (fresh MFA through
-- the identity provider): the session it refreshes and its user. Both null for an ordinary sign-in.
ALTER TABLE sso_login_states ADD COLUMN reverify_session_id TEXT;
--> statement-breakpoint
ALTER TABLE sso_login_states ADD COLUMN reverify_user_id TEXT;
