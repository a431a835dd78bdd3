import { col, defineTable } from '../db/define.ts';

export const firstBootTokens = defineTable('first_boot_tokens', {
  id: col.text('id').primaryKey(),
  token_hash: col.text('token_hash').notNull(),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
});
