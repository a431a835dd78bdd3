// /api/v1/projects/{slug}/commands: issue commands to agents (operator;
// purge_queue needs project admin; API keys with commands:write), list and
// read them with their outcome (viewer; commands:read).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { actorOf } from '../auth/actor.ts';
import { authorize } from '../auth/guards.ts';
import { onlineAgentsOfProject } from '../agents/service.ts';
import { conflict } from '../http/errors.ts';
import { Body } from '../http/schemas.ts';
import { projectAccess } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import { findTask } from '../tasks/service.ts';
import { COMMAND_STATUSES, getCommand, issueCommand, listCommands, type CommandStatus } from './service.ts';

const Slug = t.Object({ slug: t.String({ minLength: 1, maxLength: 63 }) });
const Uuid = Type.String({ format: 'uuid' });
const IdempotencyKey = Type.Optional(Type.String({ minLength: 1, maxLength: 200 }));
/** The body fields every task command shares. */
const TaskTarget = {
  engine: Type.String({ minLength: 1, maxLength: 40 }),
  task_id: Type.String({ minLength: 1, maxLength: 200 }),
  agent_id: Type.Optional(Uuid),
  idempotency_key: IdempotencyKey,
};
/** Actions that destroy queued work need the project's admin role. */
const ADMIN_ACTIONS = new Set(['purge_queue']);

export const commandRoutes = (ctx: AppContext) => {
  const access = async (request: Request, slug: string, write: boolean, action?: string) => {
    const who = await authorize(ctx, request, { scope: write ? 'commands:write' : 'commands:read' });
    const need = !write ? 'viewer' : action && ADMIN_ACTIONS.has(action) ? 'admin' : 'operator';
    return { who, project: (await projectAccess(ctx.db, who, slug, need)).project };
  };

  /** The agent for a task command: the one named, else an online agent advertising the engine. */
  const agentFor = async (projectId: string, engine: string, agentId: string | undefined): Promise<string> => {
    if (agentId) return agentId;
    const agent = (await onlineAgentsOfProject(ctx.db, projectId)).find((a) => a.engine_adapters.includes(engine));
    if (!agent) throw conflict(`no online agent advertises the ${engine} engine; pass agent_id to choose one`, { engine }, 'no_agent');
    return agent.id;
  };

  /** Issues a command aimed at one task, built from the route's body. */
  const issueForTask = async (
    request: Request,
    slug: string,
    action: string,
    body: { engine: string; task_id: string; agent_id?: string; idempotency_key?: string },
    payload: (projectId: string) => Promise<Record<string, unknown>>,
  ) => {
    const { who, project } = await access(request, slug, true, action);
    return issueCommand(
      ctx,
      {
        projectId: project.id,
        agentId: await agentFor(project.id, body.engine, body.agent_id),
        action,
        targetType: 'task',
        targetId: `${body.engine}:${body.task_id}`,
        payload: await payload(project.id),
        idempotencyKey: body.idempotency_key ?? null,
      },
      actorOf(ctx, request, who),
    );
  };

  return new Elysia({ prefix: '/api/v1/projects/:slug/commands', detail: { tags: ['commands'] } })
    .get(
      '',
      async ({ request, params, query }) => {
        const { project } = await access(request, params.slug, false);
        return listCommands(ctx.db, project.id, { status: query.status as CommandStatus | undefined, cursor: query.cursor, limit: query.limit });
      },
      {
        params: Slug,
        query: t.Object({
          status: t.Optional(t.Union(COMMAND_STATUSES.map((s) => t.Literal(s)))),
          cursor: t.Optional(t.String({ maxLength: 128 })),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })),
        }),
        detail: { summary: 'Commands newest first, with their status and result' },
      },
    )
    .get(
      '/:command_id',
      async ({ request, params }) => getCommand(ctx.db, (await access(request, params.slug, false)).project.id, params.command_id),
      { params: t.Object({ slug: t.String({ maxLength: 63 }), command_id: t.String({ format: 'uuid' }) }) },
    )
    .post(
      '',
      async ({ request, params, body, set }) => {
        const { who, project } = await access(request, params.slug, true, body.action);
        set.status = 202;
        return issueCommand(
          ctx,
          {
            projectId: project.id,
            agentId: body.agent_id ?? null,
            action: body.action,
            targetType: body.target_type,
            targetId: body.target_id ?? null,
            payload: body.parameters ?? {},
            idempotencyKey: body.idempotency_key ?? null,
          },
          actorOf(ctx, request, who),
        );
      },
      {
        params: Slug,
        body: Body({
          action: Type.String({ minLength: 1, maxLength: 80 }),
          agent_id: Type.Optional(Uuid),
          target_type: Type.String({ minLength: 1, maxLength: 40 }),
          target_id: Type.Optional(Type.String({ maxLength: 200 })),
          parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          idempotency_key: IdempotencyKey,
        }),
        detail: { summary: 'Issue any command action to an agent (202; delivered over its WebSocket or its next poll)' },
      },
    )
    .post(
      '/retry-task',
      async ({ request, params, body, set }) => {
        set.status = 202;
        return issueForTask(request, params.slug, 'retry_task', body, async (projectId) => {
          const task = await findTask(ctx.db, projectId, body.engine, body.task_id);
          // Retry by reference: the agent replays the task from its own engine; svc never sends stored arguments.
          return {
            engine: body.engine,
            task_id: body.task_id,
            task_name: task?.name ?? null,
            args: null,
            kwargs: null,
            override_args: body.override_args ?? null,
            override_kwargs: body.override_kwargs ?? null,
            eta_seconds: body.eta_seconds ?? null,
            priority: task?.priority ?? null,
          };
        });
      },
      {
        params: Slug,
        body: Body({
          ...TaskTarget,
          override_args: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 256 })),
          override_kwargs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          eta_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400 })),
        }),
        detail: { summary: 'Retry a task (retry_task); without agent_id an online agent advertising the engine is chosen' },
      },
    )
    .post(
      '/cancel-task',
      async ({ request, params, body, set }) => {
        set.status = 202;
        return issueForTask(request, params.slug, 'cancel_task', body, async () => ({ engine: body.engine, task_id: body.task_id }));
      },
      { params: Slug, body: Body(TaskTarget), detail: { summary: 'Cancel (revoke) a task (cancel_task)' } },
    );
};
