// /api/v1/projects/{slug}/tasks, /workers, /queues: what the agents' events
// say about the project's task workers (viewer; API keys with tasks:read).
// The task explorer (explorer.ts): search and sorts on the list, exports of a
// filter, a task's tree and raw events, a worker's detail.
import { Type, type TProperties } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { ApiError } from '../http/errors.ts';
import { ProjectPath, ProjectSlug } from '../http/schemas.ts';
import { taskEvents } from '../ingest/service.ts';
import { ConcurrencyLimit } from '../lib/rate-limit.ts';
import type { AppContext } from '../server/context.ts';
import { listTasks, taskEventHistory, taskTree, workerDetail } from './explorer.ts';
import { EXPORT_FIELDS, EXPORT_MAX_ROWS, EXPORT_MEDIA, openExport, type ExportField, type ExportFormat } from './export.ts';
import { SORTS } from './paging.ts';
import { QueuePublic, TaskDetail, TaskEventPage, TaskPage, TaskStateSchema, TaskTree, WorkerDetail, WorkerPublic } from './schemas.ts';
import { MAX_QUERY_CHARS } from './search.ts';
import { getTask, listQueues, listWorkers } from './service.ts';

const Ts = Type.String({ pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\+00:00$' });
const READ = { user: { scope: 'tasks:read' }, project: 'viewer' } as const;
const PRIORITY = '(critical|high|normal|low)';

/** The list's filter, search and sort (the list and its exports). */
const FILTER = {
  state: Type.Optional(TaskStateSchema),
  engine: Type.Optional(Type.String({ maxLength: 40 })),
  queue: Type.Optional(Type.String({ maxLength: 200 })),
  worker: Type.Optional(Type.String({ maxLength: 200 })),
  name: Type.Optional(Type.String({ maxLength: 200, description: 'case-insensitive substring of the task name' })),
  since: Type.Optional(Ts),
  until: Type.Optional(Ts),
  priority: Type.Optional(Type.String({ pattern: `^${PRIORITY}(,${PRIORITY}){0,3}$`, description: 'comma-separated priorities: critical, high, normal, low' })),
  q: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_QUERY_CHARS,
      description:
        'full-text search of name, task id, args, kwargs, result and exception: words (each a prefix), "quoted phrases"; a q without spaces also matches a task id exactly (those tasks lead the first page). Answers carry highlights. See docs/tasks.md',
    }),
  ),
  sort: Type.Optional(Type.Union(SORTS.map((s) => Type.Literal(s)), { description: 'default created_at (when svc first heard of the task)' })),
  order: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')], { description: 'default desc; rows without the sort value come last either way' })),
} satisfies TProperties;

const TaskPath = Type.Object({
  slug: ProjectSlug,
  engine: Type.String({ minLength: 1, maxLength: 40 }),
  task_id: Type.String({ minLength: 1, maxLength: 200 }),
});

const EXPORT_QUERY = Type.Object({
  ...FILTER,
  limit: Type.Optional(t.Integer({ minimum: 1, maximum: EXPORT_MAX_ROWS, description: `rows at most (default and most ${EXPORT_MAX_ROWS})` })),
  fields: Type.Optional(
    Type.String({ pattern: `^(${EXPORT_FIELDS.join('|')})(,(${EXPORT_FIELDS.join('|')}))*$`, maxLength: 1000, description: 'comma-separated columns, in order (default all)' }),
  ),
});

/** Seconds a caller over SVC_TASK_EXPORTS_PER_USER is told to wait (Retry-After). */
const EXPORT_RETRY_AFTER = 10;

/** An export route: the same filter as the list, streamed in `format`; `open` counts each user's exports
 * (both formats together) while they stream. */
function exportRoute(ctx: AppContext, format: ExportFormat, open: ConcurrencyLimit) {
  return {
    handler: async ({ request, query }: { request: Request; query: Record<string, unknown> & { limit?: number; fields?: string } }) => {
      const { limit, fields, ...filter } = query;
      const { who, project } = grantOf(request);
      const columns = fields ? (fields.split(',') as ExportField[]) : EXPORT_FIELDS;
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      // A user's API keys count with the user: the cap bounds the database readers one person holds.
      const release = open.take(who.user.id);
      if (!release) {
        throw new ApiError(
          429,
          'too_many_exports',
          `at most ${open.limit} task export${open.limit === 1 ? '' : 's'} at once per user; try again when one has finished`,
          { limit: open.limit, retry_after_seconds: EXPORT_RETRY_AFTER },
          { 'retry-after': String(EXPORT_RETRY_AFTER) },
        );
      }
      // The first page is read here: a bad query or a failing read answers the error envelope, not a download.
      const body = await openExport(ctx.db, project.id, filter, format, columns, limit ?? EXPORT_MAX_ROWS, release);
      return new Response(body, {
        headers: {
          'content-type': EXPORT_MEDIA[format],
          'content-disposition': `attachment; filename="tasks-${project.slug}-${stamp}.${format}"`,
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        },
      });
    },
    options: guarded(ctx, {
      summary: `The list's filter as ${format === 'csv' ? 'CSV (RFC 4180, a header row; text that a spreadsheet would run as a formula is prefixed with an apostrophe)' : 'NDJSON (one task per line)'}, streamed in the list's order`,
      description:
        `At most ${EXPORT_MAX_ROWS} rows (limit lowers it); narrow the filter (since/until) for more. Filters, q, sort and order as GET /tasks. ` +
        'The first rows are read before the answer starts, so a query GET /tasks refuses gets the same error here; a read failing later ends the download unfinished. ' +
        'A user (with their API keys) streams at most SVC_TASK_EXPORTS_PER_USER exports at once per svc process; another answers 429 too_many_exports until one ends.',
      access: READ,
      params: ProjectPath,
      query: EXPORT_QUERY,
      ok: Type.String(),
      media: EXPORT_MEDIA[format].split(';')[0]!,
      errors: { 429: ['too_many_exports'] },
    }),
  };
}

/** Events a task's detail carries at most. */
const DETAIL_EVENTS = 200;

export const taskRoutes = (ctx: AppContext) => {
  const exports = new ConcurrencyLimit(ctx.config.SVC_TASK_EXPORTS_PER_USER);
  const csv = exportRoute(ctx, 'csv', exports);
  const ndjson = exportRoute(ctx, 'ndjson', exports);
  return new Elysia({ prefix: '/api/v1/projects/:slug', detail: { tags: ['tasks'] } })
    .get('/tasks', ({ request, query }) => listTasks(ctx.db, grantOf(request).project.id, query), {
      ...guarded(ctx, {
        summary: 'Tasks, filtered, searched and sorted, keyset-paged with next_cursor',
        description:
          'Newest first by when svc first heard of them unless sort/order say otherwise. next_cursor continues the same filter, search and sort at any depth. A search page may hold fewer rows than limit with a next_cursor (it read its share of matches); null means the end.',
        access: READ,
        params: ProjectPath,
        query: Type.Object({
          ...FILTER,
          cursor: Type.Optional(Type.String({ maxLength: 2048 })),
          limit: Type.Optional(
            t.Integer({ minimum: 1, maximum: 500, description: 'rows a page (50); the first page of a q search also leads with up to ten tasks whose id is q or starts with it' }),
          ),
        }),
        ok: TaskPage,
      }),
    })
    .get('/tasks/export.csv', csv.handler, csv.options)
    .get('/tasks/export.ndjson', ndjson.handler, ndjson.options)
    .get(
      '/tasks/:engine/:task_id',
      async ({ request, params }) => {
        const task = await getTask(ctx.db, grantOf(request).project.id, params.engine, params.task_id);
        // A task retried for days can hold thousands of events: the detail carries the first ones, and
        // .../events pages through all of them.
        const read = await taskEvents(ctx.db, task.id, DETAIL_EVENTS + 1);
        const events = read.slice(0, DETAIL_EVENTS).map((e) => ({
          id: e.id,
          kind: e.kind,
          occurred_at: e.occurred_at,
          agent_id: e.agent_id,
          payload: e.payload,
        }));
        return { ...task, events, events_truncated: read.length > DETAIL_EVENTS };
      },
      {
        ...guarded(ctx, {
          summary: `One task with its event history, oldest first (the first ${DETAIL_EVENTS}; events_truncated says there are more, which GET .../events pages through)`,
          access: READ,
          params: TaskPath,
          ok: TaskDetail,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .get('/tasks/:engine/:task_id/tree', ({ request, params, query }) => taskTree(ctx.db, grantOf(request).project.id, params.engine, params.task_id, { depth: query.max_depth ?? 20, width: query.max_width ?? 100, nodes: query.max_nodes ?? 1000 }), {
      ...guarded(ctx, {
        summary: "The tree of the task's chain, group or chord: from its root down the parent links, breadth first, within the limits (truncated says whether any task was left out); the task asked for is always a node, detached under the root when a parent svc does not hold cuts it off",
        access: READ,
        params: TaskPath,
        query: Type.Object({
          max_depth: Type.Optional(t.Integer({ minimum: 1, maximum: 100, description: 'levels below the root (default 20)' })),
          max_width: Type.Optional(t.Integer({ minimum: 1, maximum: 1000, description: 'children per task (default 100)' })),
          max_nodes: Type.Optional(t.Integer({ minimum: 1, maximum: 5000, description: 'tasks in all (default 1000)' })),
        }),
        ok: TaskTree,
        errors: { 404: ['not_found'] },
      }),
    })
    .get('/tasks/:engine/:task_id/events', ({ request, params, query }) => taskEventHistory(ctx.db, grantOf(request).project.id, params.engine, params.task_id, query), {
      ...guarded(ctx, {
        summary: "A task's raw events as the agents reported them, oldest (order=asc, the default) or newest first, keyset-paged",
        access: READ,
        params: TaskPath,
        query: Type.Object({
          order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
          cursor: Type.Optional(Type.String({ maxLength: 256 })),
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500, description: 'default 100' })),
        }),
        ok: TaskEventPage,
        errors: { 404: ['not_found'] },
      }),
    })
    .get('/workers', ({ request }) => listWorkers(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: 'Workers as the agents reported them', access: READ, params: ProjectPath, ok: Type.Array(WorkerPublic) }),
    })
    .get('/workers/:worker', ({ request, params, query }) => workerDetail(ctx.db, grantOf(request).project.id, params.worker, query), {
      ...guarded(ctx, {
        summary: "A worker by id or name: its engine's inspect data (metadata), its queues with their depth where reported, and its tasks by state over a window",
        access: READ,
        params: Type.Object({ slug: ProjectSlug, worker: Type.String({ minLength: 1, maxLength: 200, description: 'the worker row id, or its name' }) }),
        query: Type.Object({
          engine: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'which engine, when workers of several engines share the name' })),
          window_seconds: Type.Optional(t.Integer({ minimum: 60, maximum: 604_800, description: 'tasks svc first heard of this long ago or later (default 3600)' })),
        }),
        ok: WorkerDetail,
        errors: { 404: ['not_found'], 409: ['ambiguous_worker'] },
      }),
    })
    .get('/queues', ({ request }) => listQueues(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: 'Queues as the agents reported them, with their depth where reported', access: READ, params: ProjectPath, ok: Type.Array(QueuePublic) }),
    });
};
