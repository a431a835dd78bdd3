import { col, defineTable } from '../db/define.ts';

export const sessions = defineTable('sessions', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  token_hash: col.text('token_hash').notNull(),
  csrf_token: col.text('csrf_token').notNull(),
  issued_at: col.ts('issued_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
  last_seen_at: col.ts('last_seen_at').notNull(),
  remember: col.bool('remember').notNull(),
  revoked_at: col.ts('revoked_at'),
  revocation_reason: col.text('revocation_reason'),
  ip: col.text('ip'),
  user_agent: col.text('user_agent'),
  mfa_verified_at: col.ts('mfa_verified_at'),
  /** 'idp' when an identity provider asserted multi-factor sign-in (auth/sso); null for svc's own step. */
  mfa_via: col.text('mfa_via'),
});

export const mfaRecoveryCodes = defineTable('mfa_recovery_codes', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  code_hash: col.text('code_hash').notNull(),
  created_at: col.ts('created_at').notNull(),
  consumed_at: col.ts('consumed_at'),
});

export const trustedDevices = defineTable('trusted_devices', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  token_hash: col.text('token_hash').notNull(),
  label: col.text('label').notNull(),
  created_at: col.ts('created_at').notNull(),
  last_seen_at: col.ts('last_seen_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
  revoked_at: col.ts('revoked_at'),
});

export const apiKeys = defineTable('api_keys', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  name: col.text('name').notNull(),
  token_hash: col.text('token_hash').notNull(),
  prefix: col.text('prefix').notNull(),
  scopes: col.json<string[]>('scopes').notNull(),
  project_id: col.text('project_id'),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at'),
  last_used_at: col.ts('last_used_at'),
  last_used_ip: col.text('last_used_ip'),
  revoked_at: col.ts('revoked_at'),
});
