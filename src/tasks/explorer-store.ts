// Read queries of the task explorer (explorer.ts), for both dialects: keyset
// pages in each sort, the full-text index, the task tree and a task's events.
// SQLite is told which index serves a sort (INDEXED BY): without statistics
// its planner may pick a filter's index and sort every matching row instead.
import { sql, type SQL } from 'drizzle-orm';
import { sqliteClient, storedText } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';
import { keyCursorOf, SORT_SPECS, tieOf, type KeyValue, type Order, type Sort } from './paging.ts';
import type { TaskRow } from './store.ts';
import type { TaskState } from './tables.ts';

const TASK_COLUMNS = [
  'id', 'project_id', 'engine', 'task_id', 'name', 'queue', 'state', 'state_tier', 'state_at', 'priority', 'args', 'kwargs', 'result',
  'exception', 'traceback', 'retry_count', 'eta', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'worker_name',
  'parent_task_id', 'root_task_id', 'tags', 'created_at', 'updated_at',
] as const;
const SELECT = sql.raw(TASK_COLUMNS.join(', '));
const JSON_COLUMNS = ['args', 'kwargs', 'result', 'tags'] as const;

/** A stored row as read: SQLite holds JSON as text. */
function decoded(ex: Executor, raw: Record<string, unknown>): TaskRow {
  if (ex.dialect === 'sqlite') for (const c of JSON_COLUMNS) if (typeof raw[c] === 'string') raw[c] = JSON.parse(raw[c] as string);
  return raw as unknown as TaskRow;
}

export interface ExplorerFilter {
  state?: TaskState;
  engine?: string;
  queue?: string;
  worker?: string;
  /** Case-insensitive substring of the name (a literal: % and _ match themselves). */
  name?: string;
  /** created_at bounds (first seen). */
  since?: string;
  until?: string;
  priorities?: string[];
}

const list = (values: readonly (string | number)[]): SQL => sql.join(values.map((v) => sql`${v}`), sql`, `);

/** The filter's conditions (text as stored: PostgreSQL refuses NUL, which svc stores as U+FFFD). */
function filterSql(f: ExplorerFilter): SQL[] {
  const conds: SQL[] = [];
  if (f.state) conds.push(sql`state = ${f.state}`);
  if (f.engine) conds.push(sql`engine = ${storedText(f.engine)}`);
  if (f.queue) conds.push(sql`queue = ${storedText(f.queue)}`);
  if (f.worker) conds.push(sql`worker_name = ${storedText(f.worker)}`);
  if (f.name) {
    const literal = storedText(f.name).toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    conds.push(sql`lower(name) LIKE ${`%${literal}%`} ESCAPE '\\'`);
  }
  if (f.since) conds.push(sql`created_at >= ${f.since}`);
  if (f.until) conds.push(sql`created_at < ${f.until}`);
  if (f.priorities && f.priorities.length > 0) conds.push(sql`priority IN (${list(f.priorities)})`);
  return conds;
}

const and = (conds: SQL[]): SQL => (conds.length > 0 ? sql.join(conds, sql` AND `) : sql`1 = 1`);

/** A key value as bound: PostgreSQL compares runtime_ms as bigint (a float parameter would keep the index out). */
const bound = (ex: Executor, column: string, v: KeyValue): SQL => (ex.dialect === 'postgres' && column === 'runtime_ms' ? sql`${v}::bigint` : sql`${v}`);

export interface KeysetQuery {
  projectId: string;
  filter: ExplorerFilter;
  sort: Sort;
  order: Order;
  /** Start after this row's key (its sort values and tie-breaker, see paging.ts tieOf); null: from the first row. */
  after: { key: KeyValue[]; id: string | number } | null;
  limit: number;
  /** More conditions (a search's). */
  extra?: SQL[];
  /** PostgreSQL: conditions whose matches the planner overestimates (a phrase search), so it would walk
   * the sort's index checking each row where their own index finds the few matches (see gathered). */
  misjudged?: SQL[];
  /** SQLite: the rows are these rowids (few): read them by rowid and sort them, not walk the sort's index. */
  rowids?: number[];
}

/** A row of a page with the tie-breaker of its sort (for the cursor after it). */
export interface Keyed {
  row: TaskRow;
  tie: string | number;
}

/** A page reads at most this many tasks in the sort's order (of the project's, or in a slim sort's
 * index every project's) when the filter has conditions its index does not serve (see walked). */
export const LIST_SCAN_BUDGET = 2_000;

/** A page, and where its walk stopped when it read LIST_SCAN_BUDGET tasks before finding `limit`
 * matches: that task's sort values and tie-breaker (the cursor continues after it; null otherwise). */
export interface KeysetPage {
  rows: Keyed[];
  stopped: { keys: Record<string, unknown>; tie: string | number } | null;
}

type Part = KeysetPage & { read: number };

/** One page in the sort's order. A sort on a column that may be empty lists the rows where it is
 * set, then those where it is not (each by the sort's index: `IS NOT NULL` / `IS NULL` as a range of it). */
export async function keysetPage(ex: Executor, q: KeysetQuery): Promise<KeysetPage> {
  const spec = SORT_SPECS[q.sort];
  const tie = tieOf(q.sort, ex.dialect);
  const access = await accessOf(ex, q);
  // Matches the planner misjudges are gathered in the sorts on an index of the project's own tasks
  // (created_at, state: never empty). A slim sort's order is often tied to what a task is (the slowest
  // tasks are of a few names), so a phrase common elsewhere may be absent from a walk's first tasks,
  // and gathering all its matches would sort a great many: there they are conditions like any other.
  const misjudged = q.misjudged ?? [];
  const project = sql`project_id = ${q.projectId}`;
  if (misjudged.length > 0 && !access.sorts && !spec.slim && !spec.nullable) {
    // The walk's budget counts the tasks of the project in the index's range: every other condition
    // (the rest of the filter, the caller's, the phrase) is checked as it walks.
    const { served, rest } = splitFilter({ ...q, extra: [] }, access);
    const keys = q.after ? [keyAfter(ex, spec.columns, tie, q.after, q.order)] : [];
    return gathered(ex, q, access, [project, ...served], [...rest, ...(q.extra ?? []), ...misjudged], keys);
  }
  if (misjudged.length > 0) q = { ...q, extra: [...(q.extra ?? []), ...misjudged] };
  const { served, rest } = splitFilter(q, access);
  const base = [project, ...served, ...(q.extra ?? [])];
  // The index of a slim sort holds every project's tasks: a walk's budget counts its entries, other
  // projects' too, or a page of a project with a fiftieth of the tasks would read fifty times as many.
  const walk = spec.slim ? { base: [...served, ...(q.extra ?? [])], rest: [project, ...rest] } : { base, rest };
  const part = async (limit: number, keys: SQL[], budget: number): Promise<Part> =>
    rest.length > 0 ? walked(ex, { ...q, limit }, access, walk.base, walk.rest, keys, budget) : { rows: await pageOf(ex, { ...q, limit }, access, base, keys), stopped: null, read: 0 };
  if (!spec.nullable) return part(q.limit, q.after ? [keyAfter(ex, spec.columns, tie, q.after, q.order)] : [], LIST_SCAN_BUDGET);
  const column = spec.columns[0]!;
  let set: Part = { rows: [], stopped: null, read: 0 };
  if (!q.after || q.after.key[0] !== null) {
    const keys = [sql.raw(`${column} IS NOT NULL`)];
    if (q.after) keys.push(keyAfter(ex, spec.columns, tie, q.after, q.order));
    set = await part(q.limit, keys, LIST_SCAN_BUDGET);
    if (set.rows.length >= q.limit || set.stopped) return set;
  }
  const nulls = [sql.raw(`${column} IS NULL`)];
  if (q.after && q.after.key[0] === null) nulls.push(sql`${sql.raw(tie)} ${sql.raw(q.order === 'desc' ? '<' : '>')} ${q.after.id}`);
  const unset = await part(q.limit - set.rows.length, nulls, LIST_SCAN_BUDGET - set.read);
  return { rows: [...set.rows, ...unset.rows], stopped: unset.stopped };
}

/** The filter's conditions the page's index serves as a range of it (the state before created_at in
 * tasks_project_state_created, first-seen bounds in the first-seen sort), and the rest, checked row by
 * row as the index is walked: rare matches, or none, would have a page read the whole project. A
 * caller's conditions (a search's, a bulk job's), a few rows by rowid or a small project's own rows
 * sorted leave nothing to walk (a phrase's page on PostgreSQL walks on its own terms: gathered). */
function splitFilter(q: KeysetQuery, access: Access): { served: SQL[]; rest: SQL[] } {
  if (q.rowids || access.sorts || (q.extra?.length ?? 0) > 0) return { served: filterSql(q.filter), rest: [] };
  const served: ExplorerFilter = {};
  const rest: ExplorerFilter = { ...q.filter };
  const serve = (k: 'state' | 'since' | 'until') => {
    if (rest[k] === undefined) return;
    Object.assign(served, { [k]: rest[k] });
    delete rest[k];
  };
  if (q.sort === 'created_at' || q.sort === 'state') serve('state');
  if (q.sort === 'created_at') {
    serve('since');
    serve('until');
  }
  return { served: filterSql(served), rest: filterSql(rest) };
}

/** The walk of a page: in the sort's order, at most `budget` tasks meeting `base` and `keys`, their
 * tie-breaker and sort values, and whether each meets `rest` (hit_). */
function walkOf(ex: Executor, q: KeysetQuery, access: Access, base: SQL[], rest: SQL[], keys: SQL[], budget: number): SQL {
  const tie = tieOf(q.sort, ex.dialect);
  return sql`SELECT ${sql.raw(tie)} AS tie_, ${sql.raw(SORT_SPECS[q.sort].columns.join(', '))}, CASE WHEN ${and(rest)} THEN 1 ELSE 0 END AS hit_
    FROM ${access.from} WHERE ${and([...base, ...keys])} ORDER BY ${orderOf(q, tie)} LIMIT ${budget}`;
}

/** The rows of the hits of a walk, in the sort's order. */
async function rowsOfHits(ex: Executor, q: KeysetQuery, hits: Record<string, unknown>[]): Promise<Keyed[]> {
  const tie = tieOf(q.sort, ex.dialect);
  return keyedRows(
    ex,
    await ex.all<Record<string, unknown>>(
      sql`SELECT ${sql.raw(tie)} AS tie_, ${SELECT} FROM tasks WHERE ${sql.raw(tie)} IN (${sql.join(hits.map((h) => sql`${h.tie_}`), sql`, `)}) ORDER BY ${orderOf(q, tie)}`,
    ),
  );
}

/** A page whose `rest` conditions are checked as the sort's index is walked, reading at most `budget`
 * tasks: their keys and whether each matches (one statement), then the rows that match. */
async function walked(ex: Executor, q: KeysetQuery, access: Access, base: SQL[], rest: SQL[], keys: SQL[], budget: number): Promise<Part> {
  if (q.limit <= 0 || budget <= 0) return { rows: [], stopped: null, read: 0 };
  const read = await ex.all<Record<string, unknown>>(walkOf(ex, q, access, base, rest, keys, budget));
  const hits = read.filter((r) => Number(r.hit_) === 1).slice(0, q.limit);
  const last = read[read.length - 1];
  let stopped = hits.length < q.limit && read.length === budget && last ? { keys: last, tie: last.tie_ as string | number } : null;
  if (hits.length === 0) return { rows: [], stopped, read: read.length };
  const rows = await rowsOfHits(ex, q, hits);
  // A match deleted between the two statements (retention, a bulk delete) leaves the page short: the walk
  // still found a full one, so it goes on after the last match it found, not to the end.
  const lastHit = hits[hits.length - 1]!;
  if (!stopped && hits.length === q.limit && rows.length < hits.length) stopped = { keys: lastHit, tie: lastHit.tie_ as string | number };
  return { rows, stopped, read: read.length };
}

/** PostgreSQL: a page of matches the planner overestimates. A phrase (`sku-0`: two words each in many
 * tasks, rarely adjacent) is estimated from its words, so the planner walks the sort's index checking
 * every task where the search's own index would find the few that match: with none among a state's
 * 60,000 tasks that read all of them, 200 ms at a million tasks (730 ms for a whole project). Here the
 * walk stops at a full page or LIST_SCAN_BUDGET tasks (the index scan streams through row_number:
 * a common phrase reads a few hundred). Past that the page goes on after the last task walked:
 * - matches the walk met often enough: one more walk, twice as long as that density needs for the
 *   rest of the page (at most FURTHER_WALK tasks);
 * - rarer ones, where the planner would read them through the search index: that plan, every
 *   match (those before the cursor are dropped after the read), sorted (30-45 ms for that phrase);
 * - where it would not (the phrase's words are in most tasks: `"status ok"` among failures): the
 *   page ends there, with a cursor (scan_limited), as a list page under a filter does. */
async function gathered(ex: Executor, q: KeysetQuery, access: Access, base: SQL[], rest: SQL[], keys: SQL[]): Promise<KeysetPage> {
  const rows: Keyed[] = [];
  let from = keys;
  let budget = LIST_SCAN_BUDGET;
  for (let walks = 1; ; walks++) {
    const want = q.limit - rows.length;
    const read = await ex.all<Record<string, unknown>>(
      sql`SELECT * FROM (SELECT s.*, row_number() OVER () AS rn_ FROM (${walkOf(ex, q, access, base, rest, from, budget)}) AS s) AS w
        WHERE hit_ = 1 OR rn_ = ${budget} LIMIT ${want}`,
    );
    const hits = read.filter((r) => Number(r.hit_) === 1);
    const found = hits.length > 0 ? await rowsOfHits(ex, q, hits) : [];
    rows.push(...found);
    const last = read[read.length - 1];
    // A full page (none of it deleted since the walk), or the walk read every task there is.
    if ((hits.length === want && found.length === hits.length) || !last || (hits.length < want && Number(last.rn_) < budget)) return { rows, stopped: null };
    const at = keyCursorOf(last, last.tie_ as string | number, q.sort, q.order);
    from = [...keys, keyAfter(ex, SORT_SPECS[q.sort].columns, tieOf(q.sort, ex.dialect), at, q.order)];
    const further = hits.length > 0 ? Math.ceil((2 * (want - hits.length) * budget) / hits.length) : Infinity;
    if (walks === 1 && further <= FURTHER_WALK) {
      budget = Math.max(further, 1);
      continue;
    }
    // The search index's read takes the keyset's conditions after it (as pageOf reads rows it sorts): the
    // planner misjudges a range of (created_at, id), and would walk the sort's index for a small one.
    if (!(await searchIndexFirst(ex, [...base, ...rest]))) return { rows, stopped: { keys: last, tie: at.id } };
    return { rows: [...rows, ...(await pageOf(ex, { ...q, limit: q.limit - rows.length }, { from: sql.raw('tasks'), sorts: true }, [...base, ...rest], from))], stopped: null };
  }
}

/** The longest second walk of a phrase's page (see gathered): some 20 ms on a state's scattered tasks. */
const FURTHER_WALK = 8_000;

interface PlanNode {
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** PostgreSQL: whether the planner would read the tasks meeting `conds` through the search index (the
 * inner query pageOf runs for rows it sorts). */
async function searchIndexFirst(ex: Executor, conds: SQL[]): Promise<boolean> {
  const [explained] = await ex.all<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(sql`EXPLAIN (FORMAT JSON) SELECT id FROM tasks WHERE ${and(conds)}`);
  const reads = (node: PlanNode): boolean => node['Index Name'] === 'tasks_search' || (node.Plans ?? []).some(reads);
  return reads(explained!['QUERY PLAN'][0]!.Plan);
}

function keyAfter(ex: Executor, columns: string[], tie: string, after: { key: KeyValue[]; id: string | number }, order: Order): SQL {
  const values = sql.join(columns.map((c, i) => bound(ex, c, after.key[i]!)), sql`, `);
  return sql`(${sql.raw(columns.join(', '))}, ${sql.raw(tie)}) ${sql.raw(order === 'desc' ? '<' : '>')} (${values}, ${after.id})`;
}

/** Sorts on the indexes that hold every project's tasks (paging.ts `slim`): whether the project's
 * own rows are read (tasks_project_created) and sorted rather than the sort's index walked. The walk
 * reads about limit × all / project entries; sorting reads the project's tasks: the walk wins
 * unless project² < limit × all. Judged on a count of at most that many of the project's rows (an
 * index-only read: some 7,000 entries at a million tasks) against all tasks (SQLite: the highest
 * rowid; PostgreSQL: the planner's estimate), remembered ten seconds per project (either way
 * the page is the same). PostgreSQL's planner would walk the index for a small project too,
 * misled by the LIMIT. */
const OWN_ROWS_FOR_MS = 10_000;
const projectSizes = new Map<string, ProjectSize & { at: number }>();

/** What the count found: whether the project is small, and on SQLite the lowest rowid of a small
 * one's tasks (all its entries were read; null otherwise). Remembered, that rowid stays a lower bound
 * of the project's: a task stored later has a higher one. */
interface ProjectSize {
  small: boolean;
  firstRowid: number | null;
}

/** Forgets the sizes sortsOwnRows and searchScope remember (tests that grow a project between pages). */
export const forgetSortChoices = (): void => projectSizes.clear();

async function sizeOf(ex: Executor, projectId: string, limit: number): Promise<ProjectSize> {
  const key = `${ex.dialect}:${projectId}`;
  const known = projectSizes.get(key);
  if (known && Date.now() - known.at < OWN_ROWS_FOR_MS) return known;
  const size = await countSize(ex, projectId, limit);
  if (projectSizes.size > 10_000) projectSizes.clear();
  projectSizes.set(key, { ...size, at: Date.now() });
  return size;
}

const sortsOwnRows = async (ex: Executor, projectId: string, limit: number): Promise<boolean> => (await sizeOf(ex, projectId, limit)).small;

async function countSize(ex: Executor, projectId: string, limit: number): Promise<ProjectSize> {
  const [all] =
    ex.dialect === 'sqlite'
      ? await ex.all<{ n: number | null }>(sql`SELECT max(rowid) AS n FROM tasks`)
      : await ex.all<{ n: number | null }>(sql`SELECT reltuples AS n FROM pg_class WHERE oid = 'tasks'::regclass`);
  const bound = Math.floor(Math.sqrt(Math.max(limit, 51) * Math.max(0, Number(all?.n ?? 0))));
  const [r] =
    ex.dialect === 'sqlite'
      ? await ex.all<{ n: number; first: number | null }>(
          sql`SELECT count(*) AS n, min(r) AS first FROM (SELECT rowid AS r FROM tasks INDEXED BY tasks_project_created WHERE project_id = ${projectId} LIMIT ${bound + 1}) AS p`,
        )
      : await ex.all<{ n: number; first: null }>(sql`SELECT count(*) AS n, NULL AS first FROM (SELECT 1 FROM tasks WHERE project_id = ${projectId} LIMIT ${bound + 1}) AS p`);
  const small = Number(r!.n) <= bound;
  return { small, firstRowid: small && r!.first !== null ? Number(r!.first) : null };
}

/** How a page is read (SQLite: by rowids, or through a named index) and whether the rows found are
 * then sorted, not read in the sort's order. */
interface Access {
  from: SQL;
  sorts: boolean;
}

async function accessOf(ex: Executor, q: KeysetQuery): Promise<Access> {
  const via = (text: string, sorts = false): Access => ({ from: sql.raw(text), sorts });
  const spec = SORT_SPECS[q.sort];
  const ownRows = spec.slim && !q.rowids && (await sortsOwnRows(ex, q.projectId, q.limit));
  if (ex.dialect !== 'sqlite') return via('tasks', ownRows);
  if (q.rowids) return via('tasks NOT INDEXED', true);
  if (q.sort === 'created_at' && q.filter.state) return via('tasks INDEXED BY tasks_project_state_created');
  if (ownRows) return via('tasks INDEXED BY tasks_project_created', true);
  return via(`tasks INDEXED BY ${spec.index}`);
}

/** A page: rows meeting `conds` (project, filter, search) and `keys` (the keyset's conditions). */
async function pageOf(ex: Executor, q: KeysetQuery, access: Access, conds: SQL[], keys: SQL[]): Promise<Keyed[]> {
  if (q.limit <= 0) return [];
  const tie = tieOf(q.sort, ex.dialect);
  const orderBy = orderOf(q, tie);
  if (q.rowids) conds = [...conds, sql`rowid IN (SELECT value FROM json_each(${JSON.stringify(q.rowids)}))`];
  const all = [...conds, ...keys];
  // Rows to be sorted (a set of rowids, a project's own rows): their keys are sorted, then the
  // page's rows read, instead of whole rows sorted. On PostgreSQL the project's rows are read
  // behind OFFSET 0, which keeps the planner from taking the keyset's conditions, ORDER BY and
  // LIMIT into that read (and the sort's index with them).
  const text = !access.sorts
    ? sql`SELECT ${sql.raw(tie)} AS tie_, ${SELECT} FROM ${access.from} WHERE ${and(all)} ORDER BY ${orderBy} LIMIT ${q.limit}`
    : ex.dialect === 'sqlite'
      ? sql`SELECT ${sql.raw(tie)} AS tie_, ${SELECT} FROM tasks WHERE rowid IN (SELECT rowid FROM ${access.from} WHERE ${and(all)} ORDER BY ${orderBy} LIMIT ${q.limit}) ORDER BY ${orderBy}`
      : sql`SELECT ${sql.raw(tie)} AS tie_, ${SELECT} FROM tasks WHERE id IN (
          SELECT id FROM (SELECT ${sql.raw([...new Set([...SORT_SPECS[q.sort].columns, 'id'])].join(', '))} FROM tasks WHERE ${and(conds)} OFFSET 0) AS own
          ${keys.length > 0 ? sql`WHERE ${and(keys)}` : sql``} ORDER BY ${orderBy} LIMIT ${q.limit}) ORDER BY ${orderBy}`;
  return keyedRows(ex, await ex.all<Record<string, unknown>>(text));
}

const orderOf = (q: KeysetQuery, tie: string): SQL => sql.raw([...SORT_SPECS[q.sort].columns, tie].map((c) => `${c} ${q.order === 'desc' ? 'DESC' : 'ASC'}`).join(', '));

/** Rows read with their tie-breaker as `tie_`. */
const keyedRows = (ex: Executor, rows: Record<string, unknown>[]): Keyed[] =>
  rows.map((r) => {
    const t = r.tie_ as string | number;
    delete r.tie_;
    return { row: decoded(ex, r), tie: t };
  });

// --- search -------------------------------------------------------------------

/** PostgreSQL: the condition of a search (`tsquery` from search.ts tsQuery). */
export const pgSearchCondition = (tsquery: string): SQL => sql`search_vector @@ to_tsquery('simple', ${tsquery})`;

/** SQLite: a walk of the full-text index (ftsWalk). */
export interface FtsWalk {
  /** The next `n` tasks at most: fewer at the end of the index or, with `budget`, once the walk has
   * read that many matching tasks in all (other projects' included). */
  take(n: number, budget?: number): number[];
  /** Whether the index holds no further match. */
  readonly ended: boolean;
  close(): void;
}

/** SQLite: which tasks a walk of the full-text index takes (ftsWalk): a project's (null: any, the
 * caller checks), and on a small project none stored before its first task. */
export interface SearchScope {
  projectId: string | null;
  firstRowid: number | null;
}

/** SQLite: the walk's scope for a caller that checks the project itself: the small project's first
 * task ends it (a search whose matches fit one page would otherwise read every other project's). */
export const searchFloor = async (ex: Executor, projectId: string): Promise<SearchScope> => ({ projectId: null, firstRowid: (await sizeOf(ex, projectId, 51)).firstRowid });

/** SQLite: the scope of a walk that must see the project's tasks only; null when no other project
 * has any (two index seeks), so the walk reads no task rows. */
export async function searchScope(ex: Executor, projectId: string): Promise<SearchScope | null> {
  const [r] = await ex.all<{ other: number }>(
    sql`SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_project_created WHERE project_id < ${projectId})
      OR EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_project_created WHERE project_id > ${projectId}) AS other`,
  );
  return Number(r!.other) ? { projectId, firstRowid: (await sizeOf(ex, projectId, 51)).firstRowid } : null;
}

/** SQLite: the rowids of tasks matching an FTS5 expression (from search.ts fts5Query) in rowid
 * order (the order tasks were first stored), after `afterRowid`, read on demand: one statement, so
 * FTS5 merges a prefix term's doclists once per walk, not per batch. Tasks of any project, or with a
 * `scope` naming a project that project's only: each entry's task row is read by rowid, and other projects' tasks are
 * skipped but count towards a budget; its `firstRowid`, when known, ends the walk below the project's
 * first task. A task's entries are 2r and 2r+1 (src/tasks/store.ts indexForSearch), adjacent in this
 * order, so one that matches in both is taken once. A statement of its own (never a cached one
 * another request could reset); close() when done. */
export function ftsWalk(ex: Executor, match: string, order: Order, afterRowid: number | null, scope: SearchScope | null = null): FtsWalk {
  const conds = ['f.tasks_fts MATCH ?'];
  const bound: (string | number)[] = [match];
  if (afterRowid !== null) {
    conds.push(order === 'desc' ? 'f.rowid < ?' : 'f.rowid > ?');
    bound.push(order === 'desc' ? 2 * afterRowid : 2 * afterRowid + 1);
  }
  if (scope?.firstRowid != null) {
    conds.push('f.rowid >= ?');
    bound.push(2 * scope.firstRowid);
  }
  // CROSS JOIN keeps the index outermost: its rowid order is the walk's.
  const mine = scope?.projectId ?? null;
  const from = mine !== null ? 'tasks_fts AS f CROSS JOIN tasks AS t ON t.rowid = f.rowid >> 1' : 'tasks_fts AS f';
  const statement = sqliteClient(ex).prepare<{ task: number; mine: number }, (string | number)[]>(
    `SELECT f.rowid >> 1 AS task, ${mine !== null ? 't.project_id = ?' : '1'} AS mine FROM ${from} WHERE ${conds.join(' AND ')} ORDER BY f.rowid ${order === 'desc' ? 'DESC' : 'ASC'}`,
  );
  const rows = statement.iterate(...(mine !== null ? [mine, ...bound] : bound));
  let ended = false;
  let last: number | null = null;
  let read = 0;
  return {
    take(n, budget = Infinity) {
      const out: number[] = [];
      while (!ended && out.length < n && read < budget) {
        const next = rows.next();
        if (next.done) {
          ended = true;
          break;
        }
        if (next.value.task === last) continue;
        last = next.value.task;
        read++;
        if (next.value.mine) out.push(last);
      }
      return out;
    },
    get ended() {
      return ended;
    },
    close() {
      rows.return?.();
      statement.finalize();
    },
  };
}

/** SQLite: the tasks among `rowids` that are the project's and meet the filter, with their rowid. */
export async function tasksAtRowids(ex: Executor, projectId: string, filter: ExplorerFilter, rowids: number[], extra: SQL[] = []): Promise<Keyed[]> {
  if (rowids.length === 0) return [];
  const conds = [sql`rowid IN (SELECT value FROM json_each(${JSON.stringify(rowids)}))`, sql`project_id = ${projectId}`, ...filterSql(filter), ...extra];
  const rows = await ex.all<Record<string, unknown>>(sql`SELECT rowid AS tie_, ${SELECT} FROM tasks NOT INDEXED WHERE ${and(conds)}`);
  return rows.map((r) => {
    const tie = r.tie_ as number;
    delete r.tie_;
    return { row: decoded(ex, r), tie };
  });
}

/** The project's engines (a walk of the (project, engine, task id) index: one seek per engine). */
async function enginesOf(ex: Executor, projectId: string): Promise<string[]> {
  const rows = await ex.all<{ engine: string | null }>(sql`WITH RECURSIVE e(engine) AS (
      SELECT (SELECT min(engine) FROM tasks WHERE project_id = ${projectId})
      UNION ALL
      SELECT (SELECT min(engine) FROM tasks WHERE project_id = ${projectId} AND engine > e.engine) FROM e WHERE e.engine IS NOT NULL
    ) SELECT engine FROM e WHERE engine IS NOT NULL`);
  return rows.map((r) => r.engine!);
}

/** Where a text prefix's range ends: above every string that starts with it (in byte order; in a
 * PostgreSQL collation other than C a few may fall outside, so rows are checked after). */
const PREFIX_END = '\u{10FFFF}';

/** The project's tasks (meeting the filter and `extra`) whose task id is `taskId`, or starts with it
 * when `prefix`; exact ones first, then by task id, at most `limit`. */
export async function tasksWithId(ex: Executor, projectId: string, filter: ExplorerFilter, taskId: string, prefix: boolean, limit: number, extra: SQL[] = []): Promise<TaskRow[]> {
  const engines = filter.engine ? [filter.engine] : await enginesOf(ex, projectId);
  if (engines.length === 0) return [];
  const id = storedText(taskId);
  const match = prefix ? sql`task_id >= ${id} AND task_id < ${id + PREFIX_END}` : sql`task_id = ${id}`;
  const conds = [sql`project_id = ${projectId}`, sql`engine IN (${list(engines.map(storedText))})`, match, ...filterSql(filter), ...extra];
  const rows = await ex.all<Record<string, unknown>>(sql`SELECT ${SELECT} FROM tasks WHERE ${and(conds)} ORDER BY task_id, engine LIMIT ${limit + 1}`);
  return rows
    .map((r) => decoded(ex, r))
    .filter((r) => r.task_id.startsWith(id))
    .sort((a, b) => Number(b.task_id === id) - Number(a.task_id === id))
    .slice(0, limit);
}

// --- the tree -------------------------------------------------------------------

export type TreeRow = Pick<TaskRow, 'id' | 'task_id' | 'name' | 'state' | 'parent_task_id' | 'root_task_id' | 'received_at' | 'started_at' | 'finished_at' | 'runtime_ms' | 'worker_name' | 'created_at'>;
const TREE_SELECT = sql.raw('id, task_id, name, state, parent_task_id, root_task_id, received_at, started_at, finished_at, runtime_ms, worker_name, created_at');

/** Tasks of the engine by task id. */
export async function treeRowsByTaskId(ex: Executor, projectId: string, engine: string, taskIds: string[]): Promise<TreeRow[]> {
  if (taskIds.length === 0) return [];
  return ex.all<TreeRow>(sql`SELECT ${TREE_SELECT} FROM tasks WHERE project_id = ${projectId} AND engine = ${engine} AND task_id IN (${list(taskIds.map(storedText))})`);
}

/** Children of the given tasks (by parent_task_id, through tasks_project_parent): each parent's
 * first `perParent` by row id (first stored first), at most `limit` in all, a rank at a time (every
 * parent's first child, then every parent's second...) so that no parent's children crowd out
 * another's; in that order. */
export async function treeChildren(ex: Executor, projectId: string, engine: string, parentIds: string[], perParent: number, limit: number): Promise<TreeRow[]> {
  if (parentIds.length === 0) return [];
  return ex.all<TreeRow>(
    sql`SELECT ${TREE_SELECT} FROM (
          SELECT ${TREE_SELECT}, ROW_NUMBER() OVER (PARTITION BY parent_task_id ORDER BY id) AS rank_
          FROM tasks WHERE project_id = ${projectId} AND engine = ${engine} AND parent_task_id IN (${list(parentIds.map(storedText))})
        ) AS ranked WHERE rank_ <= ${perParent} ORDER BY rank_, id LIMIT ${limit}`,
  );
}

/** Tasks naming `rootId` as their root (through tasks_project_root), first stored first, at most `limit`. */
export async function treeRowsOfRoot(ex: Executor, projectId: string, engine: string, rootId: string, limit: number): Promise<TreeRow[]> {
  return ex.all<TreeRow>(
    sql`SELECT ${TREE_SELECT} FROM tasks WHERE project_id = ${projectId} AND engine = ${engine} AND root_task_id = ${storedText(rootId)} AND task_id <> ${storedText(rootId)} ORDER BY id LIMIT ${limit}`,
  );
}

// --- a task's events ------------------------------------------------------------

export interface EventRowOut {
  id: string;
  kind: string;
  occurred_at: string;
  agent_id: string;
  payload: Record<string, unknown>;
}

/** A task row's events in occurred_at order (ties by id), after `after`. */
export async function eventsPage(ex: Executor, taskRowId: string, order: Order, after: { occurred_at: string; id: string } | null, limit: number): Promise<EventRowOut[]> {
  const op = sql.raw(order === 'desc' ? '<' : '>');
  const dir = sql.raw(order === 'desc' ? 'DESC' : 'ASC');
  const cond = after ? sql` AND (occurred_at, id) ${op} (${after.occurred_at}, ${after.id})` : sql``;
  const rows = await ex.all<Record<string, unknown>>(
    sql`SELECT id, kind, occurred_at, agent_id, payload FROM events WHERE task_ref = ${taskRowId}${cond} ORDER BY occurred_at ${dir}, id ${dir} LIMIT ${limit}`,
  );
  return rows.map((r) => ({ ...r, payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload }) as EventRowOut);
}

// --- a worker's tasks -----------------------------------------------------------

/** Counts by state of the tasks a worker ran that svc first heard of since `since`, reading at most
 * `scanLimit` of the project's newest tasks (with how many it read: all of the window when fewer). */
export async function workerStateCounts(
  ex: Executor,
  projectId: string,
  worker: { name: string; engine: string },
  since: string,
  scanLimit: number,
): Promise<{ counts: Record<string, number>; scanned: number }> {
  const index = ex.dialect === 'sqlite' ? sql.raw('INDEXED BY tasks_project_created') : sql``;
  // The worker's engine too: workers of two engines may share a name, and each has its own tasks.
  const rows = await ex.all<{ state: string; mine: number | boolean | null; n: number }>(
    sql`SELECT state, (worker_name = ${storedText(worker.name)} AND engine = ${storedText(worker.engine)}) AS mine, count(*) AS n FROM (
          SELECT state, worker_name, engine FROM tasks ${index} WHERE project_id = ${projectId} AND created_at >= ${since} ORDER BY created_at DESC, id DESC LIMIT ${scanLimit}
        ) AS recent GROUP BY state, mine`,
  );
  const counts: Record<string, number> = {};
  let scanned = 0;
  for (const r of rows) {
    scanned += Number(r.n);
    if (r.mine === true || Number(r.mine) === 1) counts[r.state] = Number(r.n);
  }
  return { counts, scanned };
}
