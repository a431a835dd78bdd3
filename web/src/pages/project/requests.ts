// The requests the project pages open with, named once: the pages send them, and index.html's inline script
// (boot.ts) starts those of the page a tab opens on before the dashboard's script has loaded. The early answer is
// handed over by URL (api/early.ts), so both must name the very same request.
import type { ApiGet, Query } from '../../api/url.ts';

export const projectPath = (slug: string): string => `/projects/${encodeURIComponent(slug)}`;

/** A page of tasks: two screens; bigger pages take longer to lay out before anything shows (docs/benchmarks.md). */
export const TASK_PAGE = 50;
/** The filter form's fields (the search first), in the page's address as in the API's query. */
export const TASK_FILTERS = ['q', 'state', 'priority', 'engine', 'name', 'queue', 'worker', 'since', 'until'] as const;
/** The list's query: the filters and the sort (column headers). */
export const TASK_QUERY = [...TASK_FILTERS, 'sort', 'order'] as const;
const COMMAND_PAGE = 50;

/** The task filters and sort in a page address's query. */
export const taskFilters = (query: Record<string, string | undefined>): Query =>
  Object.fromEntries(TASK_QUERY.map((k) => [k, query[k] || undefined]));

/** The statistics windows (src/stats/schemas.ts), named here too: index.html's script imports this file. */
const WINDOWS = ['1h', '6h', '24h', '7d', '30d'];
export const windowOf = (query: Record<string, string | undefined>): string =>
  WINDOWS.includes(query.window ?? '') ? query.window! : '24h';
export const statsGet = (slug: string, window: string): ApiGet => [`${projectPath(slug)}/stats`, { window }];
export const trendsGet = (slug: string, window: string): ApiGet => [`${projectPath(slug)}/trends`, { window }];

export const agentsGet = (slug: string): ApiGet => [`${projectPath(slug)}/agents`];
export const reportedGet = (slug: string, what: 'workers' | 'queues'): ApiGet => [`${projectPath(slug)}/${what}`];
export const tasksGet = (slug: string, filters: Query, cursor: string | null): ApiGet => [
  `${projectPath(slug)}/tasks`,
  { ...filters, cursor, limit: TASK_PAGE },
];
/** One task (its detail: the row and its first events). */
export const taskGet = (slug: string, t: { engine: string; task_id: string }): string =>
  `${projectPath(slug)}/tasks/${encodeURIComponent(t.engine)}/${encodeURIComponent(t.task_id)}`;
export const commandsGet = (slug: string, status: string | undefined, cursor: string | null): ApiGet => [
  `${projectPath(slug)}/commands`,
  { status, cursor, limit: COMMAND_PAGE },
];

/** What each list page of a project asks for first, by the section in its address ('' is the overview). */
const OPENING = new Map<string, (slug: string, query: Record<string, string>) => ApiGet[]>([
  ['', (slug, q) => [agentsGet(slug), statsGet(slug, windowOf(q)), trendsGet(slug, windowOf(q))]],
  ['agents', (slug) => [agentsGet(slug)]],
  ['tasks', (slug, q) => [tasksGet(slug, taskFilters(q), null)]],
  ['commands', (slug, q) => [agentsGet(slug), commandsGet(slug, q.status, null)]],
  ['workers', (slug) => [reportedGet(slug, 'workers')]],
  ['queues', (slug) => [reportedGet(slug, 'queues')]],
]);

/** The requests the page at this address opens with (as the router reads it: the slug decoded, the query's
 * last value of a name); none for the pages not listed above. */
export function openingRequests(pathname: string, search: string): ApiGet[] {
  const m = /^\/projects\/([^/]+)(?:\/([^/]+))?\/*$/.exec(pathname);
  const open = m && OPENING.get(m[2] ?? '');
  return open ? open(decodeURIComponent(m[1]!), Object.fromEntries(new URLSearchParams(search))) : [];
}
