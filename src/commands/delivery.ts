// Handing commands to a transport session. Selection is in issued_at order;
// each row is claimed in its own transaction by a conditional update (the
// loser of a race simply skips the row) before it is signed. Retry-family
// commands go only to sessions whose retry contract covers their engine;
// dispatched rows are re-sent (long-poll only) for the redeliverable actions,
// inside the redispatch window and no more often than the minimum interval.
import type { Db, Executor } from '../db/connect.ts';
import { isoMicros, nowIso, nowMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import type { JsonInputObject } from '../transport/json-convert.ts';
import { REDELIVERABLE_ACTIONS, RETRY_FAMILY } from './service.ts';
import { agentsWithPending, claimPending, claimResend, failOpen, pendingOf, quietPassOf, redispatchableOf, type CommandRow } from './store.ts';

/** Agents cap command timeouts at one hour (their frame model). */
const MAX_WIRE_TIMEOUT_SECONDS = 3600;
/** Rows looked at per pass: more than one poll's max_frames can use, so skipped rows do not starve the rest. */
const CANDIDATES = 500;

export interface ClaimOptions {
  agentId: string;
  max: number;
  /** Engines this session's retry contract covers. */
  retryEngines: ReadonlySet<string>;
  /** Recorded on claimed rows (`ws:<session id>`, `lp:<nonce digest>`). */
  session: string;
  /** Long-poll only: re-send dispatched redeliverable commands. */
  redispatch?: { windowSeconds: number; minIntervalSeconds: number };
  /** Awaited after the candidates are read and before anything is claimed; false claims nothing.
   * Lets a caller re-validate the agent while the first read is under way. */
  gate?: Promise<boolean>;
}

/** One conditional UPDATE as its own transaction: on PostgreSQL a single
 * autocommitted statement (one round trip instead of three); SQLite writes
 * always go through the writer connection's transaction. */
const singleStatement = <T>(db: Db, fn: (ex: Executor) => Promise<T>): Promise<T> => (db.dialect === 'postgres' ? fn(db) : db.tx(fn));

/** A retry that carries both halves of the arguments to run replays nothing by reference: the
 * agent submits the task by name (z4j's lowering for engines without a native retry), so it needs
 * no retry contract (docs/spec-deviations.md). */
const carriesArguments = (row: CommandRow): boolean =>
  row.action === 'retry_task' && row.payload.override_args != null && row.payload.override_kwargs != null;

const deliverable = (row: CommandRow, retryEngines: ReadonlySet<string>): boolean =>
  !RETRY_FAMILY.has(row.action) || carriesArguments(row) || (row.engine !== null && retryEngines.has(row.engine));

/** Claims up to `max` commands for a session, oldest first. */
export async function claimCommands(db: Db, opts: ClaimOptions): Promise<CommandRow[]> {
  const claimed: CommandRow[] = [];
  if (opts.max <= 0) return claimed;
  // Both reads go out at once (on PostgreSQL, on two pooled connections): a
  // woken poll answers a round trip sooner. Rows claimed below were pending
  // when read, so they are not among the re-send candidates.
  const [pending, resendable] = await Promise.all([pendingOf(db, opts.agentId, CANDIDATES), opts.redispatch ? resendCandidates(db, opts.agentId, opts.redispatch) : null]);
  if (opts.gate && !(await opts.gate)) return claimed;
  for (const row of pending) {
    if (claimed.length >= opts.max) return claimed;
    if (!deliverable(row, opts.retryEngines)) continue;
    const won = await singleStatement(db, (ex) => claimPending(ex, row.id, opts.session, nowIso()));
    if (won) claimed.push(won);
  }
  for (const row of resendable?.rows ?? []) {
    if (claimed.length >= opts.max) break;
    const again = await singleStatement(db, (ex) => claimResend(ex, row.id, resendable!.before, nowIso()));
    if (again) claimed.push(again);
  }
  return claimed;
}

/** The redispatch window's cutoffs, from the clock on every pass. */
function resendCutoffs(redispatch: NonNullable<ClaimOptions['redispatch']>): { since: string; before: string } {
  const micros = nowMicros();
  return { since: isoMicros(micros - redispatch.windowSeconds * 1_000_000), before: isoMicros(micros - redispatch.minIntervalSeconds * 1_000_000) };
}

/** Dispatched redeliverable rows due a re-send. */
async function resendCandidates(db: Db, agentId: string, redispatch: NonNullable<ClaimOptions['redispatch']>): Promise<{ rows: CommandRow[]; before: string }> {
  const { since, before } = resendCutoffs(redispatch);
  return { rows: await redispatchableOf(db, agentId, REDELIVERABLE_ACTIONS, since, before, CANDIDATES), before };
}

/** A waiting long-poll's re-check when nothing woke it: the agent's standing, and whether a claiming
 * pass (claimCommands) would find anything, in one statement. Null when the agent row is gone. */
export async function quietPass(
  db: Db,
  agentId: string,
  redispatch: NonNullable<ClaimOptions['redispatch']>,
): Promise<{ revoked: boolean; projectActive: boolean; work: boolean } | null> {
  const { since, before } = resendCutoffs(redispatch);
  return quietPassOf(db, agentId, REDELIVERABLE_ACTIONS, since, before);
}

/** Whether any of `agentIds` has a pending command (cross-process delivery sweep). */
export const agentsWithPendingCommands = (db: Db, agentIds: string[]): Promise<string[]> => agentsWithPending(db, agentIds);

/** The signed `command` frame's payload for a claimed row. */
export function commandFramePayload(ctx: Pick<AppContext, 'config'>, row: CommandRow): JsonInputObject {
  const filter = row.payload.filter;
  const filterEngine =
    typeof filter === 'object' && filter !== null && typeof (filter as Record<string, unknown>).engine === 'string'
      ? ((filter as Record<string, unknown>).engine as string)
      : '';
  const target: Record<string, string | null> = { type: row.target_type, id: row.target_id };
  if (filterEngine !== '') target.engine = filterEngine;
  // Scheduler controls name their adapter (agents with several scheduler adapters pick it from target.scheduler).
  if (row.target_type === 'schedule' && typeof row.payload.scheduler === 'string') target.scheduler = row.payload.scheduler;
  return {
    action: row.action,
    target,
    parameters: row.payload as JsonInputObject,
    timeout_seconds: Math.min(ctx.config.SVC_COMMAND_TIMEOUT_SECONDS, MAX_WIRE_TIMEOUT_SECONDS),
    issued_by: row.issued_by,
    delivery_claim_token: null,
  };
}

export const LONGPOLL_SIGN_FAILED = 'longpoll sign failed';

/** A claimed command whose frame could not be signed ends as failed with `reason`. */
export const failUnsignable = (db: Db, commandId: string, reason: string): Promise<boolean> =>
  db.tx((tx) => failOpen(tx, commandId, reason, nowIso()));
