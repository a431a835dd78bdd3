// The known-head envelope (`svc audit export-head`, `verify --known-head`):
// its closed shape, and whether it names a given row or chain boundary.
import type { StoredState } from './store.ts';

export type KnownHeadOutcome = 'CURRENT_MATCH' | 'PRUNE_MATCH' | 'CURRENT_PRUNE_MATCH' | 'VERIFIED_ANCESTOR' | 'INVALID' | 'UNPROVABLE';

/** The exported head: a closed set of keys (`svc audit export-head`). */
export interface HeadEnvelope {
  hmac_version: number;
  row_hmac: string;
  hmac_key_id: string;
  generation: string;
  occurred_at: string;
  id: string;
}

/** A parsed envelope: only row_hmac is required. */
export type KnownHead = Partial<HeadEnvelope> & { row_hmac: string };

const HEX64 = /^[0-9a-f]{64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/;
const ENVELOPE_KEYS = ['generation', 'hmac_key_id', 'hmac_version', 'id', 'occurred_at', 'row_hmac'];

export function envelopeOf(state: StoredState): HeadEnvelope | null {
  if (!state.head_row_hmac) return null;
  return {
    hmac_version: 1,
    row_hmac: state.head_row_hmac,
    hmac_key_id: state.head_key_id!,
    generation: state.generation,
    occurred_at: state.head_occurred_at!,
    id: state.head_id!,
  };
}

/** Parses a known-head envelope; null when it is not exactly our shape.
 * Only row_hmac is required; any other key or malformed value is INVALID. */
export function parseEnvelope(text: string): KnownHead | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  if (Object.keys(v).some((k) => !ENVELOPE_KEYS.includes(k))) return null;
  if (typeof v.row_hmac !== 'string' || !HEX64.test(v.row_hmac)) return null;
  if ('hmac_version' in v && v.hmac_version !== 1) return null;
  if ('hmac_key_id' in v && !(typeof v.hmac_key_id === 'string' && HEX64.test(v.hmac_key_id))) return null;
  if ('generation' in v && !(typeof v.generation === 'string' && UUID.test(v.generation))) return null;
  if ('id' in v && !(typeof v.id === 'string' && UUID.test(v.id))) return null;
  if ('occurred_at' in v && !(typeof v.occurred_at === 'string' && TS.test(v.occurred_at))) return null;
  return v as KnownHead;
}

/** Whether an envelope names this row/boundary (every key it gives must agree). */
export function names(env: KnownHead, at: { row_hmac: string | null; hmac_key_id: string | null; occurred_at: string | null; id: string | null }, generation: string): boolean {
  if (!at.row_hmac || env.row_hmac !== at.row_hmac) return false;
  if (env.hmac_key_id !== undefined && env.hmac_key_id !== at.hmac_key_id) return false;
  if (env.occurred_at !== undefined && env.occurred_at !== at.occurred_at) return false;
  if (env.id !== undefined && env.id !== at.id) return false;
  if (env.generation !== undefined && env.generation !== generation) return false;
  return true;
}
