// What the audit chain MACs. Each row's row_hmac covers every field below
// (user_id through its keyed digest, so anonymising a deleted user's id does
// not break the chain) plus the predecessor's row_hmac; the chain state's MAC
// covers the head, the prune point and the counts. Domain-separation
// prefixes keep the three MACs from ever being confused with each other.
import { createHash } from 'node:crypto';
import { hmacHex } from '../lib/crypto.ts';
import { quoteJson, sortedJson } from '../lib/sorted-json.ts';

export const ROW_FORMAT = 1;

/** The fields of an audit row as stored (columns of audit_log). */
export interface AuditRow {
  id: string;
  occurred_at: string;
  action: string;
  target_type: string;
  target_id: string;
  result: string;
  outcome: string;
  event_id: string | null;
  user_id: string | null;
  actor_digest: string | null;
  api_key_id: string | null;
  project_id: string | null;
  source_ip: string | null;
  user_agent: string | null;
  metadata: Record<string, unknown>;
  prev_row_hmac: string | null;
  row_hmac: string;
  hmac_key_id: string;
  chain_generation: string;
}

const j = (s: string | null): string => (s === null ? 'null' : quoteJson(s));

/** A row as verification reads it: on SQLite the metadata is the stored text
 * (written as sortedJson's text, so it can be MACed as it is); PostgreSQL's
 * jsonb arrives parsed. */
export type StoredRow = Omit<AuditRow, 'metadata'> & { metadata: string | Record<string, unknown> };

/** The covered fields; the metadata comes separately, as its sorted-key JSON text. */
type Covered = Omit<AuditRow, 'row_hmac' | 'user_id' | 'metadata'>;

/** Sorted-key JSON of the covered fields, the same text sortedJson() gives.
 * Written out by hand (the keys are fixed and already in sorted order):
 * verification runs this for every row. */
export function rowCanonical(row: Covered, metadataJson: string): string {
  return (
    `{"action":${j(row.action)},"actor_digest":${j(row.actor_digest)},"api_key_id":${j(row.api_key_id)}` +
    `,"chain_generation":${j(row.chain_generation)},"event_id":${j(row.event_id)},"hmac_key_id":${j(row.hmac_key_id)}` +
    `,"id":${j(row.id)},"metadata":${metadataJson},"occurred_at":${j(row.occurred_at)},"outcome":${j(row.outcome)}` +
    `,"prev_row_hmac":${j(row.prev_row_hmac)},"project_id":${j(row.project_id)},"result":${j(row.result)}` +
    `,"source_ip":${j(row.source_ip)},"target_id":${j(row.target_id)},"target_type":${j(row.target_type)}` +
    `,"user_agent":${j(row.user_agent)},"v":${ROW_FORMAT}}`
  );
}

export const rowHmac = (secret: string, row: Covered, metadataJson: string): string =>
  hmacHex(secret, rowCanonical(row, metadataJson), 'svc/audit-chain/row/v1\0');

export const actorDigest = (secret: string, userId: string): string => hmacHex(secret, userId, 'svc/audit-chain/actor/v1\0');

/** The authenticated chain state, minus its MAC. */
export interface ChainStatePayload {
  format_version: number;
  installation_id: string;
  generation: string;
  state_key_id: string;
  head_row_hmac: string | null;
  head_key_id: string | null;
  head_occurred_at: string | null;
  head_id: string | null;
  prune_row_hmac: string | null;
  prune_key_id: string | null;
  prune_occurred_at: string | null;
  prune_id: string | null;
  active_row_count: number;
  active_key_counts: Record<string, number>;
  frozen_row_count: number;
  frozen_snapshot_digest: string | null;
}

export const STATE_FORMAT = 1;

export const stateMac = (secret: string, state: ChainStatePayload): string =>
  hmacHex(secret, `svc/audit-chain/state/v1\0${sortedJson(state)}`);

/** Running SHA-256 over frozen rows (earlier generations): each row is its
 * stored content as sorted JSON, length-prefixed. */
export class FrozenDigest {
  private readonly hash = createHash('sha256').update('svc/audit-chain/frozen/v1\0');
  count = 0;

  add(row: AuditRow): void {
    // user_id is left out: anonymising a deleted user must not alter evidence.
    const { user_id: _, ...covered } = row;
    const bytes = Buffer.from(sortedJson(covered), 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    this.hash.update(len).update(bytes);
    this.count++;
  }

  digest(): string | null {
    return this.count === 0 ? null : this.hash.digest('hex');
  }
}
