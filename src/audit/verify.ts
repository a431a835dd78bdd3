// Verification: walks every retained row in (occurred_at, id) order, a page
// at a time (constant memory), checking each row's MAC, its link to the
// previous row (the first to the authenticated prune point), the per-key
// counts and the head recorded in the authenticated chain state; frozen rows
// of earlier generations are checked against their digest. Optionally
// compares a head exported earlier (--known-head), which is what catches a
// rollback of the whole database to an older, self-consistent state.
import type { Executor } from '../db/connect.ts';
import { FrozenDigest, type AuditRow } from './canonical.ts';
import { authenticateState, AuditChainError, rowProblem } from './chain.ts';
import type { Keyring } from './keyring.ts';
import { eachRow, loadState, rowsAfter, type StoredState } from './store.ts';

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

export interface VerifyReport {
  clean: boolean;
  rowsVerified: number;
  frozenRows: number;
  findings: string[];
  /** The first row found wrong, when one is. */
  firstBadRowId: string | null;
  knownHead?: KnownHeadOutcome;
}

const MAX_FINDINGS = 100;
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
export function parseEnvelope(text: string): Partial<HeadEnvelope> & { row_hmac: string } | null {
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
  return v as Partial<HeadEnvelope> & { row_hmac: string };
}

/** Whether an envelope names this row/boundary (every key it gives must agree). */
function names(env: Partial<HeadEnvelope> & { row_hmac: string }, at: { row_hmac: string | null; hmac_key_id: string | null; occurred_at: string | null; id: string | null }, generation: string): boolean {
  if (!at.row_hmac || env.row_hmac !== at.row_hmac) return false;
  if (env.hmac_key_id !== undefined && env.hmac_key_id !== at.hmac_key_id) return false;
  if (env.occurred_at !== undefined && env.occurred_at !== at.occurred_at) return false;
  if (env.id !== undefined && env.id !== at.id) return false;
  if (env.generation !== undefined && env.generation !== generation) return false;
  return true;
}

export interface VerifyOptions {
  knownHead?: string;
  pageSize?: number;
  /** Called after each page (the scheduled verifier yields to the event loop here). */
  onPage?: (rowsSoFar: number) => Promise<void> | void;
}

export async function verifyChain(ex: Executor, keyring: Keyring, options: VerifyOptions = {}): Promise<VerifyReport> {
  const findings: string[] = [];
  let firstBad: string | null = null;
  const find = (message: string, rowId?: string) => {
    if (rowId && !firstBad) firstBad = rowId;
    if (findings.length < MAX_FINDINGS) findings.push(message);
    else if (findings.length === MAX_FINDINGS) findings.push('… more findings not shown');
  };
  const envelope = options.knownHead !== undefined ? parseEnvelope(options.knownHead) : undefined;

  const state = await loadState(ex);
  if (!state) {
    const anyRow = await rowsAfter(ex, { not: '' }, null, 1);
    if (anyRow.length > 0) find('the audit chain state is missing while rows exist');
    return { clean: findings.length === 0, rowsVerified: 0, frozenRows: 0, findings, firstBadRowId: null, knownHead: envelope === undefined ? undefined : envelope ? 'UNPROVABLE' : 'INVALID' };
  }
  try {
    authenticateState(state, keyring);
  } catch (e) {
    if (!(e instanceof AuditChainError)) throw e;
    find(e.message);
  }

  // Active generation.
  let expectedPrev = state.prune_row_hmac;
  let tail: AuditRow | null = null;
  let count = 0;
  let ancestor = false;
  const perKey: Record<string, number> = {};
  for await (const row of eachRow(ex, { is: state.generation }, options.pageSize, options.onPage)) {
    count++;
    perKey[row.hmac_key_id] = (perKey[row.hmac_key_id] ?? 0) + 1;
    const problem = rowProblem(row, keyring);
    if (problem) find(`row ${row.id} (${row.occurred_at}): ${problem}`, row.id);
    if (row.prev_row_hmac !== expectedPrev) {
      find(`row ${row.id} (${row.occurred_at}): does not follow the row before it (a row was removed, inserted or reordered)`, row.id);
    }
    if (envelope && names(envelope, row, state.generation)) ancestor = true;
    expectedPrev = row.row_hmac;
    tail = row;
  }

  if (count !== state.active_row_count) find(`the chain state records ${state.active_row_count} rows but ${count} were found`);
  for (const id of new Set([...Object.keys(perKey), ...Object.keys(state.active_key_counts)])) {
    if ((perKey[id] ?? 0) !== (state.active_key_counts[id] ?? 0)) {
      find(`key ${id.slice(0, 12)}…: the chain state records ${state.active_key_counts[id] ?? 0} rows but ${perKey[id] ?? 0} were found`);
    }
  }
  if ((tail?.row_hmac ?? state.prune_row_hmac) !== (state.head_row_hmac ?? state.prune_row_hmac)) {
    find(`the last row ${tail?.id ?? '(none)'} is not the head recorded in the chain state (rows after ${tail?.id ?? 'the prune point'} are missing or the head was moved)`, tail?.id);
  } else if (tail && (tail.id !== state.head_id || tail.occurred_at !== state.head_occurred_at || tail.hmac_key_id !== state.head_key_id)) {
    find(`the last row ${tail.id} does not match the head recorded in the chain state`, tail.id);
  }

  // Frozen rows of earlier generations.
  const frozen = new FrozenDigest();
  for await (const row of eachRow(ex, { not: state.generation }, options.pageSize)) frozen.add(row);
  if (frozen.count !== state.frozen_row_count || frozen.digest() !== state.frozen_snapshot_digest) {
    find(`frozen rows of earlier generations do not match their recorded digest (${frozen.count} found, ${state.frozen_row_count} recorded)`);
  }

  let knownHead: KnownHeadOutcome | undefined;
  if (envelope === null) knownHead = 'INVALID';
  else if (envelope) {
    const head = { row_hmac: state.head_row_hmac, hmac_key_id: state.head_key_id, occurred_at: state.head_occurred_at, id: state.head_id };
    const prune = { row_hmac: state.prune_row_hmac, hmac_key_id: state.prune_key_id, occurred_at: state.prune_occurred_at, id: state.prune_id };
    const atHead = names(envelope, head, state.generation);
    const atPrune = names(envelope, prune, state.generation);
    knownHead = atHead && atPrune ? 'CURRENT_PRUNE_MATCH' : atHead ? 'CURRENT_MATCH' : atPrune ? 'PRUNE_MATCH' : ancestor ? 'VERIFIED_ANCESTOR' : 'UNPROVABLE';
  }
  const headOk = knownHead === undefined || (knownHead !== 'INVALID' && knownHead !== 'UNPROVABLE');
  return { clean: findings.length === 0 && headOk, rowsVerified: count, frozenRows: frozen.count, findings, firstBadRowId: firstBad, knownHead };
}
