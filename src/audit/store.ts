// Queries of the audit tables, for both dialects.
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import type { AuditRow, ChainStatePayload, StoredRow } from './canonical.ts';

export const STATE_ID = 'audit-chain';
/** PostgreSQL advisory lock key serialising appends across replicas. */
const PG_AUDIT_LOCK = 0x73766361;

export interface StoredState extends ChainStatePayload {
  state_mac: string;
}

// Serialising chain writers. SQLite needs nothing: every write transaction
// holds the database's write lock. On PostgreSQL appends lock the chain
// state row (lockedState: one round trip, and after waiting READ COMMITTED
// re-reads the newest version of the row); before the first append there is
// no row to lock, so they fall back to a transaction-scoped advisory lock.
// Maintenance takes both, so it excludes appends either way.

const ADVISORY_LOCK = 'SELECT pg_advisory_xact_lock(?)';

/** Exclusive access to the chain for maintenance operations. */
export async function lockChain(ex: Executor): Promise<void> {
  if (ex.dialect === 'sqlite') return;
  await ex.query(ADVISORY_LOCK, [PG_AUDIT_LOCK]);
  await ex.query('SELECT 1 FROM audit_chain_state WHERE singleton_id = ? FOR UPDATE', [STATE_ID]);
}

// The append path (lockedState, writeRowsAndState) is raw SQL: every
// privileged action pays for it, and the query builder costs several times
// more than the statements themselves (docs/benchmarks.md).

const STATE_COLUMNS = [
  'format_version',
  'installation_id',
  'generation',
  'state_key_id',
  'head_row_hmac',
  'head_key_id',
  'head_occurred_at',
  'head_id',
  'prune_row_hmac',
  'prune_key_id',
  'prune_occurred_at',
  'prune_id',
  'active_row_count',
  'active_key_counts',
  'frozen_row_count',
  'frozen_snapshot_digest',
  'state_mac',
] as const;

const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/** `?` placeholders for `columns`, JSON ones cast to jsonb on PostgreSQL (SQLite stores the text). */
const placeholders = (columns: readonly string[], json: string, dialect: 'sqlite' | 'postgres'): string =>
  columns.map((c) => (c === json && dialect === 'postgres' ? 'CAST(? AS jsonb)' : '?')).join(', ');

const LOAD_STATE = `SELECT ${STATE_COLUMNS.join(', ')} FROM audit_chain_state WHERE singleton_id = ?`;

export const loadState = (ex: Executor): Promise<StoredState | null> => readState(ex, LOAD_STATE);

/** The chain state, read under the appenders' lock (see above). */
export async function lockedState(ex: Executor): Promise<StoredState | null> {
  if (ex.dialect === 'sqlite') return loadState(ex);
  const locked = await readState(ex, `${LOAD_STATE} FOR UPDATE`);
  if (locked) return locked;
  await ex.query(ADVISORY_LOCK, [PG_AUDIT_LOCK]);
  return readState(ex, `${LOAD_STATE} FOR UPDATE`);
}

async function readState(ex: Executor, text: string): Promise<StoredState | null> {
  const [row] = await ex.query<Record<string, unknown>>(text, [STATE_ID]);
  if (!row) return null;
  return {
    ...(row as unknown as StoredState),
    active_row_count: Number(row.active_row_count),
    frozen_row_count: Number(row.frozen_row_count),
    active_key_counts: parsed<Record<string, number>>(row.active_key_counts),
  };
}

const SAVE_STATE_TEXT = (dialect: 'sqlite' | 'postgres') =>
  `INSERT INTO audit_chain_state (singleton_id, ${STATE_COLUMNS.join(', ')}, updated_at) ` +
  `VALUES (?, ${placeholders(STATE_COLUMNS, 'active_key_counts', dialect)}, ?) ON CONFLICT (singleton_id) DO UPDATE SET ` +
  [...STATE_COLUMNS, 'updated_at'].map((c) => `${c} = excluded.${c}`).join(', ');
const SAVE_STATE = { sqlite: SAVE_STATE_TEXT('sqlite'), postgres: SAVE_STATE_TEXT('postgres') };

const stateParams = (state: StoredState, updatedAt: string): unknown[] => [
  STATE_ID,
  ...STATE_COLUMNS.map((c) => (c === 'active_key_counts' ? JSON.stringify(state[c]) : state[c])),
  updatedAt,
];

export async function saveState(ex: Executor, state: StoredState, updatedAt: string): Promise<void> {
  await ex.query(SAVE_STATE[ex.dialect], stateParams(state, updatedAt));
}

const ROW_COLUMNS = [
  'id',
  'occurred_at',
  'action',
  'target_type',
  'target_id',
  'result',
  'outcome',
  'event_id',
  'user_id',
  'actor_digest',
  'api_key_id',
  'project_id',
  'source_ip',
  'user_agent',
  'metadata',
  'prev_row_hmac',
  'row_hmac',
  'hmac_key_id',
  'chain_generation',
] as const;

/** Rows are stored with their metadata as canonical (sorted-key) text, so
 * that verification on SQLite can MAC the stored text as it is. */
const rowParams = (row: AuditRow): unknown[] => ROW_COLUMNS.map((c) => (c === 'metadata' ? sortedJson(row.metadata) : row[c]));
const rowValues = (dialect: 'sqlite' | 'postgres') => `(${placeholders(ROW_COLUMNS, 'metadata', dialect)})`;
const INSERT_ROWS = `INSERT INTO audit_log (${ROW_COLUMNS.join(', ')}) VALUES `;
/** Rows per PostgreSQL statement (19 parameters a row, within the protocol's 65,535). */
const PG_ROWS_PER_STATEMENT = 1000;

/** Writes appended rows and the chain state that now ends with them. On
 * PostgreSQL the last rows and the state go in one statement (a
 * data-modifying CTE): an audited action pays one round trip for both. */
export async function writeRowsAndState(ex: Executor, rows: AuditRow[], state: StoredState, updatedAt: string): Promise<void> {
  if (ex.dialect === 'sqlite') {
    const text = INSERT_ROWS + rowValues('sqlite');
    for (const row of rows) await ex.query(text, rowParams(row));
    await saveState(ex, state, updatedAt);
    return;
  }
  const values = rowValues('postgres');
  let i = 0;
  for (; rows.length - i > PG_ROWS_PER_STATEMENT; i += PG_ROWS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + PG_ROWS_PER_STATEMENT);
    await ex.query(INSERT_ROWS + chunk.map(() => values).join(', '), chunk.flatMap(rowParams));
  }
  const last = rows.slice(i);
  if (last.length === 0) return saveState(ex, state, updatedAt);
  await ex.query(`WITH appended AS (${INSERT_ROWS}${last.map(() => values).join(', ')}) ${SAVE_STATE.postgres}`, [
    ...last.flatMap(rowParams),
    ...stateParams(state, updatedAt),
  ]);
}

/** Whether the log holds no row at all (one index probe, not a count). */
export async function auditIsEmpty(ex: Executor): Promise<boolean> {
  return (await ex.query('SELECT 1 AS one FROM audit_log LIMIT 1', [])).length === 0;
}

export async function countRows(ex: Executor): Promise<number> {
  const [r] = await ex.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log`);
  return Number(r!.n);
}

const COLUMNS = sql.raw(ROW_COLUMNS.join(', '));

/** Rows after the (occurred_at, id) cursor, oldest first; `generation`
 * selects the active chain (`=`) or everything else, the frozen rows (`!=`).
 * Raw SQL without the query builder's row mapping: verification reads every
 * row through here. The row-value comparison walks the (occurred_at, id) index. */
export async function rowsAfter(
  ex: Executor,
  generation: { is: string } | { not: string },
  after: { occurred_at: string; id: string } | null,
  limit: number,
): Promise<AuditRow[]> {
  const gen = 'is' in generation ? sql`chain_generation = ${generation.is}` : sql`chain_generation <> ${generation.not}`;
  const cursor = after ? sql` AND (occurred_at, id) > (${after.occurred_at}, ${after.id})` : sql``;
  const rows = await ex.all<AuditRow & { metadata: unknown }>(
    sql`SELECT ${COLUMNS} FROM audit_log WHERE ${gen}${cursor} ORDER BY occurred_at, id LIMIT ${limit}`,
  );
  // SQLite hands JSON back as text; PostgreSQL's jsonb arrives parsed.
  for (const r of rows) if (typeof r.metadata === 'string') r.metadata = JSON.parse(r.metadata);
  return rows;
}

/** Every row of the generation selection, oldest first, a page at a time. */
export async function* eachRow(
  ex: Executor,
  generation: { is: string } | { not: string },
  pageSize = 5000,
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

/** A row's place in chain order. */
export interface RowKey {
  occurred_at: string;
  id: string;
}

/** Verification reads through fixed statements (cached prepared statements on
 * SQLite) and leaves the metadata as stored: every row of the chain passes here. */
const CHAIN_ROWS = (after: boolean, through: boolean) =>
  `SELECT ${ROW_COLUMNS.join(', ')} FROM audit_log WHERE chain_generation = ?` +
  (after ? ' AND (occurred_at, id) > (?, ?)' : '') +
  (through ? ' AND (occurred_at, id) <= (?, ?)' : '') +
  ' ORDER BY occurred_at, id LIMIT ?';
const CHAIN_ROWS_TEXT = [CHAIN_ROWS(false, false), CHAIN_ROWS(false, true), CHAIN_ROWS(true, false), CHAIN_ROWS(true, true)];

/** Rows of `generation` with after < key <= through (either end open when null), oldest first. */
export async function chainRows(ex: Executor, generation: string, after: RowKey | null, through: RowKey | null, limit: number): Promise<StoredRow[]> {
  const params: unknown[] = [generation];
  if (after) params.push(after.occurred_at, after.id);
  if (through) params.push(through.occurred_at, through.id);
  params.push(limit);
  return ex.query<StoredRow>(CHAIN_ROWS_TEXT[(after ? 2 : 0) + (through ? 1 : 0)]!, params);
}

/** The key `offset` rows into chain order, over every generation (a split point: a cheap walk of the order index). */
export async function keyAtOffset(ex: Executor, offset: number): Promise<RowKey | null> {
  const [key] = await ex.query<RowKey>('SELECT occurred_at, id FROM audit_log ORDER BY occurred_at, id LIMIT 1 OFFSET ?', [offset]);
  return key ?? null;
}

/** Rows of `generation` after `key` (all of them when null): how many, and the first. */
export async function rowsBeyond(ex: Executor, generation: string, key: RowKey | null): Promise<{ count: number; firstId: string | null }> {
  const where = key ? 'chain_generation = ? AND (occurred_at, id) > (?, ?)' : 'chain_generation = ?';
  const params = key ? [generation, key.occurred_at, key.id] : [generation];
  const [first] = await ex.query<{ id: string }>(`SELECT id FROM audit_log WHERE ${where} ORDER BY occurred_at, id LIMIT 1`, params);
  if (!first) return { count: 0, firstId: null };
  const [n] = await ex.query<{ n: number }>(`SELECT COUNT(*) AS n FROM audit_log WHERE ${where}`, params);
  return { count: Number(n!.n), firstId: first.id };
}
