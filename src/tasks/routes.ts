// /api/v1/projects/{slug}/tasks, /workers, /queues: what the agents' events
// say about the project's task workers (viewer; API keys with tasks:read).
import { Elysia, t } from 'elysia';
import { authorize } from '../auth/guards.ts';
import { taskEvents } from '../ingest/service.ts';
import { projectAccess } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import { getTask, listQueues, listTasks, listWorkers } from './service.ts';

const Slug = t.Object({ slug: t.String({ minLength: 1, maxLength: 63 }) });
const STATES = ['pending', 'received', 'started', 'success', 'failure', 'retry', 'revoked', 'rejected', 'unknown'] as const;
const Ts = t.String({ pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\+00:00$' });

export const taskRoutes = (ctx: AppContext) => {
  const project = async (request: Request, slug: string) =>
    (await projectAccess(ctx.db, await authorize(ctx, request, { scope: 'tasks:read' }), slug, 'viewer')).project;
  return new Elysia({ prefix: '/api/v1/projects/:slug', detail: { tags: ['tasks'] } })
    .get('/tasks', async ({ request, params, query }) => listTasks(ctx.db, (await project(request, params.slug)).id, query), {
      params: Slug,
      query: t.Object({
        state: t.Optional(t.Union(STATES.map((s) => t.Literal(s)))),
        engine: t.Optional(t.String({ maxLength: 40 })),
        queue: t.Optional(t.String({ maxLength: 200 })),
        worker: t.Optional(t.String({ maxLength: 200 })),
        name: t.Optional(t.String({ maxLength: 200 })),
        since: t.Optional(Ts),
        until: t.Optional(Ts),
        cursor: t.Optional(t.String({ maxLength: 128 })),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })),
      }),
      detail: { summary: 'Tasks newest first (by when svc first heard of them), filtered, keyset-paged with next_cursor' },
    })
    .get(
      '/tasks/:engine/:task_id',
      async ({ request, params }) => {
        const p = await project(request, params.slug);
        const task = await getTask(ctx.db, p.id, params.engine, params.task_id);
        const events = (await taskEvents(ctx.db, task.id)).map((e) => ({
          id: e.id,
          kind: e.kind,
          occurred_at: e.occurred_at,
          agent_id: e.agent_id,
          payload: e.payload,
        }));
        return { ...task, events };
      },
      {
        params: t.Object({ slug: t.String({ maxLength: 63 }), engine: t.String({ minLength: 1, maxLength: 40 }), task_id: t.String({ minLength: 1, maxLength: 200 }) }),
        detail: { summary: 'One task with its event history, oldest first' },
      },
    )
    .get('/workers', async ({ request, params }) => listWorkers(ctx.db, (await project(request, params.slug)).id), { params: Slug })
    .get('/queues', async ({ request, params }) => listQueues(ctx.db, (await project(request, params.slug)).id), { params: Slug });
};
