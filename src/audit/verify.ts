// Verification: walks every retained row in (occurred_at, id) order, a page
// at a time (constant memory), checking each row's MAC, its link to the
// previous row (the first to the authenticated prune point), the per-key
// counts and the head recorded in the authenticated chain state; frozen rows
// of earlier generations are checked against their digest. Optionally
// compares a head exported earlier (--known-head), which is what catches a
// rollback of the whole database to an older, self-consistent state.
//
// The state, and whatever lies beyond its head, are read under the chain lock
// (a moment); the walk then covers the rows up to that head, which the
// append-only table keeps as they are, so appends go on meanwhile. Long
// chains are cut into stretches checked by worker threads (verify-range.ts).
import { availableParallelism } from 'node:os';
import type { Db } from '../db/connect.ts';
import { workerEntry } from '../lib/workers.ts';
import { FrozenDigest } from './canonical.ts';
import { authenticateState, AuditChainError } from './chain.ts';
import { names, parseEnvelope, type KnownHeadOutcome } from './envelope.ts';
import type { Keyring } from './keyring.ts';
import { countRows, eachRow, keyAtOffset, lockedState, rowsAfter, rowsBeyond, type RowKey, type StoredState } from './store.ts';
import { LINK_BROKEN, verifyRange, type RangeReport, type RangeRequest } from './verify-range.ts';
import type { RangeJob, RangeOutcome } from './verify-worker.ts';

export { envelopeOf, type HeadEnvelope, type KnownHeadOutcome } from './envelope.ts';

export interface VerifyReport {
  clean: boolean;
  rowsVerified: number;
  frozenRows: number;
  findings: string[];
  /** The first row found wrong, when one is. */
  firstBadRowId: string | null;
  knownHead?: KnownHeadOutcome;
  /** Threads the walk was spread over (0: not cut, walked in the calling thread). */
  threads: number;
}

const MAX_FINDINGS = 100;
/** Below this many rows a thread, starting one costs more than it saves. */
const MIN_ROWS_PER_THREAD = 50_000;

export interface VerifyOptions {
  knownHead?: string;
  pageSize?: number;
  /** Threads to check stretches of the chain on; 0 (the default) walks in
   * this thread. Short chains use fewer threads, or none. */
  threads?: number;
  /** The calling thread checks the first stretch itself (only where nothing
   * else waits on its event loop); the other stretches go to worker threads. */
  callingThreadToo?: boolean;
  /** Walking in this thread: called after each page (the scheduled verifier yields to the event loop here). */
  onPage?: (rowsSoFar: number) => Promise<void> | void;
}

/** Inside the running service (scheduled verifier, the admin's button): a long
 * chain is walked by one worker thread, so a core stays for requests and the
 * event loop stays free; a short one in this thread, yielding between pages. */
export const IN_SERVICE: VerifyOptions = { threads: 1, onPage: () => new Promise((r) => setImmediate(r)) };

/** `svc audit verify`: every core, this thread included. */
export const ON_THE_COMMAND_LINE: VerifyOptions = { threads: availableParallelism(), callingThreadToo: true };

/** What was read under the chain lock: the state, rows beyond its head, where to cut the walk. */
interface Start {
  state: StoredState;
  beyond: { count: number; firstId: string | null };
  cuts: RowKey[];
  /** Rows of every generation. */
  rowsAtStart: number;
}

const keyOf = (at: { occurred_at: string | null; id: string | null }): RowKey | null => (at.occurred_at && at.id ? { occurred_at: at.occurred_at, id: at.id } : null);
const before = (a: RowKey, b: RowKey): boolean => a.occurred_at < b.occurred_at || (a.occurred_at === b.occurred_at && a.id < b.id);

async function readStart(db: Db, threads: number): Promise<Start | null> {
  return db.tx(async (tx) => {
    const state = await lockedState(tx);
    if (!state) return null;
    const head = keyOf({ occurred_at: state.head_occurred_at, id: state.head_id });
    const beyond = await rowsBeyond(tx, state.generation, head);
    const cuts: RowKey[] = [];
    const n = head ? Math.min(threads, Math.floor(state.active_row_count / MIN_ROWS_PER_THREAD)) : 0;
    const total = state.active_row_count + state.frozen_row_count;
    for (let k = 1; k < n; k++) {
      const cut = await keyAtOffset(tx, Math.floor((k * total) / n));
      if (cut && before(cut, head!) && (cuts.length === 0 || before(cuts[cuts.length - 1]!, cut))) cuts.push(cut);
    }
    // n > 0 means cut into stretches, even a single one (for a worker thread).
    return { state, beyond, cuts: n > 0 ? [...cuts, head!] : [], rowsAtStart: await countRows(tx) };
  });
}

export async function verifyChain(db: Db, keyring: Keyring, options: VerifyOptions = {}): Promise<VerifyReport> {
  const findings: string[] = [];
  let firstBad: string | null = null;
  const find = (message: string, rowId?: string | null) => {
    if (rowId && !firstBad) firstBad = rowId;
    if (findings.length < MAX_FINDINGS) findings.push(message);
    else if (findings.length === MAX_FINDINGS) findings.push('… more findings not shown');
  };
  const envelope = options.knownHead !== undefined ? parseEnvelope(options.knownHead) : undefined;

  const start = await readStart(db, options.threads ?? 0);
  if (!start) {
    const anyRow = await rowsAfter(db, { not: '' }, null, 1);
    if (anyRow.length > 0) find('the audit chain state is missing while rows exist');
    return { clean: findings.length === 0, rowsVerified: 0, frozenRows: 0, findings, firstBadRowId: null, knownHead: envelope === undefined ? undefined : envelope ? 'UNPROVABLE' : 'INVALID', threads: 0 };
  }
  const { state, beyond, cuts, rowsAtStart } = start;
  try {
    authenticateState(state, keyring);
  } catch (e) {
    if (!(e instanceof AuditChainError)) throw e;
    find(e.message);
  }

  // Active generation, up to the head: one stretch in this thread, or one per worker thread.
  const head = keyOf({ occurred_at: state.head_occurred_at, id: state.head_id });
  const request = (after: RowKey | null, through: RowKey | null): RangeRequest => ({
    generation: state.generation,
    after,
    through,
    knownHead: envelope ?? null,
    maxFindings: MAX_FINDINGS + 1,
    pageSize: options.pageSize,
  });
  const requests = cuts.map((cut, i) => request(cuts[i - 1] ?? null, cut));
  const stretches =
    head === null
      ? []
      : requests.length === 0
        ? [await verifyRange(db, keyring, request(null, head), options.onPage)]
        : options.callingThreadToo && requests.length > 1
          ? await Promise.all([verifyRange(db, keyring, requests[0]!), ...inWorkers(db, keyring, requests.slice(1))])
          : await Promise.all(inWorkers(db, keyring, requests));

  let expectedPrev = state.prune_row_hmac;
  let tail: RangeReport['last'] = null;
  let count = 0;
  let ancestor = false;
  const perKey: Record<string, number> = {};
  for (const s of stretches) {
    if (s.first && s.first.prev_row_hmac !== expectedPrev) find(`row ${s.first.id} (${s.first.occurred_at}): ${LINK_BROKEN}`, s.first.id);
    for (const f of s.findings) find(f.message, f.rowId);
    for (const [id, n] of Object.entries(s.perKey)) perKey[id] = (perKey[id] ?? 0) + n;
    count += s.count;
    ancestor ||= s.ancestor;
    if (s.last) {
      expectedPrev = s.last.row_hmac;
      tail = s.last;
    }
  }

  if (beyond.count > 0) {
    find(`${beyond.count} rows lie after the head recorded in the chain state, from row ${beyond.firstId} (added outside the chain, or the state was moved back)`, beyond.firstId);
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

  // Frozen rows of earlier generations. Their query walks the whole order
  // index (no index has the generation first), so it is skipped when the row
  // count taken under the lock leaves no room for any and none are recorded.
  const frozen = new FrozenDigest();
  const unaccounted = rowsAtStart - count - beyond.count;
  if (unaccounted !== 0 || state.frozen_row_count !== 0) {
    for await (const row of eachRow(db, { not: state.generation }, options.pageSize)) frozen.add(row);
  }
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
  return { clean: findings.length === 0 && headOk, rowsVerified: count, frozenRows: frozen.count, findings, firstBadRowId: firstBad, knownHead, threads: cuts.length };
}

const WORKER = workerEntry('audit/verify-worker');

/** Checks each stretch in a worker thread of its own, with its own connection. */
function inWorkers(db: Db, keyring: Keyring, requests: RangeRequest[]): Promise<RangeReport>[] {
  return requests.map(
    (request) =>
      new Promise<RangeReport>((resolve, reject) => {
        const worker = new Worker(WORKER);
        worker.onmessage = (event: MessageEvent<RangeOutcome>) => {
          worker.terminate();
          if ('error' in event.data) reject(new Error(`audit verification thread: ${event.data.error}`));
          else resolve(event.data.report);
        };
        worker.onerror = (event) => {
          worker.terminate();
          reject(new Error(`audit verification thread: ${event.message}`));
        };
        const job: RangeJob = { target: db.target, open: {}, keys: keyring.secrets(), request };
        worker.postMessage(job);
      }),
  );
}
