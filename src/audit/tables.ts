import { col, defineTable } from '../db/define.ts';

export const auditLog = defineTable('audit_log', {
  id: col.text('id').primaryKey(),
  occurred_at: col.ts('occurred_at').notNull(),
  action: col.text('action').notNull(),
  target_type: col.text('target_type').notNull(),
  target_id: col.text('target_id').notNull(),
  result: col.text('result').notNull(),
  outcome: col.text('outcome').notNull(),
  event_id: col.text('event_id'),
  user_id: col.text('user_id'),
  actor_digest: col.text('actor_digest'),
  api_key_id: col.text('api_key_id'),
  project_id: col.text('project_id'),
  source_ip: col.text('source_ip'),
  user_agent: col.text('user_agent'),
  metadata: col.json<Record<string, unknown>>('metadata').notNull(),
  prev_row_hmac: col.text('prev_row_hmac'),
  row_hmac: col.text('row_hmac').notNull(),
  hmac_key_id: col.text('hmac_key_id').notNull(),
  chain_generation: col.text('chain_generation').notNull(),
});

export const auditChainState = defineTable('audit_chain_state', {
  singleton_id: col.text('singleton_id').primaryKey(),
  format_version: col.int('format_version').notNull(),
  installation_id: col.text('installation_id').notNull(),
  generation: col.text('generation').notNull(),
  state_key_id: col.text('state_key_id').notNull(),
  head_row_hmac: col.text('head_row_hmac'),
  head_key_id: col.text('head_key_id'),
  head_occurred_at: col.ts('head_occurred_at'),
  head_id: col.text('head_id'),
  prune_row_hmac: col.text('prune_row_hmac'),
  prune_key_id: col.text('prune_key_id'),
  prune_occurred_at: col.ts('prune_occurred_at'),
  prune_id: col.text('prune_id'),
  active_row_count: col.bigint('active_row_count').notNull(),
  active_key_counts: col.json<Record<string, number>>('active_key_counts').notNull(),
  frozen_row_count: col.bigint('frozen_row_count').notNull(),
  frozen_snapshot_digest: col.text('frozen_snapshot_digest'),
  state_mac: col.text('state_mac').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export const auditLogForks = defineTable('audit_log_forks', {
  id: col.text('id').primaryKey(),
  quarantined_at: col.ts('quarantined_at').notNull(),
  row_json: col.text('row_json').notNull(),
});
