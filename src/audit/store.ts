// Queries of the audit tables, for both dialects.
import { and, asc, eq, gt, ne, or, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import type { AuditRow, ChainStatePayload } from './canonical.ts';

export const STATE_ID = 'audit-chain';
/** PostgreSQL advisory lock key serialising appends across replicas. */
const PG_AUDIT_LOCK = 0x73766361;

export interface StoredState extends ChainStatePayload {
  state_mac: string;
}

export async function lockChain(ex: Executor): Promise<void> {
  // SQLite needs nothing: every write transaction holds the database's write lock.
  if (ex.dialect === 'postgres') await ex.run(sql`SELECT pg_advisory_xact_lock(${PG_AUDIT_LOCK})`);
}

export async function loadState(ex: Executor): Promise<StoredState | null> {
  const t = ex.t.auditChainState;
  const [row] = await ex.q.select().from(t).where(eq(t.singleton_id, STATE_ID));
  if (!row) return null;
  const { singleton_id: _id, updated_at: _at, ...state } = row;
  return { ...state, active_row_count: Number(state.active_row_count), frozen_row_count: Number(state.frozen_row_count) };
}

export async function saveState(ex: Executor, state: StoredState, updatedAt: string): Promise<void> {
  const t = ex.t.auditChainState;
  const values = { ...state, singleton_id: STATE_ID, updated_at: updatedAt };
  await ex.q.insert(t).values(values).onConflictDoUpdate({ target: t.singleton_id, set: values });
}

export async function insertRow(ex: Executor, row: AuditRow): Promise<void> {
  await ex.q.insert(ex.t.auditLog).values(row);
}

export async function countRows(ex: Executor): Promise<number> {
  const [r] = await ex.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log`);
  return Number(r!.n);
}

const rowOf = (r: AuditRow): AuditRow => r;

/** Rows after the (occurred_at, id) cursor, oldest first; `generation`
 * selects the active chain (`=`) or everything else, the frozen rows (`!=`). */
export async function rowsAfter(
  ex: Executor,
  generation: { is: string } | { not: string },
  after: { occurred_at: string; id: string } | null,
  limit: number,
): Promise<AuditRow[]> {
  const t = ex.t.auditLog;
  const gen = 'is' in generation ? eq(t.chain_generation, generation.is) : ne(t.chain_generation, generation.not);
  const cursor = after ? or(gt(t.occurred_at, after.occurred_at), and(eq(t.occurred_at, after.occurred_at), gt(t.id, after.id))) : undefined;
  const rows = await ex.q
    .select()
    .from(t)
    .where(cursor ? and(gen, cursor) : gen)
    .orderBy(asc(t.occurred_at), asc(t.id))
    .limit(limit);
  return rows.map(rowOf);
}

/** Every row of the generation selection, oldest first, a page at a time. */
export async function* eachRow(
  ex: Executor,
  generation: { is: string } | { not: string },
  pageSize = 1000,
  afterPage?: (rowsSoFar: number) => Promise<void> | void,
): AsyncGenerator<AuditRow> {
  let last: AuditRow | null = null;
  let seen = 0;
  for (;;) {
    const page = await rowsAfter(ex, generation, last, pageSize);
    for (const row of page) yield row;
    seen += page.length;
    last = page[page.length - 1] ?? last;
    await afterPage?.(seen);
    if (page.length < pageSize) return;
  }
}

/** Switches deletion on for the rest of this transaction (retention pruning
 * and frozen-row export only); the append-only triggers refuse it otherwise. */
export async function allowDeletes(ex: Executor, on: boolean): Promise<void> {
  if (ex.dialect === 'postgres') {
    await ex.run(sql`SELECT set_config('svc.audit_maintenance', ${on ? 'on' : 'off'}, true)`);
  } else {
    await ex.run(sql`UPDATE audit_maintenance SET active = ${on ? 1 : 0} WHERE id = 1`);
  }
}
