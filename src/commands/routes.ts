// /api/v1/projects/{slug}/commands: issue commands to agents (operator;
// purge_queue needs project admin; API keys with commands:write), list and
// read them with their outcome (viewer; commands:read).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { validationFailed } from '../http/errors.ts';
import { Body, ProjectPath, ProjectSlug, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { findTask } from '../tasks/service.ts';
import { ADMISSION_ERRORS, admit } from './admission.ts';
import { answer, IDEMPOTENCY_ERRORS, IdempotencyHeaders, idempotent } from './idempotency.ts';
import { CommandPage, CommandPublic, CommandStatusSchema, getCommand, issueCommand, listCommands } from './service.ts';

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
const READ = { user: { scope: 'commands:read' }, project: 'viewer' } as const;
const WRITE = { user: { scope: 'commands:write' }, project: 'operator' } as const;
/** Issuing: an agent named that is not the project's, none online for the engine, an agent whose
 * advertised inventory refuses the action, an Idempotency-Key reused with another body. */
export const ISSUE_ERRORS = { 404: ['not_found'], 409: [...ADMISSION_ERRORS, 'conflict', ...IDEMPOTENCY_ERRORS] } as const;
/** Actions with a route of their own whose extra checks the generic route must not bypass. */
const DEDICATED = new Map([['purge_queue', '/commands/purge-queue (it needs a confirm token)']]);

export const commandRoutes = (ctx: AppContext) => {
  /** Issues a command aimed at one task, built from the route's body, to the agent named or an online agent
   * whose advertised inventory admits it; under the request's Idempotency-Key. */
  const issueForTask = async (
    request: Request,
    action: string,
    body: { engine: string; task_id: string; agent_id?: string; idempotency_key?: string; override_args?: unknown; override_kwargs?: unknown },
    payload: (projectId: string) => Promise<Record<string, unknown>>,
  ) => {
    const { who, project } = grantOf(request);
    return idempotent(ctx, request, { projectId: project.id, who }, body, 202, async () => {
      const carriesArguments = body.override_args != null && body.override_kwargs != null;
      const agent = await admit(ctx.db, { projectId: project.id, action, engine: body.engine, agentId: body.agent_id ?? null, carriesArguments });
      return issueCommand(
        ctx,
        {
          projectId: project.id,
          agentId: agent.id,
          action,
          targetType: 'task',
          targetId: `${body.engine}:${body.task_id}`,
          payload: await payload(project.id),
          idempotencyKey: body.idempotency_key ?? null,
        },
        actorOf(ctx, request, who),
      );
    });
  };

  return new Elysia({ prefix: '/api/v1/projects/:slug/commands', detail: { tags: ['commands'] } })
    .get('', ({ request, query }) => listCommands(ctx.db, grantOf(request).project.id, { status: query.status, cursor: query.cursor, limit: query.limit }), {
      ...guarded(ctx, {
        summary: 'Commands newest first, with their status and result',
        access: READ,
        params: ProjectPath,
        query: Type.Object({
          status: Type.Optional(CommandStatusSchema),
          cursor: Type.Optional(Type.String({ maxLength: 128 })),
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })),
        }),
        ok: CommandPage,
      }),
    })
    .get('/:command_id', ({ request, params }) => getCommand(ctx.db, grantOf(request).project.id, params.command_id), {
      ...guarded(ctx, {
        summary: 'One command with its status and result',
        access: READ,
        params: Type.Object({ slug: ProjectSlug, command_id: Uuid }),
        ok: CommandPublic,
        errors: { 404: ['not_found'] },
      }),
    })
    .post(
      '',
      async ({ request, body, set }) => {
        const { who, project } = grantOf(request);
        const dedicated = DEDICATED.get(body.action.trim());
        if (dedicated) throw validationFailed([{ path: '/action', message: `is issued through ${dedicated}` }]);
        return answer(
          set,
          await idempotent(ctx, request, { projectId: project.id, who }, body, 202, () =>
            issueCommand(
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
            ),
          ),
        );
      },
      {
        ...guarded(
          ctx,
          {
            summary: 'Issue any command action to an agent (202; delivered over its WebSocket or its next poll); purge_queue goes through /purge-queue',
            access: { ...WRITE, projectRoleMayRise: true },
            params: ProjectPath,
            body: Body({
              action: Type.String({ minLength: 1, maxLength: 80 }),
              agent_id: Type.Optional(Uuid),
              target_type: Type.String({ minLength: 1, maxLength: 40 }),
              target_id: Type.Optional(Type.String({ maxLength: 200 })),
              parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
              idempotency_key: IdempotencyKey,
            }),
            checkedByHandler: { headers: IdempotencyHeaders },
            ok: CommandPublic,
            status: 202,
            errors: ISSUE_ERRORS,
          },
          (body: { action?: string }) => (body.action && ADMIN_ACTIONS.has(body.action) ? 'admin' : 'operator'),
        ),
      },
    )
    .post(
      '/retry-task',
      async ({ request, body, set }) =>
        answer(set, await issueForTask(request, 'retry_task', body, async (projectId) => {
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
        })),
      {
        ...guarded(ctx, {
          summary: 'Retry a task (retry_task); without agent_id an online agent advertising the engine is chosen',
          access: WRITE,
          params: ProjectPath,
          body: Body({
            ...TaskTarget,
            override_args: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 256 })),
            override_kwargs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
            eta_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86400 })),
          }),
          checkedByHandler: { headers: IdempotencyHeaders },
          ok: CommandPublic,
          status: 202,
          errors: ISSUE_ERRORS,
        }),
      },
    )
    .post(
      '/cancel-task',
      async ({ request, body, set }) => answer(set, await issueForTask(request, 'cancel_task', body, async () => ({ engine: body.engine, task_id: body.task_id }))),
      {
        ...guarded(ctx, {
          summary: 'Cancel (revoke) a task (cancel_task)',
          access: WRITE,
          params: ProjectPath,
          body: Body(TaskTarget),
          checkedByHandler: { headers: IdempotencyHeaders },
          ok: CommandPublic,
          status: 202,
          errors: ISSUE_ERRORS,
        }),
      },
    );
};
