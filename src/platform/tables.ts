// Service-wide bookkeeping tables (installation metadata, leader leases).
import { col, defineTable } from '../db/define.ts';

export const meta = defineTable('svc_meta', {
  key: col.text('key').primaryKey(),
  value: col.text('value').notNull(),
});

/** One row per leader-gated job; whoever holds an unexpired lease runs it. */
export const leases = defineTable('svc_leases', {
  name: col.text('name').primaryKey(),
  holder: col.text('holder').notNull(),
  expires_at: col.ts('expires_at').notNull(),
});
