// The task explorer: the list with full-text search, filters and keyset paging
// in each sort, exports of a filter, the tree of a chain/group/chord, a task's
// raw event history and a worker's detail. Reads only.
//
// Search on PostgreSQL is one query: the tsvector condition within the sort
// (its planner chooses between the GIN index and the sort's index), except a
// page of a phrase in first-seen or state order, whose matches the planner
// misjudges (explorer-store.ts gathered). On SQLite
// the FTS5 index is walked in rowid order (the order tasks were first stored)
// batch by batch and each batch's rows are checked against the project and
// the filter, until the page is full; a page stops after reading
// SEARCH_SCAN_BUDGET matches (bun:sqlite blocks the event loop), answering
// fewer rows and a cursor that continues the walk. Sorted by another column,
// SQLite search orders the project's SORTED_SEARCH_CAP most recent matches
// found among the SEARCH_SCAN_BUDGET most recent of all projects, and the
// answer says when that left any out (search_truncated).
import { sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { conflict, notFound, validationFailed } from '../http/errors.ts';
import { isUuid } from '../lib/ids.ts';
import {
  eventsPage,
  ftsWalk,
  keysetPage,
  pgSearchCondition,
  searchFloor,
  searchScope,
  tasksAtRowids,
  tasksWithId,
  treeChildren,
  treeRowsOfRoot,
  treeRowsByTaskId,
  workerStateCounts,
  type ExplorerFilter,
  type Keyed,
  type KeysetPage,
  type TreeRow,
} from './explorer-store.ts';
import { decodeCursor, encodeCursor, keyCursorOf, tieOf, type Cursor, type Order, type Sort } from './paging.ts';
import type { TaskEventPage, TaskListItem, TaskListPage, TaskTree, WorkerDetail } from './schemas.ts';
import { fts5Query, highlightsOf, MIN_ID_PREFIX, parseSearch, tsQuery, type ParsedSearch } from './search.ts';
import { listQueues, listWorkers, toTaskPublic, type TaskRow, type WorkerRow } from './service.ts';
import { taskOf } from './store.ts';

/** Matches one SQLite search page reads at most before answering what it found. */
export const SEARCH_SCAN_BUDGET = 20_000;
/** SQLite, search sorted by a column other than first-seen time: the project's newest matches sorted. */
export const SORTED_SEARCH_CAP = 5_000;
/** Tasks whose id is `q` or starts with it, leading a search's first page. */
export const ID_MATCHES = 10;

/** The list's query (and the export's, without cursor and limit): the filter with the priorities
 * comma-separated, the search, the sort and where the page starts. */
export type TaskQuery = Omit<ExplorerFilter, 'priorities'> & {
  priority?: string;
  q?: string;
  sort?: Sort;
  order?: Order;
  cursor?: string;
  limit?: number;
};

const filterOf = (q: TaskQuery): ExplorerFilter => ({
  ...(q.state ? { state: q.state } : {}),
  ...(q.engine ? { engine: q.engine } : {}),
  ...(q.queue ? { queue: q.queue } : {}),
  ...(q.worker ? { worker: q.worker } : {}),
  ...(q.name ? { name: q.name } : {}),
  ...(q.since ? { since: q.since } : {}),
  ...(q.until ? { until: q.until } : {}),
  ...(q.priority ? { priorities: [...new Set(q.priority.split(','))] } : {}),
});

/** A page of rows in the list's order and where the next one starts (null: the end). */
interface RowsPage {
  rows: TaskRow[];
  next: Cursor | null;
  /** Tasks whose id is `q` or starts with it, leading the first page of a search. */
  exact: TaskRow[];
  /** SQLite, a search sorted by another column than created_at: matches were left out of the sort. */
  truncated?: boolean;
  /** The page read its budget of tasks (explorer-store.ts LIST_SCAN_BUDGET) before it was full: `next`
   * continues the walk. */
  walkStopped?: boolean;
}

/** One page of the filter: `limit` rows at most; `extra`, conditions on the task row a caller adds to
 * the filter (a bulk filter's task ids, failure group), hold for every row, id matches included;
 * `whole`: the caller reads every page (tasksOfFilter). */
async function rowsPage(ex: Executor, projectId: string, q: TaskQuery, search: ParsedSearch | null, limit: number, extra: SQL[] = [], whole = false): Promise<RowsPage> {
  const sort = q.sort ?? 'created_at';
  const order = q.order ?? 'desc';
  const filter = filterOf(q);
  const cursor = q.cursor ? decodeCursor(q.cursor, sort, order) : null;
  const keyAfter = (c: Cursor | null) => {
    if (c?.kind === 'rowid') throw validationFailed([{ location: 'query', path: '/cursor', message: 'belongs to another search' }]);
    // The tie-breaker this sort has on this database (a rowid is a number, a row id text).
    if (c && (tieOf(sort, ex.dialect) === 'rowid') !== (typeof c.id === 'number')) throw validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
    return c ? { key: c.key, id: c.id } : null;
  };
  const keyed = ({ rows, stopped }: KeysetPage): { rows: TaskRow[]; next: Cursor | null; walkStopped?: boolean } => {
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    if (rows.length > limit && last) return { rows: page.map((k) => k.row), next: keyCursorOf(last.row, last.tie, sort, order) };
    const next = stopped ? keyCursorOf(stopped.keys, stopped.tie, sort, order) : null;
    return { rows: page.map((k) => k.row), next, ...(stopped && page.length < limit ? { walkStopped: true } : {}) };
  };
  if (!search) return { ...keyed(await keysetPage(ex, { projectId, filter, sort, order, after: keyAfter(cursor), limit: limit + 1, extra })), exact: [] };

  // Tasks whose id is q (or starts with it) lead the first page; every page leaves them out after
  // (`others`: the conditions of the rest).
  const exact = search.taskId !== null ? await tasksWithId(ex, projectId, filter, search.taskId, search.taskId.length >= MIN_ID_PREFIX, ID_MATCHES, extra) : [];
  const others: SQL[] = [...extra, ...(exact.length > 0 ? [sql`id NOT IN (${sql.join(exact.map((r) => sql`${r.id}`), sql`, `)})`] : [])];
  const lead = cursor ? [] : exact;
  if (ex.dialect === 'postgres') {
    // One query: the planner chooses between the GIN index and the sort's; a phrase's matches it
    // overestimates, so for a page of one the sort's index is walked a little first (explorer-store.ts
    // gathered). A reader of every match (`whole`) takes the planner's plan: one query a page, where
    // a page of a phrase no walk narrows would cost a walk of 2,000 tasks and a plan.
    const condition = [pgSearchCondition(tsQuery(search))];
    const phrase = !whole && search.terms.some((t) => t.tokens.length > 1);
    const conds = phrase ? { extra: others, misjudged: condition } : { extra: [...condition, ...others] };
    return { ...keyed(await keysetPage(ex, { projectId, filter, sort, order, after: keyAfter(cursor), limit: limit + 1, ...conds })), exact: lead };
  }
  const match = fts5Query(search);
  if (sort !== 'created_at') {
    // The project's newest matches (the walk skips other projects' tasks, within the budget, and ends
    // at a small project's first task), one more than are sorted: to know whether any was left out.
    const walk = ftsWalk(ex, match, 'desc', null, await searchScope(ex, projectId));
    let rowids: number[];
    let truncated: boolean;
    try {
      rowids = walk.take(SORTED_SEARCH_CAP + 1, SEARCH_SCAN_BUDGET);
      truncated = rowids.length > SORTED_SEARCH_CAP || !walk.ended;
    } finally {
      walk.close();
    }
    rowids = rowids.slice(0, SORTED_SEARCH_CAP);
    return { ...keyed(await keysetPage(ex, { projectId, filter, sort, order, after: keyAfter(cursor), limit: limit + 1, extra: others, rowids })), exact: lead, truncated };
  }
  if (cursor?.kind === 'key') throw validationFailed([{ location: 'query', path: '/cursor', message: 'belongs to the list without q' }]);
  // Recency order: walk the index by rowid, a growing batch at a time, each batch's rows checked
  // against the project and the filter.
  const walk = ftsWalk(ex, match, order, cursor?.kind === 'rowid' ? cursor.rowid : null, await searchFloor(ex, projectId));
  try {
    const found: Keyed[] = [];
    let batch = Math.max(64, limit + 1);
    let read = 0;
    const rows = () => found.map((k) => k.row);
    for (;;) {
      const ids = walk.take(batch);
      read += ids.length;
      found.push(...(await tasksAtRowids(ex, projectId, filter, ids, others)).sort((a, b) => (order === 'desc' ? Number(b.tie) - Number(a.tie) : Number(a.tie) - Number(b.tie))));
      if (found.length > limit) {
        const page = found.slice(0, limit);
        return { rows: page.map((k) => k.row), next: { kind: 'rowid', sort, order, rowid: Number(page[page.length - 1]!.tie) }, exact: lead };
      }
      if (ids.length < batch) return { rows: rows(), next: null, exact: lead };
      // Out of budget: what was found, and a cursor after the last match read.
      if (read >= SEARCH_SCAN_BUDGET) return { rows: rows(), next: { kind: 'rowid', sort, order, rowid: ids[ids.length - 1]! }, exact: lead };
      batch = Math.min(batch * 4, 4096);
    }
  } finally {
    walk.close();
  }
}

/** One page of the project's tasks: filtered, searched (`q`, with highlights), in the chosen sort. */
export async function listTasks(ex: Executor, projectId: string, q: TaskQuery): Promise<TaskListPage> {
  const search = q.q !== undefined ? parseSearch(q.q) : null;
  const page = await rowsPage(ex, projectId, q, search, q.limit ?? 50);
  const item = (row: TaskRow): TaskListItem => {
    const task = toTaskPublic(row);
    return search ? { ...task, highlights: highlightsOf(task, search) } : task;
  };
  return {
    items: [...page.exact, ...page.rows].map(item),
    next_cursor: page.next ? encodeCursor(page.next) : null,
    search_truncated: page.truncated ?? false,
    scan_limited: page.walkStopped ?? false,
  };
}

/** Every task of the filter in the list's order, a page at a time, at most `max` (exports, bulk filters
 * with `q`); `extra`: more conditions on the task row (see rowsPage). Sorted by created_at, it reads every
 * match: search_truncated never applies. */
export async function* tasksOfFilter(
  ex: Executor,
  projectId: string,
  q: Omit<TaskQuery, 'cursor' | 'limit'>,
  max: number,
  pageSize = 500,
  extra: SQL[] = [],
): AsyncGenerator<TaskRow[]> {
  const search = q.q !== undefined ? parseSearch(q.q) : null;
  let cursor: string | undefined;
  let left = max;
  while (left > 0) {
    const page = await rowsPage(ex, projectId, { ...q, ...(cursor ? { cursor } : {}) }, search, Math.min(pageSize, left), extra, true);
    const rows = [...page.exact, ...page.rows].slice(0, left);
    if (rows.length > 0) yield rows;
    left -= rows.length;
    if (!page.next) return;
    cursor = encodeCursor(page.next);
  }
}

// --- the tree -------------------------------------------------------------------

export interface TreeLimits {
  depth: number;
  width: number;
  nodes: number;
}

type TreeNode = TreeRow & { depth: number; detached: boolean };

/** The tree a task belongs to: from its root (root_task_id, else the top of its parent links)
 * down its parent links, breadth first, within the limits; `truncated` when the limits left anything
 * out. The task asked for is always a node: when the walk did not reach it, its stored parents are
 * followed up to the tree (the limits cut it) or to a link svc never stored (lost events, retention),
 * and then that detached subtree hangs under the root. Other detached subtrees of the root stay
 * unseen: svc keeps no index by root_task_id. */
export async function taskTree(ex: Executor, projectId: string, engine: string, taskId: string, limits: TreeLimits): Promise<TaskTree> {
  const task = await taskOf(ex, projectId, engine, taskId);
  if (!task) throw notFound('task');
  const stored = async (id: string): Promise<TreeRow | undefined> => (await treeRowsByTaskId(ex, projectId, engine, [id]))[0];
  let truncated = false;
  // The root: the task's root id when reported, else its parents up to the top (each step bounded).
  let rootId = task.root_task_id ?? task.task_id;
  if (task.root_task_id === null && task.parent_task_id !== null) {
    let at: TreeRow | TaskRow = task;
    const seen = new Set([task.task_id]);
    for (let up = 0; at.parent_task_id !== null; up++) {
      if (up >= limits.depth || seen.has(at.parent_task_id)) {
        truncated = true;
        break;
      }
      seen.add(at.parent_task_id);
      rootId = at.parent_task_id;
      const parent = await stored(at.parent_task_id);
      if (!parent) break;
      at = parent;
    }
  }
  const nodes: TreeNode[] = [];
  const inTree = new Map<string, TreeNode>();
  const add = (row: TreeRow, depth: number, detached: boolean) => {
    const node = { ...row, depth, detached };
    nodes.push(node);
    inTree.set(row.task_id, node);
  };
  /** Breadth first down the parent links from `level`, whose children are at `depth`. */
  const down = async (level: string[], depth: number, detached: boolean) => {
    for (; level.length > 0; depth++) {
      const room = limits.nodes - nodes.length;
      // One more than fits, per parent and in all: to know whether any was left out.
      const children = (await treeChildren(ex, projectId, engine, level, limits.width + 1, Math.max(room, 0) + 1)).filter((c) => !inTree.has(c.task_id));
      if (children.length === 0) return;
      if (depth > limits.depth || room <= 0) {
        truncated = true;
        return;
      }
      // Taken a rank at a time (as they come), listed first stored first.
      const perParent = new Map<string, number>();
      const taken: TreeRow[] = [];
      for (const child of children) {
        const n = perParent.get(child.parent_task_id!) ?? 0;
        perParent.set(child.parent_task_id!, n + 1);
        if (n >= limits.width || taken.length >= room) truncated = true;
        else taken.push(child);
      }
      taken.sort((a, b) => (a.id < b.id ? -1 : 1));
      for (const child of taken) add(child, depth, detached);
      level = taken.map((c) => c.task_id);
    }
  };
  const rootRow = await stored(rootId);
  if (rootRow) add(rootRow, 0, false);
  await down([rootId], 1, false);

  if (!inTree.has(task.task_id)) {
    // The walk did not reach the task: its stored parents up to a node of the tree, or to the top of
    // what is stored (a parent never stored, a loop, or more levels than max_depth: detached).
    const chain: TreeRow[] = [task];
    const seen = new Set([task.task_id]);
    // Linked to the tree: a node, or the root when svc never stored it.
    const linked = (id: string | null) => id !== null && (id === rootId || inTree.has(id));
    let top: TreeRow = task;
    let missing: string | null = null;
    while (top.parent_task_id !== null && !linked(top.parent_task_id)) {
      if (seen.has(top.parent_task_id) || chain.length > limits.depth) {
        truncated = true;
        break;
      }
      const parent = await stored(top.parent_task_id);
      if (!parent) {
        missing = top.parent_task_id;
        break;
      }
      seen.add(parent.task_id);
      chain.push(parent);
      top = parent;
    }
    const detached = !linked(top.parent_task_id);
    // A detached subtree: the stored children of the missing parent (the top and its siblings), or the
    // top alone, and their tasks below, within what the limits leave.
    if (missing !== null) await down([missing], 1, true);
    else if (detached && nodes.length < limits.nodes) {
      add(top, 1, true);
      await down([top.task_id], 2, true);
    }
    // Whatever the limits left out of the chain still leads to the task.
    for (let i = chain.length - 1; i >= 0; i--) {
      const row = chain[i]!;
      if (inTree.has(row.task_id)) continue;
      const parent = row.parent_task_id === null ? undefined : inTree.get(row.parent_task_id);
      add(row, parent ? parent.depth + 1 : 1, parent ? parent.detached : detached);
    }
  }
  // A complete walk reached every task linked to the root: the root's other tasks (by their root id)
  // hang under a parent svc never stored. They join as detached branches, tops first, within the limits.
  const detachedOfRoot = async (): Promise<void> => {
    const room = limits.nodes - nodes.length;
    const rows = (await treeRowsOfRoot(ex, projectId, engine, rootId, nodes.length + room + 1)).filter((r) => !inTree.has(r.task_id));
    if (rows.length === 0) return;
    if (room <= 0) {
      truncated = true;
      return;
    }
    const unreached = new Set(rows.map((r) => r.task_id));
    let level = rows.filter((r) => r.parent_task_id === null || !unreached.has(r.parent_task_id));
    for (let depth = 1; level.length > 0; depth++) {
      for (const row of level) {
        if (nodes.length >= limits.nodes || depth > limits.depth) {
          truncated = true;
          return;
        }
        add(row, depth, true);
      }
      const parents = new Set(level.map((r) => r.task_id));
      level = rows.filter((r) => r.parent_task_id !== null && parents.has(r.parent_task_id) && !inTree.has(r.task_id));
    }
    // Fetched one more than fits: more of them than the limits leave room for.
    if (rows.length > room) truncated = true;
  };
  if (!truncated) await detachedOfRoot();
  return {
    engine,
    root_task_id: rootId,
    node_count: nodes.length,
    truncated,
    limits: { max_depth: limits.depth, max_width: limits.width, max_nodes: limits.nodes },
    nodes: nodes.map((n) => ({
      task_id: n.task_id,
      name: n.name,
      state: n.state,
      parent_task_id: n.parent_task_id,
      root_task_id: n.root_task_id,
      depth: n.depth,
      detached: n.detached,
      worker_name: n.worker_name,
      received_at: n.received_at,
      started_at: n.started_at,
      finished_at: n.finished_at,
      runtime_ms: n.runtime_ms === null ? null : Number(n.runtime_ms),
    })),
  };
}

// --- a task's events ------------------------------------------------------------

const EVENT_CURSOR = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)\|([0-9a-f-]{36})\|([ad])$/;

/** A task's raw events, oldest (asc) or newest (desc) first, keyset-paged. */
export async function taskEventHistory(ex: Executor, projectId: string, engine: string, taskId: string, q: { order?: Order; cursor?: string; limit?: number }): Promise<TaskEventPage> {
  const order = q.order ?? 'asc';
  const limit = q.limit ?? 100;
  let after: { occurred_at: string; id: string } | null = null;
  if (q.cursor) {
    const m = EVENT_CURSOR.exec(Buffer.from(q.cursor, 'base64url').toString('utf8'));
    if (!m || !/^[A-Za-z0-9_-]+$/.test(q.cursor)) throw validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
    if (m[3] !== order[0]) throw validationFailed([{ location: 'query', path: '/cursor', message: 'belongs to the other order' }]);
    after = { occurred_at: m[1]!, id: m[2]! };
  }
  const task = await taskOf(ex, projectId, engine, taskId);
  if (!task) throw notFound('task');
  const rows = await eventsPage(ex, task.id, order, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page,
    next_cursor: rows.length > limit && last ? Buffer.from(`${last.occurred_at}|${last.id}|${order[0]}`, 'utf8').toString('base64url') : null,
  };
}

// --- a worker's detail ----------------------------------------------------------

/** The newest tasks of the project a worker's counts read at most. */
export const WORKER_COUNT_SCAN = 20_000;

/** A worker by row id, or by name (with `engine` when several engines have a worker of that name). */
async function findWorker(ex: Executor, projectId: string, ref: string, engine: string | undefined): Promise<WorkerRow> {
  const workers = await listWorkers(ex, projectId);
  const byId = isUuid(ref) ? workers.find((w) => w.id === ref.toLowerCase()) : undefined;
  if (byId) return byId;
  const named = workers.filter((w) => w.name === ref && (!engine || w.engine === engine));
  if (named.length === 0) throw notFound('worker');
  if (named.length > 1) throw conflict(`workers of ${named.length} engines are named ${ref}: say which with engine`, { engines: named.map((w) => w.engine) }, 'ambiguous_worker');
  return named[0]!;
}

/** A worker with its engine's inspect data (metadata), the queues it consumes with their depth
 * where reported, and counts by state of the tasks it ran among those svc first heard of in the window. */
export async function workerDetail(ex: Executor, projectId: string, ref: string, q: { engine?: string; window_seconds?: number }, now = Date.now()): Promise<WorkerDetail> {
  const worker = await findWorker(ex, projectId, ref, q.engine);
  const windowSeconds = q.window_seconds ?? 3600;
  const since = new Date(now - windowSeconds * 1000).toISOString().replace('Z', '000+00:00');
  const { counts, scanned } = await workerStateCounts(ex, projectId, worker, since, WORKER_COUNT_SCAN);
  const queues = (await listQueues(ex, projectId)).filter((x) => x.engine === worker.engine && worker.queues.includes(x.name));
  return {
    ...worker,
    queue_details: queues.map((x) => ({ ...x, pending_count: x.pending_count === null ? null : Number(x.pending_count) })),
    task_counts: {
      window_seconds: windowSeconds,
      since,
      by_state: counts,
      total: Object.values(counts).reduce((a, b) => a + b, 0),
      complete: scanned < WORKER_COUNT_SCAN,
    },
  };
}
