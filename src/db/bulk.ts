// Many-row writes for the ingest path (events and their projections arrive
// hundreds per request). drizzle's builder costs tens of microseconds per row
// in query building alone; here one statement text serves both dialects:
//   SQLite      one cached prepared statement on the transaction's own
//               connection, run per row (bun:sqlite, a few µs a row)
//   PostgreSQL  INSERT ... SELECT FROM unnest(<one array per column>): a
//               handful of parameters per chunk instead of one per cell
// The conflict clause (`ON CONFLICT ... DO NOTHING | DO UPDATE SET ...`) is
// written once in SQL both dialects accept.
import type { Database } from 'bun:sqlite';
import { sql } from 'drizzle-orm';
import type { Executor } from './connect.ts';

export interface BulkWrite {
  table: string;
  columns: readonly string[];
  /** Columns holding JSON (stored as text on SQLite, jsonb on PostgreSQL). */
  json: ReadonlySet<string>;
  /** The ON CONFLICT clause. */
  conflict: string;
  /** PostgreSQL types of the non-text columns (JSON columns are jsonb). */
  pgTypes?: Readonly<Record<string, string>>;
  /** PostgreSQL: a column's value as an expression over the row's text cells (`u.<column>`), in
   * place of the cell itself. */
  pgSelect?: Readonly<Record<string, string>>;
  /** A column whose value is reported for each row actually inserted
   * (with `DO NOTHING`: the rows that were new). */
  report?: string;
}

const PG_CHUNK = 2000;

/** Text as stored, alike on both dialects: NUL replaced (PostgreSQL refuses it),
 * lone surrogates too (left by cutting text to a length; PostgreSQL's driver
 * writes them as U+FFFD, and lookups must build the same keys as what is read back). */
export function storedText(value: string): string {
  const well = value.isWellFormed() ? value : value.toWellFormed();
  return well.includes('\u0000') ? well.replaceAll('\u0000', '\ufffd') : well;
}

/** A cell as bound: JSON as text, booleans as 0/1 (SQLite), text as stored. */
function cell(isJson: boolean, value: unknown): string | number | null {
  if (value === undefined || value === null) return null;
  if (isJson) return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') return storedText(value);
  return value as number;
}

/** The cells of one row in column order, as bound on SQLite; which columns hold JSON is looked up
 * once per spec, not once per cell (hundreds of rows per call). */
const jsonFlags = new WeakMap<BulkWrite, boolean[]>();
export function cellsOf(spec: BulkWrite, row: Record<string, unknown>): (string | number | null)[] {
  let flags = jsonFlags.get(spec);
  if (!flags) jsonFlags.set(spec, (flags = spec.columns.map((c) => spec.json.has(c))));
  const out = new Array<string | number | null>(flags.length);
  for (let i = 0; i < flags.length; i++) out[i] = cell(flags[i]!, row[spec.columns[i]!]);
  return out;
}

/** A PostgreSQL array literal of text (bound as one parameter, never spliced into SQL). */
export const arrayLiteral = (values: (string | number | null)[]): string =>
  `{${values.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`)).join(',')}}`;

/** The bun:sqlite connection under a SQLite executor (inside tx(): the writer). */
export const sqliteClient = (ex: Executor): Database => (ex.q as unknown as { $client: Database }).$client;

/** Writes `rows` (objects keyed by column); returns the `report` values of the rows inserted. */
export async function bulkWrite(ex: Executor, spec: BulkWrite, rows: readonly Record<string, unknown>[]): Promise<unknown[]> {
  const out: unknown[] = [];
  if (rows.length === 0) return out;
  const columns = spec.columns.join(', ');
  if (ex.dialect === 'sqlite') {
    // Cached per text by bun:sqlite; `changes` tells a new row from a skipped one without RETURNING.
    const marks = spec.columns.map(() => '?').join(', ');
    const statement = sqliteClient(ex).query(`INSERT INTO ${spec.table} (${columns}) VALUES (${marks}) ${spec.conflict}`);
    for (const row of rows) {
      const { changes } = statement.run(...(cellsOf(spec, row) as never[]));
      if (spec.report && changes > 0) out.push(row[spec.report]);
    }
    return out;
  }
  const select = spec.columns.map((c) => {
    if (spec.pgSelect?.[c]) return spec.pgSelect[c];
    const type = spec.json.has(c) ? 'jsonb' : (spec.pgTypes?.[c] ?? 'text');
    return type === 'text' ? `u.${c}` : `u.${c}::${type}`;
  });
  const head = sql.raw(`INSERT INTO ${spec.table} (${columns}) SELECT ${select.join(', ')} FROM unnest(`);
  const tail = sql.raw(`) AS u(${columns}) ${spec.conflict}${spec.report ? ` RETURNING ${spec.report}` : ''}`);
  for (let i = 0; i < rows.length; i += PG_CHUNK) {
    const part = rows.slice(i, i + PG_CHUNK);
    const arrays = spec.columns.map((c) => sql`${arrayLiteral(part.map((row) => cell(spec.json.has(c), row[c])))}::text[]`);
    const query = sql`${head}${sql.join(arrays, sql`, `)}${tail}`;
    if (spec.report) out.push(...(await ex.all<Record<string, unknown>>(query)).map((r) => r[spec.report!]));
    else await ex.run(query);
  }
  return out;
}

/** Sets `target.column` of the row whose `target.key` is each pair's first to the pair's second (text or null). */
export async function bulkSet(ex: Executor, target: { table: string; key: string; column: string }, pairs: readonly (readonly [string, string | null])[]): Promise<void> {
  const { table, key, column } = target;
  if (ex.dialect === 'sqlite') {
    const statement = sqliteClient(ex).query(`UPDATE ${table} SET ${column} = ? WHERE ${key} = ?`);
    for (const [k, v] of pairs) statement.run(v, k);
    return;
  }
  for (let i = 0; i < pairs.length; i += PG_CHUNK) {
    const part = pairs.slice(i, i + PG_CHUNK);
    const keys = arrayLiteral(part.map((p) => p[0]));
    const values = arrayLiteral(part.map((p) => p[1]));
    await ex.run(sql`${sql.raw(`UPDATE ${table} SET ${column} = u.v FROM unnest(`)}${keys}::text[], ${values}::text[]${sql.raw(`) AS u(k, v) WHERE ${table}.${key} = u.k`)}`);
  }
}
