// Commands: issuing (with its audit row, idempotency key and schedule.fire
// routing), reading, and the lifecycle the agents drive (ack, result) or time
// drives (timeout, buffer expiry). Delivery to the transports is delivery.ts.
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../auth/actor.ts';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { findAgent, onlineAgentsOfProject } from '../agents/service.ts';
import type { Db, Executor, Tx } from '../db/connect.ts';
import { notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros } from '../lib/clock.ts';
import { rootCause } from '../lib/errors.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import type { AppContext } from '../server/context.ts';
import { keyReused } from './idempotency.ts';
import {
  bufferedCommands,
  commandById,
  commandByKey,
  commandsPage,
  expireBuffered,
  insertCommand,
  insertCommandForLiveAgent,
  markAcked,
  markResult,
  routeBuffered,
  timeOutExpired,
  type CommandRow,
} from './store.ts';
import type { CommandStatus } from './tables.ts';

export type { CommandRow, CommandStatus };

/** Safe to re-send when a delivery may have been lost; every other action is at-most-once. */
export const REDELIVERABLE_ACTIONS: readonly string[] = [
  'schedule.fire',
  'schedule.trigger_now',
  'schedule.trigger_now.via_scheduler',
  'cancel_task',
  'reconcile_task',
  'schedule.resync',
  'schedule.enable',
  'schedule.disable',
];
/** Delivered only to sessions whose retry contract covers the command's engine. */
export const RETRY_FAMILY: ReadonlySet<string> = new Set(['retry_task', 'bulk_retry']);
export const SCHEDULE_FIRE = 'schedule.fire';
export const COMMAND_STATUSES: readonly CommandStatus[] = ['pending', 'dispatched', 'completed', 'failed', 'timeout', 'cancelled', 'buffered', 'buffer_expired'];
export const TIMEOUT_ERROR = 'command timed out before agent responded';
const MAX_ACTION_CHARS = 80;
const MAX_KEY_CHARS = 200;
/** How svc's own idempotency keys start: a bulk job's retries (`bulk:<job>:<seq>`, bulk/service.ts), a schedule's
 * fires (`schedule:<id>:fire:<fire>`, schedules/service.ts), a scheduler stream's activation
 * (`schedule-activate:<agent>:...`, schedules/inventory.ts). The routes refuse them as a client's body key, which
 * could otherwise take the key of a command svc has yet to issue. */
export const INTERNAL_KEY_PREFIXES: readonly string[] = ['bulk:', 'schedule:', 'schedule-activate:'];

export const CommandStatusSchema = Type.Union(
  (['pending', 'dispatched', 'completed', 'failed', 'timeout', 'cancelled', 'buffered', 'buffer_expired'] as const).map((v) => Type.Literal(v)),
);
export const CommandPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    agent_id: Nullable(Uuid),
    issued_by: Nullable(Type.String()),
    action: Type.String(),
    target_type: Type.String(),
    target_id: Nullable(Type.String()),
    payload: AnyObject,
    status: CommandStatusSchema,
    result: Nullable(AnyObject),
    error: Nullable(Type.String()),
    idempotency_key: Nullable(Type.String()),
    issued_at: Timestamp,
    dispatched_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
    timeout_at: Nullable(Timestamp),
  },
  'CommandPublic',
);
export type CommandPublic = Static<typeof CommandPublic>;

export function toCommandPublic(r: CommandRow): CommandPublic {
  return {
    id: r.id,
    project_id: r.project_id,
    agent_id: r.agent_id,
    issued_by: r.issued_by,
    action: r.action,
    target_type: r.target_type,
    target_id: r.target_id,
    payload: r.payload,
    status: r.status,
    result: r.result ?? null,
    error: r.error,
    idempotency_key: r.idempotency_key,
    issued_at: r.issued_at,
    dispatched_at: r.dispatched_at,
    completed_at: r.completed_at,
    timeout_at: r.timeout_at,
  };
}

const nonEmpty = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

/** The engine a command needs: retry_task's `engine`, bulk_retry's `filter.engine`,
 * schedule.fire's `engine`, else an `engine` parameter if any. */
export function engineOf(action: string, payload: Record<string, unknown>): string | null {
  if (action === 'bulk_retry') {
    const filter = payload.filter;
    return typeof filter === 'object' && filter !== null ? nonEmpty((filter as Record<string, unknown>).engine) : null;
  }
  return nonEmpty(payload.engine);
}

export interface IssueCommandInput {
  projectId: string;
  /** The agent to deliver to. Required, except for schedule.fire, which is routed
   * to an online WebSocket agent advertising its engine (this one when it qualifies). */
  agentId?: string | null;
  action: string;
  targetType: string;
  targetId?: string | null;
  /** Sent to the agent as the frame's `parameters`. */
  payload?: Record<string, unknown>;
  /** 1..200 characters, unique per project: a repeat of the same command returns the existing one;
   * another command under the key is 409 idempotency_key_reused. */
  idempotencyKey?: string | null;
}

/** The command stored under an idempotency key, asked for again: returned when it is the same command
 * (action, target, payload; the agent may differ, as a bulk item re-issued after a restart is admitted
 * again), else 409 idempotency_key_reused, the code of the Idempotency-Key header: a key never answers
 * with another command while the one asked for is silently not issued. */
function repeatOf(prior: CommandRow, action: string, input: IssueCommandInput): CommandRow {
  const same =
    prior.action === action &&
    prior.target_type === input.targetType &&
    prior.target_id === (input.targetId ?? null) &&
    sortedJson(prior.payload) === sortedJson(input.payload ?? {});
  if (!same) throw keyReused(prior.idempotency_key!, 'idempotency_key');
  return prior;
}

const timeoutAt = (ctx: Pick<AppContext, 'config'>, fromMicros: number) => isoMicros(fromMicros + ctx.config.SVC_COMMAND_TIMEOUT_SECONDS * 1_000_000);

/** Picks the agent for a schedule.fire: online, connected over WebSocket, advertising the engine. */
async function fireTarget(ex: Executor, projectId: string, engine: string | null, preferred: string | null): Promise<string | null> {
  if (!engine) return null;
  const candidates = (await onlineAgentsOfProject(ex, projectId)).filter((a) => a.transport === 'ws' && a.engine_adapters.includes(engine));
  return (candidates.find((a) => a.id === preferred) ?? candidates[0])?.id ?? null;
}

/** Issues a command: the row and its `command.issue.<action>` audit row commit
 * together, then delivery is attempted at once in this process (a waiting poll
 * wakes, a connected WebSocket gets it pushed); other processes pick it up on
 * their next sweep. 404 when the agent is not a live agent of the project. */
export async function issueCommand(ctx: AppContext, input: IssueCommandInput, actor: Actor): Promise<CommandPublic> {
  const key = input.idempotencyKey ?? null;
  try {
    return toCommandPublic(await ctx.db.tx((tx) => issueCommandIn(ctx, tx, input, actor)));
  } catch (e) {
    // A concurrent issue with the same idempotency key won the unique index.
    const code = (rootCause(e) as { code?: string }).code;
    if (key !== null && (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE')) {
      const prior = await commandByKey(ctx.db, input.projectId, key);
      if (prior) return toCommandPublic(repeatOf(prior, input.action.trim(), input));
    }
    throw e;
  }
}

export interface IssueOptions {
  /** Write the `command.issue.<action>` audit row (default). Bulk jobs audit the job instead of each child. */
  audit?: boolean;
}

/** issueCommand inside the caller's transaction (the command commits with whatever else it writes);
 * the same command already stored under its idempotency key is returned instead (another is a 409). */
export async function issueCommandIn(ctx: AppContext, tx: Tx, input: IssueCommandInput, actor: Actor, opts: IssueOptions = {}): Promise<CommandRow> {
  const action = input.action.trim();
  const fields: { path: string; message: string }[] = [];
  if (action === '' || action.length > MAX_ACTION_CHARS) fields.push({ path: '/action', message: `must be a string of 1 to ${MAX_ACTION_CHARS} characters` });
  const key = input.idempotencyKey ?? null;
  if (key !== null && (key.length === 0 || key.length > MAX_KEY_CHARS)) {
    fields.push({ path: '/idempotency_key', message: `must be a string of 1 to ${MAX_KEY_CHARS} characters` });
  }
  if (action !== SCHEDULE_FIRE && !input.agentId) fields.push({ path: '/agent_id', message: 'is required' });
  if (fields.length > 0) throw validationFailed(fields);
  const payload = input.payload ?? {};
  const engine = engineOf(action, payload);

  const prior = key !== null ? await commandByKey(tx, input.projectId, key) : null;
  if (prior) return repeatOf(prior, action, input);
  let agentId: string | null = input.agentId ?? null;
  const micros = nowMicros();
  const now = isoMicros(micros);
  let status: CommandStatus = 'pending';
  let bufferExpiresAt: string | null = null;
  if (action === SCHEDULE_FIRE) {
    if (agentId !== null) {
      const agent = await findAgent(tx, agentId);
      if (!agent || agent.project_id !== input.projectId || agent.revoked_at !== null) throw notFound('agent');
    }
    agentId = await fireTarget(tx, input.projectId, engine, agentId);
    if (agentId === null) {
      status = 'buffered';
      bufferExpiresAt = isoMicros(micros + ctx.config.SVC_SCHEDULE_FIRE_BUFFER_SECONDS * 1_000_000);
    }
  }
  const row: CommandRow = {
    id: crypto.randomUUID(),
    project_id: input.projectId,
    agent_id: agentId,
    issued_by: actor.user_id ?? null,
    action,
    target_type: input.targetType,
    target_id: input.targetId ?? null,
    engine,
    payload,
    idempotency_key: key,
    status,
    result: null,
    error: null,
    issued_at: now,
    dispatched_at: null,
    last_sent_at: null,
    send_count: 0,
    acked_at: null,
    completed_at: null,
    timeout_at: status === 'pending' ? timeoutAt(ctx, micros) : null,
    buffer_expires_at: bufferExpiresAt,
    claimed_session: null,
    source_ip: actor.source_ip ?? null,
  };
  // Sent together: PostgreSQL pipelines them on the transaction's connection.
  // A directly addressed command's insert checks its agent in the same
  // statement; when that fails, the transaction rolls the audit row back.
  const [stored] = await Promise.all([
    action === SCHEDULE_FIRE || agentId === null ? insertCommand(tx, row).then(() => true) : insertCommandForLiveAgent(tx, { ...row, agent_id: agentId }),
    opts.audit === false
      ? null
      : ctx.audit.append(tx, {
          ...actor,
          action: `command.issue.${action}`,
          target_type: 'command',
          target_id: row.id,
          project_id: input.projectId,
          metadata: {
            agent_id: agentId,
            target_type: row.target_type,
            target_id: row.target_id,
            status,
            ...(key !== null ? { idempotency_key: key } : {}),
          },
        }),
  ]);
  if (!stored) throw notFound('agent');
  if (agentId !== null) tx.afterCommit(() => ctx.agentTransport.commandIssued(agentId));
  tx.afterCommit(() => ctx.reactions.commandsChanged?.(row.project_id, [row.id]));
  return row;
}

export const CommandPage = Answer({ items: Type.Array(CommandPublic), next_cursor: Nullable(Type.String()) }, 'CommandPage');
export type CommandPage = Static<typeof CommandPage>;

/** Commands of a project, newest first; `cursor` is `<issued_at>|<id>` from next_cursor. */
export async function listCommands(
  ex: Executor,
  projectId: string,
  opts: { status?: CommandStatus; cursor?: string | null; limit?: number } = {},
): Promise<CommandPage> {
  const limit = Math.min(Math.max(opts.limit ?? 50, 1), 500);
  let before: { issuedAt: string; id: string } | undefined;
  if (opts.cursor) {
    const [issuedAt, id] = opts.cursor.split('|');
    if (!issuedAt || !id) throw validationFailed([{ path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
    before = { issuedAt, id };
  }
  const rows = await commandsPage(ex, projectId, { ...(opts.status ? { status: opts.status } : {}), ...(before ? { before } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page.map(toCommandPublic), next_cursor: rows.length > limit && last ? `${last.issued_at}|${last.id}` : null };
}

/** The project of a command, or null (the live stream's notices of sweeps that know only ids). */
export const commandProjectOf = async (ex: Executor, commandId: string): Promise<string | null> => (await commandById(ex, commandId))?.project_id ?? null;

/** One command of the project; 404 otherwise. */
export async function getCommand(ex: Executor, projectId: string, commandId: string): Promise<CommandPublic> {
  const row = await commandById(ex, commandId);
  if (!row || row.project_id !== projectId) throw notFound('command');
  return toCommandPublic(row);
}

// --- driven by agents and time ---------------------------------------------------

/** command_ack: the command is dispatched and acknowledged. False for unknown or ended commands. */
export const recordCommandAck = (ex: Executor, agentId: string, commandId: string): Promise<boolean> =>
  markAcked(ex, agentId, commandId, nowIso());

const MAX_ERROR_CHARS = 8192;

/** command_result: success -> completed, failed -> failed. False for a late result
 * (the command already ended, e.g. timed out) or an unknown id. */
export async function recordCommandResult(
  ex: Executor,
  agentId: string,
  commandId: string,
  payload: { status: unknown; result?: unknown; error?: unknown },
): Promise<boolean> {
  const result = typeof payload.result === 'object' && payload.result !== null && !Array.isArray(payload.result) ? (payload.result as Record<string, unknown>) : null;
  const error = typeof payload.error === 'string' ? payload.error.slice(0, MAX_ERROR_CHARS) : null;
  return markResult(ex, agentId, commandId, { status: payload.status === 'success' ? 'completed' : 'failed', result, error }, nowIso());
}

/** Open commands past their timeout_at become `timeout`. */
export const timeOutCommands = (db: Db): Promise<string[]> => db.tx((tx) => timeOutExpired(tx, nowIso(), TIMEOUT_ERROR));

/** Buffered schedule.fire commands past SVC_SCHEDULE_FIRE_BUFFER_SECONDS become `buffer_expired`. */
export const expireBufferedFires = (db: Db): Promise<string[]> => db.tx((tx) => expireBuffered(tx, nowIso()));

/** Buffered schedule.fire commands an agent advertising `engines` in `projectId` can take now. */
export async function bufferedFiresFor(ex: Executor, projectId: string | null, engines: readonly string[], limit = 500): Promise<CommandRow[]> {
  if (engines.length === 0) return [];
  const rows = await bufferedCommands(ex, nowIso(), limit, projectId ?? undefined);
  return rows.filter((r) => r.action === SCHEDULE_FIRE && r.engine !== null && engines.includes(r.engine));
}

/** Routes one buffered fire to `agentId` (pending, with a fresh timeout); null when it was taken. */
export async function routeBufferedFire(ctx: Pick<AppContext, 'db' | 'config'>, commandId: string, agentId: string): Promise<CommandRow | null> {
  const micros = nowMicros();
  return ctx.db.tx((tx) => routeBuffered(tx, commandId, agentId, isoMicros(micros), timeoutAt(ctx, micros)));
}
