// Keyset paging of the task list: the sortable columns and the opaque cursor
// that continues a page. A cursor is base64url JSON of the sort it belongs to
// and the last row's key (its sort values and a tie-breaker), so the next page
// starts right after that row through the sort's index, at any depth. Columns
// that may be empty list their empty rows last in either order.
import type { Dialect } from '../db/connect.ts';
import { validationFailed } from '../http/errors.ts';

export const SORTS = ['created_at', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'name', 'state'] as const;
export type Sort = (typeof SORTS)[number];
export type Order = 'asc' | 'desc';

export interface SortSpec {
  /** Key columns before the tie-breaker. */
  columns: string[];
  /** The one key column may be NULL (those rows come after all others). */
  nullable: boolean;
  /** SQLite: the index that serves the sort (named so the planner cannot pick another). */
  index: string;
  /** SQLite's index holds only the column (migration 0010: ingest writes every entry), so rows of
   * equal value come in rowid order: the rowid breaks ties there, the row id elsewhere. */
  slim: boolean;
}

export const SORT_SPECS: Record<Sort, SortSpec> = {
  created_at: { columns: ['created_at'], nullable: false, index: 'tasks_project_created', slim: false },
  received_at: { columns: ['received_at'], nullable: true, index: 'tasks_received', slim: true },
  started_at: { columns: ['started_at'], nullable: true, index: 'tasks_started', slim: true },
  finished_at: { columns: ['finished_at'], nullable: true, index: 'tasks_finished', slim: true },
  runtime_ms: { columns: ['runtime_ms'], nullable: true, index: 'tasks_runtime', slim: true },
  name: { columns: ['name'], nullable: true, index: 'tasks_name', slim: true },
  state: { columns: ['state', 'created_at'], nullable: false, index: 'tasks_project_state_created', slim: false },
};

/** The column that breaks ties of a sort on a dialect. */
export const tieOf = (sort: Sort, dialect: Dialect): 'id' | 'rowid' => (dialect === 'sqlite' && SORT_SPECS[sort].slim ? 'rowid' : 'id');

export type KeyValue = string | number | null;

/** Where a page starts: after the row with this key, in this sort. */
export type Cursor =
  /** By the sort's key: the last row's key values and its tie-breaker (row id, or SQLite rowid). */
  | { kind: 'key'; sort: Sort; order: Order; key: KeyValue[]; id: string | number }
  /** SQLite search in recency order: after this rowid of the search index. */
  | { kind: 'rowid'; sort: Sort; order: Order; rowid: number };

interface Wire {
  v: 1;
  s: Sort;
  o: 'a' | 'd';
  k?: KeyValue[];
  i?: string | number;
  r?: number;
}

const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

export function encodeCursor(c: Cursor): string {
  const w: Wire = { v: 1, s: c.sort, o: c.order === 'asc' ? 'a' : 'd', ...(c.kind === 'key' ? { k: c.key, i: c.id } : { r: c.rowid }) };
  return b64url(JSON.stringify(w));
}

/** The cursor the list answered before keyset sorts (`<created_at>|<id>`, newest first): still accepted. */
const LEGACY = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)\|(.{1,64})$/;

const bad = (message: string) => validationFailed([{ location: 'query', path: '/cursor', message }]);

const isKeyValue = (v: unknown, column: string, nullable: boolean): v is KeyValue =>
  (v === null && nullable) || (column === 'runtime_ms' ? typeof v === 'number' && Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 1000);

/** Reads a cursor this list returned for the same sort; anything else is a 422. */
export function decodeCursor(text: string, sort: Sort, order: Order): Cursor {
  const legacy = LEGACY.exec(text);
  if (legacy) {
    if (sort !== 'created_at' || order !== 'desc') throw bad('belongs to another sort or order');
    return { kind: 'key', sort, order, key: [legacy[1]!], id: legacy[2]! };
  }
  let w: Partial<Wire>;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new Error('not base64url');
    w = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<Wire>;
  } catch {
    throw bad('is not a cursor this endpoint returned');
  }
  if (!w || typeof w !== 'object' || w.v !== 1) throw bad('is not a cursor this endpoint returned');
  if (w.s !== sort || w.o !== (order === 'asc' ? 'a' : 'd')) throw bad('belongs to another sort or order');
  if (w.r !== undefined) {
    if (!Number.isSafeInteger(w.r) || w.k !== undefined || w.i !== undefined) throw bad('is not a cursor this endpoint returned');
    return { kind: 'rowid', sort, order, rowid: w.r! };
  }
  const spec = SORT_SPECS[sort];
  const key = w.k;
  if (
    !Array.isArray(key) ||
    key.length !== spec.columns.length ||
    !key.every((v, i) => isKeyValue(v, spec.columns[i]!, spec.nullable)) ||
    !((typeof w.i === 'string' && w.i.length > 0 && w.i.length <= 64) || Number.isSafeInteger(w.i))
  ) {
    throw bad('is not a cursor this endpoint returned');
  }
  return { kind: 'key', sort, order, key, id: w.i! };
}

/** The cursor after `row` (whose tie-breaker is `tie`) in this sort. */
export function keyCursorOf(row: Record<string, unknown>, tie: string | number, sort: Sort, order: Order): Extract<Cursor, { kind: 'key' }> {
  return { kind: 'key', sort, order, key: SORT_SPECS[sort].columns.map((c) => (row[c] ?? null) as KeyValue), id: tie };
}
