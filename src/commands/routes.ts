// /api/v1/projects/{slug}/commands: issue commands to agents (operator;
// API keys with commands:write), list and read them with their outcome
// (viewer; commands:read). The generic POST takes only actions without a route
// of their own, admitted as those routes admit theirs.
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
import { CommandPage, CommandPublic, CommandStatusSchema, engineOf, getCommand, INTERNAL_KEY_PREFIXES, issueCommand, listCommands } from './service.ts';

const IdempotencyKey = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: 200,
    description: `per project: the same command again returns the first; another command under the key is 409 idempotency_key_reused; svc's own prefixes (${INTERNAL_KEY_PREFIXES.join(', ')}) are refused`,
  }),
);
/** The body fields every task command shares. */
const TaskTarget = {
  engine: Type.String({ minLength: 1, maxLength: 40 }),
  task_id: Type.String({ minLength: 1, maxLength: 200 }),
  agent_id: Type.Optional(Uuid),
  idempotency_key: IdempotencyKey,
};
/** Actions that destroy queued work need the project's admin role (and are then refused: see DEDICATED). */
const ADMIN_ACTIONS = new Set(['purge_queue']);
const READ = { user: { scope: 'commands:read' }, project: 'viewer' } as const;
const WRITE = { user: { scope: 'commands:write' }, project: 'operator' } as const;
/** Issuing: an agent named that is not the project's, none online for the engine, an agent whose
 * advertised inventory refuses the action, an Idempotency-Key reused with another body. */
export const ISSUE_ERRORS = { 404: ['not_found'], 409: [...ADMISSION_ERRORS, 'conflict', ...IDEMPOTENCY_ERRORS] } as const;
/** Actions with a route of their own, which checks or builds what the generic route cannot (a known worker,
 * the retry contract and a retry by reference, the purge confirm token, a frozen bulk job, a schedule's fire
 * row and state): the generic route refuses them, naming the route. Also the spec's names of two of them. */
const DEDICATED: ReadonlyMap<string, string> = new Map([
  ['retry_task', 'POST /commands/retry-task'],
  ['cancel_task', 'POST /commands/cancel-task'],
  ['restart_worker', 'POST /commands/restart-worker'],
  ['restart-worker', 'POST /commands/restart-worker'],
  ['pool_grow', 'POST /commands/pool-resize'],
  ['pool_shrink', 'POST /commands/pool-resize'],
  ['pool-resize', 'POST /commands/pool-resize'],
  ['add_consumer', 'POST /commands/add-consumer'],
  ['cancel_consumer', 'POST /commands/cancel-consumer'],
  ['rate_limit', 'POST /commands/rate-limit'],
  ['requeue_dead_letter', 'POST /commands/requeue-dead-letter'],
  ['dlq.list', 'POST /commands/list-dead-letters'],
  ['list_dead_letters', 'POST /commands/list-dead-letters'],
  ['purge_queue', 'POST /commands/purge-queue (it needs a confirm token)'],
  ['bulk_retry', 'POST /bulk-jobs (kind retry)'],
  ['schedule.fire', 'POST /schedules/{schedule_id}/trigger'],
  ['schedule.trigger_now', 'POST /schedules/{schedule_id}/trigger'],
  ['schedule.trigger_now.via_scheduler', 'POST /schedules/{schedule_id}/trigger'],
  ['schedule.enable', 'POST /schedules/{schedule_id}/enable'],
  ['schedule.disable', 'POST /schedules/{schedule_id}/disable'],
  ['schedule.resync', 'POST /schedules/resync'],
  ['schedule.external.activate', 'svc itself, when a scheduler agent connects'],
]);

/** A client's body idempotency_key; 422 when it starts as svc's own keys do (it could take the key of a
 * command a bulk job or a schedule has yet to issue). */
function clientKey(key: string | undefined): string | null {
  const prefix = key === undefined ? undefined : INTERNAL_KEY_PREFIXES.find((p) => key.startsWith(p));
  if (prefix) throw validationFailed([{ path: '/idempotency_key', message: `must not start with ${prefix} (svc's own keys do)` }]);
  return key ?? null;
}

/** A command a route issues: what it is, and what admit() checks it against (engine, agent, arguments). */
interface Admitted {
  action: string;
  engine: string | null;
  agentId?: string | undefined;
  carriesArguments?: boolean;
  targetType: string;
  targetId: string | null;
  idempotencyKey?: string | undefined;
  payload: (projectId: string) => Promise<Record<string, unknown>>;
}

export const commandRoutes = (ctx: AppContext) => {
  /** Issues a command to the agent named or an online agent whose advertised inventory admits it (admit());
   * under the request's Idempotency-Key, whose hash covers `body`. */
  const issueAdmitted = (request: Request, body: unknown, c: Admitted) => {
    const { who, project } = grantOf(request);
    const idempotencyKey = clientKey(c.idempotencyKey);
    return idempotent(ctx, request, { projectId: project.id, who }, body, 202, async () => {
      const agent = await admit(ctx.db, { projectId: project.id, action: c.action, engine: c.engine, agentId: c.agentId ?? null, carriesArguments: c.carriesArguments ?? false });
      return issueCommand(
        ctx,
        { projectId: project.id, agentId: agent.id, action: c.action, targetType: c.targetType, targetId: c.targetId, payload: await c.payload(project.id), idempotencyKey },
        actorOf(ctx, request, who),
      );
    });
  };
  /** A command aimed at one task, built from the route's body. */
  const issueForTask = (
    request: Request,
    action: string,
    body: { engine: string; task_id: string; agent_id?: string; idempotency_key?: string; override_args?: unknown; override_kwargs?: unknown },
    payload: (projectId: string) => Promise<Record<string, unknown>>,
  ) =>
    issueAdmitted(request, body, {
      action,
      engine: body.engine,
      agentId: body.agent_id,
      carriesArguments: body.override_args != null && body.override_kwargs != null,
      targetType: 'task',
      targetId: `${body.engine}:${body.task_id}`,
      idempotencyKey: body.idempotency_key,
      payload,
    });

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
        const action = body.action.trim();
        const dedicated = DEDICATED.get(action);
        if (dedicated) throw validationFailed([{ path: '/action', message: `is issued through ${dedicated}`, code: 'dedicated_route' }]);
        const parameters = body.parameters ?? {};
        return answer(
          set,
          await issueAdmitted(request, body, {
            action,
            engine: engineOf(action, parameters),
            agentId: body.agent_id,
            targetType: body.target_type,
            targetId: body.target_id ?? null,
            idempotencyKey: body.idempotency_key,
            payload: async () => parameters,
          }),
        );
      },
      {
        ...guarded(
          ctx,
          {
            summary:
              'Issue an action without a route of its own (reconcile_task, submit_task, ...) to the agent named, checked against what it advertised (202; delivered over its WebSocket or its next poll); an action with a route of its own (retry_task, restart_worker, purge_queue, bulk_retry, schedule.*, ...) is refused with 422 naming that route',
            access: { ...WRITE, projectRoleMayRise: true },
            params: ProjectPath,
            body: Body({
              action: Type.String({ minLength: 1, maxLength: 80 }),
              agent_id: Uuid,
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
