// The requests the project pages open with, named once: the pages send them, and index.html's inline script
// (boot.ts) starts those of the page a tab opens on before the dashboard's script has loaded. The early answer is
// handed over by URL (api/early.ts), so both must name the very same request.
import type { ApiGet, Query } from '../../api/url.ts';

export const projectPath = (slug: string): string => `/projects/${encodeURIComponent(slug)}`;

/** A page of tasks: two screens; bigger pages take longer to lay out before anything shows (docs/benchmarks.md). */
export const TASK_PAGE = 50;
export const TASK_FILTERS = ['state', 'name', 'queue', 'worker', 'since', 'until'] as const;
const COMMAND_PAGE = 50;

/** The task filters in a page address's query. */
export const taskFilters = (query: Record<string, string | undefined>): Query =>
  Object.fromEntries(TASK_FILTERS.map((k) => [k, query[k] || undefined]));

export const agentsGet = (slug: string): ApiGet => [`${projectPath(slug)}/agents`];
export const reportedGet = (slug: string, what: 'workers' | 'queues'): ApiGet => [`${projectPath(slug)}/${what}`];
export const tasksGet = (slug: string, filters: Query, cursor: string | null): ApiGet => [
  `${projectPath(slug)}/tasks`,
  { ...filters, cursor, limit: TASK_PAGE },
];
export const commandsGet = (slug: string, status: string | undefined, cursor: string | null): ApiGet => [
  `${projectPath(slug)}/commands`,
  { status, cursor, limit: COMMAND_PAGE },
];

/** What each list page of a project asks for first, by the section in its address ('' is the overview). */
const OPENING = new Map<string, (slug: string, query: Record<string, string>) => ApiGet[]>([
  ['', (slug) => [agentsGet(slug)]],
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
