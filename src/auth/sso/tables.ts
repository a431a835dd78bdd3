// Tables of single sign-on (migrations/*/0014_sso.sql). Not in db/schema.ts's registry: this
// area's store picks the dialect's variant itself.
import { col, defineTable } from '../../db/define.ts';

/** An account's identity at an OpenID Connect provider: (issuer, subject) is unique. */
export const ssoIdentities = defineTable('sso_identities', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  issuer: col.text('issuer').notNull(),
  subject: col.text('subject').notNull(),
  /** The verified address the provider gave when the identity was linked. */
  email: col.text('email').notNull(),
  created_at: col.ts('created_at').notNull(),
  last_login_at: col.ts('last_login_at'),
});

/** A login under way: keyed by the keyed hash of its `state`, bound to the browser that started it. */
export const ssoLoginStates = defineTable('sso_login_states', {
  id: col.text('id').primaryKey(),
  browser_hash: col.text('browser_hash').notNull(),
  nonce: col.text('nonce').notNull(),
  code_verifier: col.text('code_verifier').notNull(),
  redirect_uri: col.text('redirect_uri').notNull(),
  next_path: col.text('next_path').notNull(),
  remember: col.bool('remember').notNull(),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
  consumed_at: col.ts('consumed_at'),
  /** Set when a signed-in user started it to confirm themselves again (0019): the session to refresh. */
  reverify_session_id: col.text('reverify_session_id'),
  reverify_user_id: col.text('reverify_user_id'),
});
