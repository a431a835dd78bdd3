// Operator actions on workers and queues, each one command through the usual
// issue path (its row and audit row commit together; the agent's answer is the
// command's outcome): restart a worker, resize its pool, add or cancel a
// consumer, set a rate limit, requeue or list dead letters, and purge a queue
// behind a confirm token. Each is admitted first (admission.ts): the agent must
// be the project's, and what it advertised must allow the action.
import { Type, type Static } from '@sinclair/typebox';
import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import { projectSigningKey, type AgentRow } from '../agents/service.ts';
import type { Actor } from '../auth/actor.ts';
import type { Principal } from '../auth/principal.ts';
import { conflict } from '../http/errors.ts';
import { Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import type { AppContext } from '../server/context.ts';
import { listQueues, listWorkers, type WorkerRow } from '../tasks/service.ts';
import { purgeConfirmToken } from '../transport/purge-token.ts';
import { admit } from './admission.ts';
import { principalKey } from './idempotency.ts';
import { issueCommand, type CommandPublic } from './service.ts';
import { purgeConfirmations } from './tables.ts';

export interface Caller {
  projectId: string;
  who: Principal;
  actor: Actor;
}

interface Targeted {
  engine?: string;
  agent_id?: string;
}

/** A worker svc knows in the project (reported by an agent), or 409 unknown_worker; 409 ambiguous_worker when
 * workers of several engines share the name and no engine says which (as the worker detail answers). */
async function knownWorker(ctx: AppContext, projectId: string, name: string, engine: string | undefined): Promise<WorkerRow> {
  const workers = (await listWorkers(ctx.db, projectId)).filter((w) => w.name === name && (!engine || w.engine === engine));
  const worker = workers[0];
  if (!worker) {
    throw conflict(`no worker named ${name} has been reported in this project${engine ? ` for the ${engine} engine` : ''}`, { worker_name: name }, 'unknown_worker');
  }
  if (workers.length > 1) {
    throw conflict(`workers of ${workers.length} engines are named ${name}: say which with engine`, { worker_name: name, engines: workers.map((w) => w.engine) }, 'ambiguous_worker');
  }
  return worker;
}

/** Admits and issues one worker-level command. */
async function issueTo(
  ctx: AppContext,
  caller: Caller,
  spec: { action: string; engine: string | null; agentId?: string; targetType: string; targetId: string | null; parameters: Record<string, unknown>; unreportedFallback?: boolean },
): Promise<CommandPublic> {
  const agent: AgentRow = await admit(ctx.db, {
    projectId: caller.projectId,
    action: spec.action,
    engine: spec.engine,
    agentId: spec.agentId ?? null,
    ...(spec.unreportedFallback ? { unreportedFallback: true } : {}),
  });
  const engine = spec.engine ?? (agent.engine_adapters.length === 1 ? agent.engine_adapters[0]! : null);
  return issueCommand(
    ctx,
    {
      projectId: caller.projectId,
      agentId: agent.id,
      action: spec.action,
      targetType: spec.targetType,
      targetId: spec.targetId,
      payload: { ...(engine ? { engine } : {}), ...spec.parameters },
    },
    caller.actor,
  );
}

export async function restartWorker(ctx: AppContext, caller: Caller, body: Targeted & { worker_name: string }): Promise<CommandPublic> {
  const worker = await knownWorker(ctx, caller.projectId, body.worker_name, body.engine);
  return issueTo(ctx, caller, {
    action: 'restart_worker',
    engine: worker.engine,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'worker',
    targetId: worker.name,
    parameters: { worker_name: worker.name },
  });
}

/** Grows or shrinks a worker's pool by `delta`, or to `size` (from the concurrency the worker last reported). */
export async function resizePool(ctx: AppContext, caller: Caller, body: Targeted & { worker_name: string; delta?: number; size?: number }): Promise<CommandPublic> {
  const worker = await knownWorker(ctx, caller.projectId, body.worker_name, body.engine);
  let delta: number;
  if (body.size !== undefined) {
    if (worker.concurrency === null) {
      throw conflict(`worker ${worker.name} has not reported its pool size; resize it by delta instead`, { worker_name: worker.name }, 'pool_size_unknown');
    }
    delta = body.size - worker.concurrency;
  } else delta = body.delta ?? 0;
  if (delta === 0) {
    throw conflict(`the pool of ${worker.name} is already that size`, { worker_name: worker.name, concurrency: worker.concurrency }, 'no_change');
  }
  return issueTo(ctx, caller, {
    action: delta > 0 ? 'pool_grow' : 'pool_shrink',
    engine: worker.engine,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'worker',
    targetId: worker.name,
    parameters: { worker_name: worker.name, delta: Math.abs(delta) },
  });
}

export async function changeConsumer(ctx: AppContext, caller: Caller, action: 'add_consumer' | 'cancel_consumer', body: Targeted & { worker_name: string; queue: string }): Promise<CommandPublic> {
  const worker = await knownWorker(ctx, caller.projectId, body.worker_name, body.engine);
  return issueTo(ctx, caller, {
    action,
    engine: worker.engine,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'worker',
    targetId: worker.name,
    parameters: { worker_name: worker.name, queue: body.queue },
  });
}

/** Sets (or with rate "0" clears) a task's rate limit on one worker, or on every worker when none is named. */
export async function setRateLimit(ctx: AppContext, caller: Caller, body: Targeted & { task_name: string; rate: string; worker_name?: string }): Promise<CommandPublic> {
  const worker = body.worker_name ? await knownWorker(ctx, caller.projectId, body.worker_name, body.engine) : null;
  // The target is the worker (none: every worker); z4j agents read a missing worker_name from the target id.
  return issueTo(ctx, caller, {
    action: 'rate_limit',
    engine: worker?.engine ?? body.engine ?? null,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'worker',
    targetId: worker?.name ?? null,
    parameters: { task_name: body.task_name, rate: body.rate, worker_name: worker?.name ?? null },
  });
}

export async function requeueDeadLetter(
  ctx: AppContext,
  caller: Caller,
  body: { engine: string; task_id: string; agent_id?: string; task_name?: string; override_args?: unknown[]; override_kwargs?: Record<string, unknown> },
): Promise<CommandPublic> {
  return issueTo(ctx, caller, {
    action: 'requeue_dead_letter',
    engine: body.engine,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'task',
    targetId: `${body.engine}:${body.task_id}`,
    // filter.engine is authoritative for the agent's choice of adapter.
    parameters: {
      filter: { engine: body.engine },
      task_id: body.task_id,
      task_name: body.task_name ?? null,
      override_args: body.override_args ?? null,
      override_kwargs: body.override_kwargs ?? null,
    },
  });
}

/** dlq.list: the agent answers a page of parked tasks as the command's result. */
export async function listDeadLetters(ctx: AppContext, caller: Caller, body: { engine: string; queue?: string; limit?: number; cursor?: string; agent_id?: string }): Promise<CommandPublic> {
  return issueTo(ctx, caller, {
    action: 'dlq.list',
    engine: body.engine,
    ...(body.agent_id ? { agentId: body.agent_id } : {}),
    targetType: 'queue',
    targetId: body.queue ?? '',
    parameters: { queue: body.queue ?? null, limit: body.limit ?? 100, cursor: body.cursor ?? null },
    // Long-poll agents are the fallback target of dead-letter listing (spec, long-poll transport (d)).
    unreportedFallback: true,
  });
}

// --- purge: confirm token, then the command ----------------------------------------

export const PurgeConfirmation = Answer(
  {
    confirm_token: Type.String({ description: 'send it back in POST /commands/purge-queue before expires_at; single use' }),
    expires_at: Timestamp,
    queue: Type.String(),
    engine: Type.String(),
    agent_id: Uuid,
    depth: Nullable(Type.Integer({ description: 'the queue depth the agents last reported; the agent purges only at this depth' })),
    requires_force: Type.Boolean({ description: 'true when svc knows no depth: the purge must then be sent with force' }),
  },
  'PurgeConfirmation',
);
export type PurgeConfirmation = Static<typeof PurgeConfirmation>;

const purgeTable = (ex: { dialect: string }) => (ex.dialect === 'sqlite' ? purgeConfirmations.sqlite : purgeConfirmations.pg);

/** First call: which agent will purge, the depth svc last saw, and a short-lived single-use token. */
export async function requestPurge(ctx: AppContext, caller: Caller, body: Targeted & { queue: string }): Promise<PurgeConfirmation> {
  const queues = (await listQueues(ctx.db, caller.projectId)).filter((q) => q.name === body.queue && (!body.engine || q.engine === body.engine));
  const engine = body.engine ?? queues[0]?.engine ?? null;
  const agent = await admit(ctx.db, { projectId: caller.projectId, action: 'purge_queue', engine, agentId: body.agent_id ?? null });
  const agentEngine = engine ?? (agent.engine_adapters.length === 1 ? agent.engine_adapters[0]! : null);
  if (agentEngine === null) {
    throw conflict('name the engine of the queue: svc has no report of it and the agent advertises no single engine', { queue: body.queue }, 'engine_unknown');
  }
  const depth = queues.find((q) => q.engine === agentEngine)?.pending_count ?? null;
  const token = randomToken(24);
  const micros = nowMicros();
  const expiresAt = isoMicros(micros + ctx.config.SVC_PURGE_CONFIRM_TTL_SECONDS * 1_000_000);
  await ctx.db.tx(async (tx) => {
    await tx.q.insert(purgeTable(tx)).values({
      token_hash: sha256Hex(token),
      project_id: caller.projectId,
      principal: principalKey(caller.who),
      agent_id: agent.id,
      engine: agentEngine,
      queue: body.queue,
      depth: depth === null ? null : Number(depth),
      created_at: isoMicros(micros),
      expires_at: expiresAt,
      used_at: null,
    });
    await ctx.audit.append(tx, {
      ...caller.actor,
      action: 'command.purge_queue.confirm_requested',
      target_type: 'queue',
      target_id: body.queue,
      project_id: caller.projectId,
      metadata: { engine: agentEngine, agent_id: agent.id, depth, expires_at: expiresAt },
    });
  });
  return { confirm_token: token, expires_at: expiresAt, queue: body.queue, engine: agentEngine, agent_id: agent.id, depth: depth === null ? null : Number(depth), requires_force: depth === null };
}

/** Second call: spends the token (bound to project, queue and caller) and issues purge_queue. */
export async function purgeQueue(ctx: AppContext, caller: Caller, body: { queue: string; confirm_token: string; force?: boolean }): Promise<CommandPublic> {
  const hash = sha256Hex(body.confirm_token);
  return ctx.db.tx(async (tx) => {
    const t = purgeTable(tx);
    const [row] = await tx.q.select().from(t).where(eq(t.token_hash, hash));
    const refuse = (code: string, message: string) => conflict(message, { queue: body.queue }, code);
    if (!row || row.project_id !== caller.projectId || row.principal !== principalKey(caller.who)) {
      throw refuse('confirm_token_invalid', 'the confirm token is not one this caller was given for this project; ask for a new one');
    }
    if (row.used_at !== null) throw refuse('confirm_token_used', 'the confirm token was already used; ask for a new one');
    const now = isoMicros(nowMicros());
    if (row.expires_at <= now) throw refuse('confirm_token_expired', 'the confirm token expired; ask for a new one');
    if (row.queue !== body.queue) throw refuse('confirm_token_mismatch', `the confirm token was given for queue ${row.queue}, not this one`);
    if (row.depth === null && !body.force) {
      throw refuse('queue_depth_unknown', 'svc knows no depth for this queue, so the agent cannot check it: send force=true to purge anyway');
    }
    const spent = await tx.q
      .update(t)
      .set({ used_at: now })
      .where(and(eq(t.token_hash, hash), isNull(t.used_at), gt(t.expires_at, now)))
      .returning({ h: t.token_hash });
    if (spent.length !== 1) throw refuse('confirm_token_used', 'the confirm token was already used; ask for a new one');
    // The agent recomputes this keyed token from the depth it measures: a queue that changed since is not purged.
    const agentToken = row.depth === null ? null : purgeConfirmToken(projectSigningKey(ctx, caller.projectId), row.queue, row.depth);
    return issueCommand(
      ctx,
      {
        projectId: caller.projectId,
        agentId: row.agent_id,
        action: 'purge_queue',
        targetType: 'queue',
        targetId: row.queue,
        payload: { engine: row.engine, queue: row.queue, confirm_token: agentToken, force: body.force ?? false },
      },
      caller.actor,
    );
  });
}

/** Drops confirmations past their lifetime. */
export async function pruneConfirmations(ctx: AppContext): Promise<void> {
  const now = isoMicros(nowMicros());
  await ctx.db.tx(async (tx) => {
    const t = purgeTable(tx);
    await tx.q.delete(t).where(lt(t.expires_at, now));
  });
}
