// /api/v1/projects/{slug}/commands/<action>: operator actions on workers,
// queues and dead letters (operator; purging a queue needs project admin and a
// confirm token). Each answers 202 with the command; its outcome is the
// command's status, result and error once the agent answers. Every issuing
// route takes an Idempotency-Key header.
import { Type, type TProperties } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { validationFailed } from '../http/errors.ts';
import { Body, ProjectPath, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { answer, IdempotencyHeaders, idempotent } from './idempotency.ts';
import {
  changeConsumer,
  listDeadLetters,
  purgeQueue,
  PurgeConfirmation,
  requestPurge,
  requeueDeadLetter,
  resizePool,
  restartWorker,
  setRateLimit,
  type Caller,
} from './operator.ts';
import { ISSUE_ERRORS } from './routes.ts';
import { CommandPublic, type CommandPublic as Command } from './service.ts';

const OPERATOR = { user: { scope: 'commands:write' }, project: 'operator' } as const;
const ADMIN = { user: { scope: 'commands:write' }, project: 'admin' } as const;
const Engine = Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'default: the engine svc saw the worker or queue on' }));
const AgentId = Type.Optional(Uuid);
const WorkerName = Type.String({ minLength: 1, maxLength: 200, description: 'as the agents reported it (GET /workers)' });
const QueueName = Type.String({ minLength: 1, maxLength: 200 });
/** Worker actions also refuse a worker svc has never been told of. */
const WORKER_ERRORS = { ...ISSUE_ERRORS, 409: [...ISSUE_ERRORS[409], 'unknown_worker', 'ambiguous_worker'] } as const;
const PURGE_ERRORS = {
  ...ISSUE_ERRORS,
  409: [...ISSUE_ERRORS[409], 'confirm_token_invalid', 'confirm_token_expired', 'confirm_token_mismatch', 'confirm_token_used', 'queue_depth_unknown'],
} as const;

export const operatorRoutes = (ctx: AppContext) => {
  const callerOf = (request: Request): Caller => {
    const { who, project } = grantOf(request);
    return { projectId: project.id, who, actor: actorOf(ctx, request, who) };
  };
  /** An issuing handler: the command under the request's Idempotency-Key, answered 202. */
  const issuing =
    <B>(issue: (caller: Caller, body: B) => Promise<Command>) =>
    async ({ request, body, set }: { request: Request; body: B; set: { status?: unknown; headers: Record<string, string | number> } }) => {
      const caller = callerOf(request);
      return answer(set, await idempotent(ctx, request, { projectId: caller.projectId, who: caller.who }, body, 202, () => issue(caller, body)));
    };
  const route = <P extends TProperties>(summary: string, body: P, errors: Record<number, readonly string[]> = WORKER_ERRORS, access: typeof OPERATOR | typeof ADMIN = OPERATOR) =>
    guarded(ctx, { summary, access, params: ProjectPath, body: Body(body), checkedByHandler: { headers: IdempotencyHeaders }, ok: CommandPublic, status: 202, errors });

  return new Elysia({ prefix: '/api/v1/projects/:slug/commands', detail: { tags: ['commands'] } })
    .post(
      '/restart-worker',
      issuing((caller, body: { worker_name: string; engine?: string; agent_id?: string }) => restartWorker(ctx, caller, body)),
      route('Restart a worker (restart_worker; z4j-celery restarts its pool, others exit under their supervisor)', { worker_name: WorkerName, engine: Engine, agent_id: AgentId }),
    )
    .post(
      '/pool-resize',
      issuing((caller, body: { worker_name: string; delta?: number; size?: number; engine?: string; agent_id?: string }) => {
        if ((body.delta === undefined) === (body.size === undefined)) {
          throw validationFailed([{ path: '/delta', message: 'give exactly one of delta (grow or shrink by) and size (set to)' }]);
        }
        return resizePool(ctx, caller, body);
      }),
      route(
        'Grow or shrink a worker pool by delta, or set it to size (pool_grow / pool_shrink)',
        {
          worker_name: WorkerName,
          delta: Type.Optional(Type.Integer({ minimum: -100, maximum: 100, not: { const: 0 } })),
          size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'from the concurrency the worker last reported' })),
          engine: Engine,
          agent_id: AgentId,
        },
        { ...WORKER_ERRORS, 409: [...WORKER_ERRORS[409], 'pool_size_unknown', 'no_change'] },
      ),
    )
    .post(
      '/add-consumer',
      issuing((caller, body: { worker_name: string; queue: string; engine?: string; agent_id?: string }) => changeConsumer(ctx, caller, 'add_consumer', body)),
      route('Make a worker consume a queue too (add_consumer)', { worker_name: WorkerName, queue: QueueName, engine: Engine, agent_id: AgentId }),
    )
    .post(
      '/cancel-consumer',
      issuing((caller, body: { worker_name: string; queue: string; engine?: string; agent_id?: string }) => changeConsumer(ctx, caller, 'cancel_consumer', body)),
      route('Make a worker stop consuming a queue (cancel_consumer)', { worker_name: WorkerName, queue: QueueName, engine: Engine, agent_id: AgentId }),
    )
    .post(
      '/rate-limit',
      issuing((caller, body: { task_name: string; rate: string; worker_name?: string; engine?: string; agent_id?: string }) => setRateLimit(ctx, caller, body)),
      route('Set a task rate limit on one worker, or on every worker when worker_name is left out ("0" clears it) (rate_limit)', {
        task_name: Type.String({ minLength: 1, maxLength: 500 }),
        rate: Type.String({ pattern: '^(0|[1-9][0-9]{0,8}(/[smh])?)$', examples: ['10/m'] }),
        worker_name: Type.Optional(WorkerName),
        engine: Engine,
        agent_id: AgentId,
      }),
    )
    .post(
      '/requeue-dead-letter',
      issuing((caller, body: { engine: string; task_id: string; agent_id?: string; task_name?: string; override_args?: unknown[]; override_kwargs?: Record<string, unknown> }) =>
        requeueDeadLetter(ctx, caller, body),
      ),
      route(
        'Requeue a dead-lettered task (requeue_dead_letter)',
        {
          engine: Type.String({ minLength: 1, maxLength: 40 }),
          task_id: Type.String({ minLength: 1, maxLength: 200 }),
          task_name: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
          override_args: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 256 })),
          override_kwargs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          agent_id: AgentId,
        },
        ISSUE_ERRORS,
      ),
    )
    .post(
      '/list-dead-letters',
      issuing((caller, body: { engine: string; queue?: string; limit?: number; cursor?: string; agent_id?: string }) => listDeadLetters(ctx, caller, body)),
      route(
        "List an engine's dead letters (dlq.list): the page arrives as the command's result",
        {
          engine: Type.String({ minLength: 1, maxLength: 40 }),
          queue: Type.Optional(QueueName),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
          cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          agent_id: AgentId,
        },
        ISSUE_ERRORS,
      ),
    )
    .post(
      '/purge-queue/confirm-token',
      async ({ request, body, set }) => {
        set.status = 201;
        return requestPurge(ctx, callerOf(request), body);
      },
      guarded(ctx, {
        summary: 'First step of a purge: the agent that will purge, the depth svc last saw and a short-lived single-use confirm token',
        access: ADMIN,
        params: ProjectPath,
        body: Body({ queue: QueueName, engine: Engine, agent_id: AgentId }),
        ok: PurgeConfirmation,
        status: 201,
        errors: { 404: ['not_found'], 409: [...ISSUE_ERRORS[409].filter((c) => c !== 'idempotency_key_reused'), 'engine_unknown'] },
      }),
    )
    .post(
      '/purge-queue',
      issuing((caller, body: { queue: string; confirm_token: string; force?: boolean }) => purgeQueue(ctx, caller, body)),
      route(
        'Purge a queue with the confirm token of the first step (purge_queue); the agent purges only at the depth confirmed, unless force',
        { queue: QueueName, confirm_token: Type.String({ minLength: 1, maxLength: 200 }), force: Type.Optional(Type.Boolean()) },
        PURGE_ERRORS,
        ADMIN,
      ),
    );
};
