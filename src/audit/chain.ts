// Appending to the chain. An append runs inside the caller's transaction, so
// the audit row commits or rolls back with the action it records. Appends are
// serialised (SQLite write lock / PostgreSQL advisory lock), read the head
// from the authenticated chain state, and write row and new state together:
// the chain never forks, also across processes and replicas.
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { safeEqual } from '../lib/crypto.ts';
import type { Executor } from '../db/connect.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import { actorDigest, rowHmac, STATE_FORMAT, stateMac, type AuditRow, type ChainStatePayload, type StoredRow } from './canonical.ts';
import type { Keyring } from './keyring.ts';
import { countRows, loadState, lockedState, writeRowsAndState, type StoredState } from './store.ts';

export class AuditChainError extends Error {}

export interface AuditEntry {
  action: string;
  target_type?: string;
  target_id?: string;
  /** success (default), failed, denied, or another short word. */
  result?: string;
  /** Derived from result unless given: allow, failure, deny or error. */
  outcome?: string;
  event_id?: string | null;
  user_id?: string | null;
  api_key_id?: string | null;
  project_id?: string | null;
  source_ip?: string | null;
  user_agent?: string | null;
  metadata?: Record<string, unknown>;
}

const OUTCOMES: Record<string, string> = { success: 'allow', failed: 'failure', denied: 'deny' };
const cut = (s: string | null | undefined, n: number): string | null => (s == null ? null : s.length > n ? s.slice(0, n) : s);

/** Why a row's MAC (and signed actor) fails, or null when it verifies. */
export function rowProblem(row: StoredRow | AuditRow, keyring: Keyring): string | null {
  const key = keyring.get(row.hmac_key_id);
  if (!key) return `signed with key ${row.hmac_key_id.slice(0, 12)}…, which is not configured`;
  if (!safeEqual(rowHmac(key.secret, row, metadataJsonOf(row)), row.row_hmac) && !signedAsParsed(row, key.secret)) {
    return 'contents do not match its row_hmac (the row was altered)';
  }
  if (row.user_id !== null && (row.actor_digest === null || !safeEqual(actorDigest(key.secret, row.user_id), row.actor_digest))) {
    return 'user_id does not match the signed actor';
  }
  return null;
}

/** Stored metadata text is MACed as it is (rows are written with sortedJson's
 * text, which spares parsing and re-sorting it); a match proves it is the
 * signed text. Parsed metadata (PostgreSQL's jsonb) is sorted here. */
const metadataJsonOf = (row: StoredRow | AuditRow): string => (typeof row.metadata === 'string' ? row.metadata : sortedJson(row.metadata));

/** Second chance for stored text that differs from sortedJson's spelling of
 * the same content (written by hand, or by an older version). */
function signedAsParsed(row: StoredRow | AuditRow, secret: string): boolean {
  if (typeof row.metadata !== 'string') return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.metadata);
  } catch {
    return false;
  }
  return safeEqual(rowHmac(secret, row, sortedJson(parsed)), row.row_hmac);
}

/** Checks the chain state's MAC against the keyring. */
export function authenticateState(state: StoredState, keyring: Keyring): void {
  const key = keyring.get(state.state_key_id);
  if (!key) {
    throw new AuditChainError(`the audit chain state is signed with key ${state.state_key_id.slice(0, 12)}…, which is not configured`);
  }
  const { state_mac, ...payload } = state;
  if (!safeEqual(stateMac(key.secret, payload), state_mac)) {
    throw new AuditChainError('the audit chain state does not authenticate (it was altered, or the key is wrong)');
  }
}

export function signState(payload: ChainStatePayload, keyring: Keyring): StoredState {
  return { ...payload, state_key_id: keyring.current.id, state_mac: stateMac(keyring.current.secret, { ...payload, state_key_id: keyring.current.id }) };
}

export function genesisState(keyring: Keyring, installationId: string = crypto.randomUUID()): ChainStatePayload {
  return {
    format_version: STATE_FORMAT,
    installation_id: installationId,
    generation: crypto.randomUUID(),
    state_key_id: keyring.current.id,
    head_row_hmac: null,
    head_key_id: null,
    head_occurred_at: null,
    head_id: null,
    prune_row_hmac: null,
    prune_key_id: null,
    prune_occurred_at: null,
    prune_id: null,
    active_row_count: 0,
    active_key_counts: {},
    frozen_row_count: 0,
    frozen_snapshot_digest: null,
  };
}

/** The state appends may extend: present, authentic, and signed with the
 * current key (a changed key needs `svc audit rotate-chain-key` first).
 * `state` is the one read under the appenders' lock, when the caller holds it. */
export async function writableState(ex: Executor, keyring: Keyring, state: StoredState | null | undefined = undefined): Promise<ChainStatePayload> {
  if (state === undefined) state = await loadState(ex);
  if (!state) {
    if ((await countRows(ex)) > 0) {
      throw new AuditChainError('the audit chain state is missing but rows exist; run `svc audit activate-chain-state`');
    }
    return genesisState(keyring);
  }
  authenticateState(state, keyring);
  if (state.state_key_id !== keyring.current.id) {
    throw new AuditChainError('SVC_AUDIT_CHAIN_SECRET changed; run `svc audit rotate-chain-key` to move the chain to the new key');
  }
  const { state_mac: _, ...payload } = state;
  return payload;
}

/** Builds, signs and inserts one row extending `state`; returns the row and the next state. */
export function buildRow(state: ChainStatePayload, keyring: Keyring, entry: AuditEntry): AuditRow {
  const headMicros = state.head_occurred_at ? parseIsoMicros(state.head_occurred_at)! : -Infinity;
  // (occurred_at, id) must strictly increase along the chain, whatever the clocks of the writers.
  const occurred = isoMicros(Math.max(nowMicros(), headMicros + 1));
  const key = keyring.current;
  const result = cut(entry.result ?? 'success', 20)!;
  const unsigned = {
    id: crypto.randomUUID(),
    occurred_at: occurred,
    action: cut(entry.action, 80)!,
    target_type: cut(entry.target_type ?? '', 40)!,
    target_id: cut(entry.target_id ?? '', 200)!,
    result,
    outcome: cut(entry.outcome ?? OUTCOMES[result] ?? 'error', 20)!,
    event_id: entry.event_id ?? null,
    actor_digest: entry.user_id ? actorDigest(key.secret, entry.user_id) : null,
    api_key_id: entry.api_key_id ?? null,
    project_id: entry.project_id ?? null,
    source_ip: entry.source_ip ?? null,
    user_agent: cut(entry.user_agent, 1024),
    metadata: entry.metadata ?? {},
    prev_row_hmac: state.head_row_hmac ?? state.prune_row_hmac,
    hmac_key_id: key.id,
    chain_generation: state.generation,
  };
  return { ...unsigned, user_id: entry.user_id ?? null, row_hmac: rowHmac(key.secret, unsigned, sortedJson(unsigned.metadata)) };
}

export function advance(state: ChainStatePayload, row: AuditRow): ChainStatePayload {
  return {
    ...state,
    head_row_hmac: row.row_hmac,
    head_key_id: row.hmac_key_id,
    head_occurred_at: row.occurred_at,
    head_id: row.id,
    active_row_count: state.active_row_count + 1,
    active_key_counts: { ...state.active_key_counts, [row.hmac_key_id]: (state.active_key_counts[row.hmac_key_id] ?? 0) + 1 },
  };
}

/** Appends rows within the caller's open transaction. */
export async function appendRows(tx: Executor, keyring: Keyring, entries: AuditEntry[]): Promise<AuditRow[]> {
  let state = await writableState(tx, keyring, await lockedState(tx));
  const rows: AuditRow[] = [];
  for (const entry of entries) {
    const row = buildRow(state, keyring, entry);
    state = advance(state, row);
    rows.push(row);
  }
  await writeRowsAndState(tx, rows, signState(state, keyring), nowIso());
  return rows;
}
