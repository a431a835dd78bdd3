// /api/v1/projects/{slug}/tasks, /workers, /queues: what the agents' events
// say about the project's task workers (viewer; API keys with tasks:read).
import { Type } from '@sinclair/typebox';
import { ProjectPath, ProjectSlug } from '../http/schemas.ts';
import { Elysia, t } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { taskEvents } from '../ingest/service.ts';
import type { AppContext } from '../server/context.ts';
import { QueuePublic, TaskDetail, TaskPage, TaskStateSchema, WorkerPublic } from './schemas.ts';
import { getTask, listQueues, listTasks, listWorkers } from './service.ts';

const Ts = Type.String({ pattern: '^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}\\+00:00$' });
const READ = { user: { scope: 'tasks:read' }, project: 'viewer' } as const;

export const taskRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/projects/:slug', detail: { tags: ['tasks'] } })
    .get('/tasks', ({ request, query }) => listTasks(ctx.db, grantOf(request).project.id, query), {
      ...guarded(ctx, {
        summary: 'Tasks newest first (by when svc first heard of them), filtered, keyset-paged with next_cursor',
        access: READ,
        params: ProjectPath,
        query: Type.Object({
          state: Type.Optional(TaskStateSchema),
          engine: Type.Optional(Type.String({ maxLength: 40 })),
          queue: Type.Optional(Type.String({ maxLength: 200 })),
          worker: Type.Optional(Type.String({ maxLength: 200 })),
          name: Type.Optional(Type.String({ maxLength: 200 })),
          since: Type.Optional(Ts),
          until: Type.Optional(Ts),
          cursor: Type.Optional(Type.String({ maxLength: 128 })),
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })),
        }),
        ok: TaskPage,
      }),
    })
    .get(
      '/tasks/:engine/:task_id',
      async ({ request, params }) => {
        const task = await getTask(ctx.db, grantOf(request).project.id, params.engine, params.task_id);
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
        ...guarded(ctx, {
          summary: 'One task with its event history, oldest first',
          access: READ,
          params: Type.Object({
            slug: ProjectSlug,
            engine: Type.String({ minLength: 1, maxLength: 40 }),
            task_id: Type.String({ minLength: 1, maxLength: 200 }),
          }),
          ok: TaskDetail,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .get('/workers', ({ request }) => listWorkers(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: 'Workers as the agents reported them', access: READ, params: ProjectPath, ok: Type.Array(WorkerPublic) }),
    })
    .get('/queues', ({ request }) => listQueues(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: 'Queues as the agents reported them, with their depth where reported', access: READ, params: ProjectPath, ok: Type.Array(QueuePublic) }),
    });
