import { col, defineTable } from '../db/define.ts';

export type CommandStatus = 'pending' | 'dispatched' | 'completed' | 'failed' | 'timeout' | 'cancelled' | 'buffered' | 'buffer_expired';

export const commands = defineTable('commands', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  /** Null for a schedule.fire still buffered (no agent advertising its engine yet). */
  agent_id: col.text('agent_id'),
  issued_by: col.text('issued_by'),
  action: col.text('action').notNull(),
  target_type: col.text('target_type').notNull(),
  target_id: col.text('target_id'),
  /** The engine the command needs (routing of schedule.fire, retry contracts). */
  engine: col.text('engine'),
  payload: col.json<Record<string, unknown>>('payload').notNull(),
  idempotency_key: col.text('idempotency_key'),
  status: col.text('status').$type<CommandStatus>().notNull(),
  result: col.json<Record<string, unknown>>('result'),
  error: col.text('error'),
  issued_at: col.ts('issued_at').notNull(),
  dispatched_at: col.ts('dispatched_at'),
  /** Last time the frame was handed to a transport (long-poll redispatch spacing). */
  last_sent_at: col.ts('last_sent_at'),
  send_count: col.int('send_count').notNull(),
  acked_at: col.ts('acked_at'),
  completed_at: col.ts('completed_at'),
  timeout_at: col.ts('timeout_at'),
  buffer_expires_at: col.ts('buffer_expires_at'),
  /** The transport session that claimed it (`ws:<session>` or `lp:<nonce hash>`). */
  claimed_session: col.text('claimed_session'),
  source_ip: col.text('source_ip'),
});

/** The answer of a command-issuing request sent with an Idempotency-Key header, kept 24 hours:
 * the same key and body replay it, the same key with another body is refused. */
export const idempotencyKeys = defineTable('idempotency_keys', {
  project_id: col.text('project_id').notNull(),
  /** `user:<id>` for a session, `key:<id>` for an API key. */
  principal: col.text('principal').notNull(),
  key: col.text('key').notNull(),
  /** SHA-256 of the method, route and canonical body. */
  request_hash: col.text('request_hash').notNull(),
  status_code: col.int('status_code').notNull(),
  /** The answer's JSON text, replayed as stored. */
  response: col.text('response').notNull(),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
});

/** Single-use confirmations of a purge: minted by the first call, spent by the second. */
export const purgeConfirmations = defineTable('purge_confirmations', {
  token_hash: col.text('token_hash').primaryKey(),
  project_id: col.text('project_id').notNull(),
  principal: col.text('principal').notNull(),
  agent_id: col.text('agent_id').notNull(),
  engine: col.text('engine').notNull(),
  queue: col.text('queue').notNull(),
  depth: col.bigint('depth'),
  created_at: col.ts('created_at').notNull(),
  expires_at: col.ts('expires_at').notNull(),
  used_at: col.ts('used_at'),
});
