// Chain maintenance: retention pruning (the only routine deletion), key
// rotation and retirement, and the recovery operations an operator runs from
// the CLI. Each operation that changes the chain appends a marker row, so
// the log records its own maintenance.
import { and, asc, eq, lt, ne, sql } from 'drizzle-orm';
import type { Db, Executor } from '../db/connect.ts';
import { nowIso } from '../lib/clock.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import { FrozenDigest, type AuditRow, type ChainStatePayload } from './canonical.ts';
import { advance, AuditChainError, authenticateState, buildRow, genesisState, rowProblem, signState, type AuditEntry } from './chain.ts';
import type { Keyring } from './keyring.ts';
import { allowDeletes, eachRow, loadState, lockChain, rowsAfter, saveState, writeRowsAndState, type StoredState } from './store.ts';

const payloadOf = ({ state_mac: _, ...payload }: StoredState): ChainStatePayload => payload;

/** Appends marker rows to `state` and saves it signed with the current key. */
async function appendMarkers(ex: Executor, keyring: Keyring, state: ChainStatePayload, entries: AuditEntry[]): Promise<AuditRow[]> {
  const rows: AuditRow[] = [];
  let next = state;
  for (const entry of entries) {
    const row = buildRow(next, keyring, { ...entry, metadata: { ...entry.metadata, via: 'svc audit' } });
    next = advance(next, row);
    rows.push(row);
  }
  await writeRowsAndState(ex, rows, signState(next, keyring), nowIso());
  return rows;
}

async function authenticated(ex: Executor, keyring: Keyring): Promise<StoredState> {
  const state = await loadState(ex);
  if (!state) throw new AuditChainError('there is no audit chain state yet');
  authenticateState(state, keyring);
  return state;
}

/** `svc reset`: the caller's transaction deletes every row of every table,
 * the audit log's included (its append-only guard lets it). */
export const allowWipe = (tx: Executor): Promise<void> => allowDeletes(tx, true);

// --- retention -------------------------------------------------------------------

/** Deletes active rows older than `cutoff` (at most `limit`), oldest first,
 * and moves the authenticated prune point to the last deleted row, so the
 * retained chain still verifies from its first row. */
export async function prune(db: Db, keyring: Keyring, cutoff: string, limit = 5000): Promise<number> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    const t = tx.t.auditLog;
    const old = await tx.q
      .select()
      .from(t)
      .where(and(eq(t.chain_generation, state.generation), lt(t.occurred_at, cutoff)))
      .orderBy(asc(t.occurred_at), asc(t.id))
      .limit(limit);
    if (old.length === 0) return 0;
    const lastDeleted = old[old.length - 1]!;
    await allowDeletes(tx, true);
    for (let i = 0; i < old.length; i += 500) {
      const ids = old.slice(i, i + 500).map((r) => r.id);
      await tx.run(sql`DELETE FROM audit_log WHERE id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)})`);
    }
    await allowDeletes(tx, false);
    const counts = { ...state.active_key_counts };
    for (const r of old) counts[r.hmac_key_id] = (counts[r.hmac_key_id] ?? 0) - 1;
    for (const [k, n] of Object.entries(counts)) if (n <= 0) delete counts[k];
    const next: ChainStatePayload = {
      ...payloadOf(state),
      prune_row_hmac: lastDeleted.row_hmac,
      prune_key_id: lastDeleted.hmac_key_id,
      prune_occurred_at: lastDeleted.occurred_at,
      prune_id: lastDeleted.id,
      active_row_count: state.active_row_count - old.length,
      active_key_counts: counts,
    };
    await saveState(tx, signState(next, keyring), nowIso());
    return old.length;
  });
}

// --- keys ----------------------------------------------------------------------------

/** Moves the chain to the current key: the state is re-signed with it and a
 * marker row (signed with it) records the change. The old key must still be
 * configured as a previous key so earlier rows keep verifying. */
export async function rotateChainKey(db: Db, keyring: Keyring): Promise<{ from: string; to: string }> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    if (state.state_key_id === keyring.current.id) {
      throw new AuditChainError('the chain already uses the current SVC_AUDIT_CHAIN_SECRET; set a new one (and keep the old one in SVC_AUDIT_CHAIN_PREVIOUS_SECRETS) first');
    }
    const from = state.state_key_id;
    await appendMarkers(tx, keyring, payloadOf(state), [
      { action: 'audit.chain_key_rotated', target_type: 'audit_chain', target_id: state.generation, metadata: { from_key_id: from, to_key_id: keyring.current.id } },
    ]);
    return { from, to: keyring.current.id };
  });
}

/** Proves no retained active row is signed with `keyId` and records that the
 * key is retired; the caller then removes it from the configuration. */
export async function retireChainKey(db: Db, keyring: Keyring, keyId: string): Promise<void> {
  await db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    if (keyId === keyring.current.id || keyId === state.state_key_id) throw new AuditChainError('the current chain key cannot be retired');
    if (!keyring.get(keyId)) throw new AuditChainError(`no configured key has id ${keyId}`);
    const t = tx.t.auditLog;
    const [used] = await tx.all<{ n: number }>(
      sql`SELECT COUNT(*) AS n FROM audit_log WHERE ${t.chain_generation} = ${state.generation} AND ${t.hmac_key_id} = ${keyId}`,
    );
    if (Number(used!.n) > 0 || (state.active_key_counts[keyId] ?? 0) > 0) throw new AuditChainError(`${Number(used!.n)} retained rows are still signed with this key; it can be retired once they are pruned`);
    await appendMarkers(tx, keyring, payloadOf(state), [
      { action: 'audit.chain_key_retired', target_type: 'audit_chain', target_id: state.generation, metadata: { key_id: keyId } },
    ]);
  });
}

// --- recovery ---------------------------------------------------------------------

export interface ActivationPlan {
  mode: 'adopt' | 'freeze';
  rows: number;
  reason: string;
  head: string | null;
  frozenDigest: string | null;
}

/** Walks every row as one chain under the keyring: returns whether it verifies. */
async function walkAll(ex: Executor, keyring: Keyring) {
  let prev: AuditRow | null = null;
  let first: AuditRow | null = null;
  let reason: string | null = null;
  const keyCounts: Record<string, number> = {};
  const generations = new Set<string>();
  const digest = new FrozenDigest();
  for await (const row of eachRow(ex, { not: '' })) {
    digest.add(row);
    generations.add(row.chain_generation);
    keyCounts[row.hmac_key_id] = (keyCounts[row.hmac_key_id] ?? 0) + 1;
    first ??= row;
    const problem = rowProblem(row, keyring);
    if (!reason && problem) reason = `row ${row.id}: ${problem}`;
    else if (!reason && prev && row.prev_row_hmac !== prev.row_hmac) reason = `row ${row.id} does not follow the row before it`;
    prev = row;
  }
  if (!reason && generations.size > 1) reason = 'rows belong to more than one generation';
  return { ok: reason === null, rows: digest.count, first, last: prev, keyCounts, digest, reason: reason ?? 'every row verifies as one chain' };
}

/** Creates an authenticated chain state where there is none (or none that
 * authenticates with the configured keys): rows that verify as one chain are
 * adopted as the active chain; otherwise they are frozen under a digest and a
 * new generation starts. Dry run unless `apply`. */
export async function activateChainState(db: Db, keyring: Keyring, options: { apply: boolean; knownHead?: string }): Promise<ActivationPlan> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const existing = await loadState(tx);
    if (existing) {
      let valid = true;
      try {
        authenticateState(existing, keyring);
      } catch {
        valid = false;
      }
      if (valid) throw new AuditChainError('the audit chain state is present and authentic; there is nothing to activate');
    }
    const walk = await walkAll(tx, keyring);
    const adopt = walk.ok && walk.rows > 0;
    if (options.knownHead !== undefined) {
      const head = JSON.parse(options.knownHead) as { row_hmac?: string };
      if (!adopt || walk.last?.row_hmac !== head.row_hmac) {
        throw new AuditChainError('the rows do not end at the known head; refusing to activate');
      }
    }
    const plan: ActivationPlan = {
      mode: adopt ? 'adopt' : 'freeze',
      rows: walk.rows,
      reason: walk.rows === 0 ? 'there are no rows' : walk.reason,
      head: adopt ? walk.last!.row_hmac : null,
      frozenDigest: adopt ? null : walk.digest.digest(),
    };
    if (!options.apply) return plan;
    const base = genesisState(keyring, existing?.installation_id);
    const state: ChainStatePayload = adopt
      ? {
          ...base,
          generation: walk.first!.chain_generation,
          head_row_hmac: walk.last!.row_hmac,
          head_key_id: walk.last!.hmac_key_id,
          head_occurred_at: walk.last!.occurred_at,
          head_id: walk.last!.id,
          prune_row_hmac: walk.first!.prev_row_hmac,
          active_row_count: walk.rows,
          active_key_counts: walk.keyCounts,
        }
      : { ...base, frozen_row_count: walk.rows, frozen_snapshot_digest: plan.frozenDigest };
    await appendMarkers(tx, keyring, state, [
      {
        action: 'audit.chain_state_activated',
        target_type: 'audit_chain',
        target_id: state.generation,
        metadata: { mode: plan.mode, rows: plan.rows, reason: plan.reason, frozen_digest: plan.frozenDigest },
      },
    ]);
    return plan;
  });
}

export interface ResealPlan {
  previousPrune: string | null;
  newPrune: string | null;
  rowsRecorded: number;
  rowsFound: number;
}

/** After rows were removed outside retention pruning (verify reports the
 * first retained row not following the prune point), re-signs the prune
 * point at the first retained row's predecessor, once the operator has
 * looked. Every retained row must still verify. Dry run unless `apply`. */
export async function resealWatermark(db: Db, keyring: Keyring, options: { apply: boolean }): Promise<ResealPlan> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    const rows = await rowsAfter(tx, { is: state.generation }, null, 1);
    const first = rows[0];
    if (!first) throw new AuditChainError('there are no retained rows to reseal at');
    let prev: AuditRow | null = null;
    let count = 0;
    const keyCounts: Record<string, number> = {};
    for await (const row of eachRow(tx, { is: state.generation })) {
      const problem = rowProblem(row, keyring);
      if (problem) throw new AuditChainError(`row ${row.id}: ${problem}; resealing would hide it`);
      if (prev && row.prev_row_hmac !== prev.row_hmac) throw new AuditChainError(`row ${row.id} does not follow the row before it; resealing would hide it`);
      keyCounts[row.hmac_key_id] = (keyCounts[row.hmac_key_id] ?? 0) + 1;
      count++;
      prev = row;
    }
    if (prev!.row_hmac !== state.head_row_hmac) throw new AuditChainError('the last row is not the recorded head; resealing would hide it');
    const plan: ResealPlan = { previousPrune: state.prune_row_hmac, newPrune: first.prev_row_hmac, rowsRecorded: state.active_row_count, rowsFound: count };
    if (plan.previousPrune === plan.newPrune && count === state.active_row_count) throw new AuditChainError('the prune point is already where the chain starts');
    if (!options.apply) return plan;
    const next: ChainStatePayload = {
      ...payloadOf(state),
      prune_row_hmac: first.prev_row_hmac,
      prune_key_id: null,
      prune_occurred_at: null,
      prune_id: null,
      active_row_count: count,
      active_key_counts: keyCounts,
    };
    await appendMarkers(tx, keyring, next, [
      {
        action: 'audit.watermark_resealed',
        target_type: 'audit_chain',
        target_id: state.generation,
        metadata: { previous_prune_row_hmac: plan.previousPrune, prune_row_hmac: plan.newPrune, rows_recorded: plan.rowsRecorded, rows_found: count },
      },
    ]);
    return plan;
  });
}

/** Writes the frozen rows (earlier generations) to `write` as JSON lines,
 * checks them against the recorded digest, then deletes them. */
export async function exportAndDeleteFrozen(db: Db, keyring: Keyring, write: (line: string) => void, options: { apply: boolean }): Promise<{ rows: number; digest: string | null }> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    if (state.frozen_row_count === 0) throw new AuditChainError('there are no frozen rows');
    const digest = new FrozenDigest();
    for await (const row of eachRow(tx, { not: state.generation })) {
      digest.add(row);
      write(sortedJson(row));
    }
    const value = digest.digest();
    if (digest.count !== state.frozen_row_count || value !== state.frozen_snapshot_digest) {
      throw new AuditChainError('the frozen rows do not match their recorded digest; nothing deleted');
    }
    if (!options.apply) return { rows: digest.count, digest: value };
    await allowDeletes(tx, true);
    await tx.q.delete(tx.t.auditLog).where(ne(tx.t.auditLog.chain_generation, state.generation));
    await allowDeletes(tx, false);
    await appendMarkers(tx, keyring, { ...payloadOf(state), frozen_row_count: 0, frozen_snapshot_digest: null }, [
      { action: 'audit.frozen_rows_exported', target_type: 'audit_chain', target_id: state.generation, metadata: { rows: digest.count, digest: value } },
    ]);
    return { rows: digest.count, digest: value };
  });
}

/** Rows of the active generation that are not on the chain from the prune
 * point to the head (forks left by a database restored without the
 * uniqueness index) are moved to audit_log_forks. Dry run unless `apply`. */
export async function forkCleanup(db: Db, keyring: Keyring, options: { apply: boolean }): Promise<string[]> {
  return db.tx(async (tx) => {
    await lockChain(tx);
    const state = await authenticated(tx, keyring);
    const byHmac = new Map<string, AuditRow>();
    for await (const row of eachRow(tx, { is: state.generation })) byHmac.set(row.row_hmac, row);
    // Walk back from the authenticated head; everything not reached is a fork.
    const onChain = new Map<string, AuditRow>();
    let at = state.head_row_hmac ? byHmac.get(state.head_row_hmac) : undefined;
    while (at && !onChain.has(at.id)) {
      onChain.set(at.id, at);
      at = at.prev_row_hmac ? byHmac.get(at.prev_row_hmac) : undefined;
    }
    const forks = [...byHmac.values()].filter((r) => !onChain.has(r.id));
    if (!options.apply || forks.length === 0) return forks.map((r) => r.id);
    const now = nowIso();
    await allowDeletes(tx, true);
    for (const r of forks) {
      await tx.q.insert(tx.t.auditLogForks).values({ id: r.id, quarantined_at: now, row_json: sortedJson(r) });
      await tx.q.delete(tx.t.auditLog).where(eq(tx.t.auditLog.id, r.id));
    }
    await allowDeletes(tx, false);
    const counts: Record<string, number> = {};
    for (const r of onChain.values()) counts[r.hmac_key_id] = (counts[r.hmac_key_id] ?? 0) + 1;
    await appendMarkers(tx, keyring, { ...payloadOf(state), active_row_count: onChain.size, active_key_counts: counts }, [
      { action: 'audit.fork_cleanup', target_type: 'audit_chain', target_id: state.generation, metadata: { quarantined: forks.length, row_ids: forks.map((r) => r.id).slice(0, 100) } },
    ]);
    return forks.map((r) => r.id);
  });
}
