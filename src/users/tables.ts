import { col, defineTable } from '../db/define.ts';

export const users = defineTable('users', {
  id: col.text('id').primaryKey(),
  email: col.text('email').notNull(),
  first_name: col.text('first_name').notNull(),
  last_name: col.text('last_name').notNull(),
  display_name: col.text('display_name').notNull(),
  password_hash: col.text('password_hash').notNull(),
  is_admin: col.bool('is_admin').notNull(),
  is_active: col.bool('is_active').notNull(),
  timezone: col.text('timezone').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
  last_login_at: col.ts('last_login_at'),
  password_changed_at: col.ts('password_changed_at').notNull(),
  failed_login_count: col.int('failed_login_count').notNull(),
  locked_until: col.ts('locked_until'),
  /** TOTP secret, sealed with a key derived from SVC_SECRET (lib/seal.ts). */
  mfa_secret: col.text('mfa_secret'),
  /** Null while an enrolment is pending confirmation. */
  mfa_enrolled_at: col.ts('mfa_enrolled_at'),
});
