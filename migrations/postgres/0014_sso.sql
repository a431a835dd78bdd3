-- Single sign-on: identities at OpenID Connect providers linked to accounts (matched by issuer and
-- subject), the pending logins (state, nonce and PKCE verifier, bound to the browser, used once), and
-- how a session's MFA verification was made (an identity provider's assertion counts as fresh MFA
-- for accounts without svc's own authenticator).
CREATE TABLE sso_identities (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  email TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_login_at TEXT,
  UNIQUE (issuer, subject)
);
--> statement-breakpoint
CREATE INDEX sso_identities_user ON sso_identities (user_id);
--> statement-breakpoint
CREATE TABLE sso_login_states (
  id TEXT PRIMARY KEY,
  browser_hash TEXT NOT NULL,
  nonce TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  next_path TEXT NOT NULL,
  remember BOOLEAN NOT NULL DEFAULT FALSE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  consumed_at TEXT
);
--> statement-breakpoint
CREATE INDEX sso_login_states_expiry ON sso_login_states (expires_at);
--> statement-breakpoint
ALTER TABLE sessions ADD COLUMN mfa_via TEXT;
