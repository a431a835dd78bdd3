import { col, defineTable } from '../db/define.ts';

export const projects = defineTable('projects', {
  id: col.text('id').primaryKey(),
  slug: col.text('slug').notNull(),
  name: col.text('name').notNull(),
  description: col.text('description').notNull(),
  is_active: col.bool('is_active').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
  archived_at: col.ts('archived_at'),
});

export const memberships = defineTable('memberships', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  project_id: col.text('project_id').notNull(),
  role: col.text('role').$type<'viewer' | 'operator' | 'admin'>().notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export const invitations = defineTable('invitations', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  email: col.text('email').notNull(),
  role: col.text('role').$type<'viewer' | 'operator' | 'admin'>().notNull(),
  invited_by: col.text('invited_by'),
  token_hash: col.text('token_hash').notNull(),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
  accepted_at: col.ts('accepted_at'),
  accepted_by: col.text('accepted_by'),
  revoked_at: col.ts('revoked_at'),
});
