// Queries of the commands table. Every state change is a conditional UPDATE
// on the expected current state, so concurrent claimers (two polls, two
// processes) never both win a row.
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, or, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { commands, type CommandStatus } from './tables.ts';

export type CommandRow = typeof import('./tables.ts').commands.sqlite.$inferSelect;

// The delivery path (issue, pending, claim) runs as fixed statements through
// query(): an issued command reaches its agent a few round trips after the
// call, and drizzle's builder cost more CPU than those round trips.

const COLUMNS = Object.keys(commands.sqlite) as (keyof CommandRow)[];
const JSON_COLUMNS: ReadonlySet<string> = new Set(['payload', 'result']);

/** A commands row read through query(): SQLite hands JSON columns back as text. */
function commandRow(r: Record<string, unknown>): CommandRow {
  for (const c of JSON_COLUMNS) if (typeof r[c] === 'string') r[c] = JSON.parse(r[c] as string);
  return r as unknown as CommandRow;
}

// INSERT ... SELECT leaves PostgreSQL no target type for its parameters (they
// would be text), so the non-text columns are cast.
const PG_TYPES: Readonly<Record<string, string>> = { payload: 'jsonb', result: 'jsonb', send_count: 'integer' };
const insertText = (dialect: 'sqlite' | 'postgres') =>
  `INSERT INTO commands (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map((c) => (dialect === 'postgres' && PG_TYPES[c] ? `CAST(? AS ${PG_TYPES[c]})` : '?')).join(', ')}`;
const LIVE_AGENT = ' WHERE EXISTS (SELECT 1 FROM agents WHERE id = ? AND project_id = ? AND revoked_at IS NULL)';
const INSERT = { sqlite: insertText('sqlite'), postgres: insertText('postgres') };
const INSERT_FOR_AGENT = { sqlite: INSERT.sqlite + LIVE_AGENT + ' RETURNING id', postgres: INSERT.postgres + LIVE_AGENT + ' RETURNING id' };

const insertParams = (row: CommandRow): unknown[] =>
  COLUMNS.map((c) => (JSON_COLUMNS.has(c) ? (row[c] === null ? null : JSON.stringify(row[c])) : row[c]));

export async function insertCommand(ex: Executor, row: CommandRow): Promise<void> {
  await ex.query(INSERT[ex.dialect], insertParams(row));
}

/** Inserts the row only if its agent is a live agent of its project, checked in
 * the same statement; false (nothing stored) when it is not. */
export async function insertCommandForLiveAgent(ex: Executor, row: CommandRow & { agent_id: string }): Promise<boolean> {
  const rows = await ex.query(INSERT_FOR_AGENT[ex.dialect], [...insertParams(row), row.agent_id, row.project_id]);
  return rows.length === 1;
}

export async function commandById(ex: Executor, id: string): Promise<CommandRow | null> {
  const t = ex.t.commands;
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}

export async function commandByKey(ex: Executor, projectId: string, key: string): Promise<CommandRow | null> {
  const t = ex.t.commands;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.idempotency_key, key))))[0] ?? null;
}

/** Newest first, keyset on (issued_at, id). */
export async function commandsPage(
  ex: Executor,
  projectId: string,
  opts: { status?: CommandStatus; before?: { issuedAt: string; id: string }; limit: number },
): Promise<CommandRow[]> {
  const t = ex.t.commands;
  const conds = [eq(t.project_id, projectId)];
  if (opts.status) conds.push(eq(t.status, opts.status));
  if (opts.before) {
    conds.push(or(lt(t.issued_at, opts.before.issuedAt), and(eq(t.issued_at, opts.before.issuedAt), lt(t.id, opts.before.id)))!);
  }
  return ex.q
    .select()
    .from(t)
    .where(and(...conds))
    .orderBy(desc(t.issued_at), desc(t.id))
    .limit(opts.limit);
}

// Bulk jobs' children (keyed bulk:<job>:<seq>) first, as the spec's poll rule 3 has durable bulk-retry
// children claimed first: a job keeps at most a few in flight, and these then wait behind nothing. An
// agent's pending rows are few, so sorting them all is cheap.
const PENDING = `SELECT * FROM commands WHERE agent_id = ? AND status = 'pending'
  ORDER BY CASE WHEN idempotency_key LIKE 'bulk:%' THEN 0 ELSE 1 END, issued_at, id LIMIT ?`;

/** Pending commands of an agent: bulk jobs' children first, then oldest issued first. */
export async function pendingOf(ex: Executor, agentId: string, limit: number): Promise<CommandRow[]> {
  return (await ex.query(PENDING, [agentId, limit])).map(commandRow);
}

/** Dispatched commands of `actions` inside the redispatch window whose last send is old enough. */
export async function redispatchableOf(
  ex: Executor,
  agentId: string,
  actions: readonly string[],
  dispatchedSince: string,
  lastSentBefore: string,
  limit: number,
): Promise<CommandRow[]> {
  const t = ex.t.commands;
  return ex.q
    .select()
    .from(t)
    .where(
      and(
        eq(t.agent_id, agentId),
        eq(t.status, 'dispatched'),
        inArray(t.action, [...actions]),
        gte(t.dispatched_at, dispatchedSince),
        lte(t.last_sent_at, lastSentBefore),
      ),
    )
    .orderBy(asc(t.issued_at), asc(t.id))
    .limit(limit);
}

/** For a long-poll re-check after a quiet wait, in one statement: the agent's standing (as
 * agents/store agentStanding reads it) and whether it has a pending command or one due a re-send
 * (as pendingOf / redispatchableOf select them). Null when the agent row is gone. Most re-checks
 * find nothing: one round trip instead of the three a full pass takes. */
export async function quietPassOf(
  ex: Executor,
  agentId: string,
  actions: readonly string[],
  dispatchedSince: string,
  lastSentBefore: string,
): Promise<{ revoked: boolean; projectActive: boolean; work: boolean } | null> {
  const rows = await ex.query<{ revoked: unknown; active: unknown; pending: unknown; resend: unknown }>(
    `SELECT a.revoked_at IS NOT NULL AS revoked, p.is_active AND p.archived_at IS NULL AS active,
       EXISTS (SELECT 1 FROM commands WHERE agent_id = a.id AND status = 'pending') AS pending,
       EXISTS (SELECT 1 FROM commands WHERE agent_id = a.id AND status = 'dispatched' AND action IN (${actions.map(() => '?').join(', ')})
         AND dispatched_at >= ? AND last_sent_at <= ?) AS resend
     FROM agents a JOIN projects p ON p.id = a.project_id WHERE a.id = ?`,
    [...actions, dispatchedSince, lastSentBefore, agentId],
  );
  const r = rows[0];
  // SQLite answers 1/0, PostgreSQL true/false.
  return r ? { revoked: Boolean(r.revoked), projectActive: Boolean(r.active), work: Boolean(r.pending) || Boolean(r.resend) } : null;
}

/** pending -> dispatched for one row; null when another claimer won it. */
const CLAIM =
  `UPDATE commands SET status = 'dispatched', dispatched_at = ?, last_sent_at = ?, send_count = send_count + 1, claimed_session = ? ` +
  `WHERE id = ? AND status = 'pending' RETURNING *`;

export async function claimPending(ex: Executor, id: string, session: string, now: string): Promise<CommandRow | null> {
  const [row] = await ex.query(CLAIM, [now, now, session, id]);
  return row ? commandRow(row) : null;
}

/** A re-send of a dispatched row, if its last send is still older than `lastSentBefore`. */
export async function claimResend(ex: Executor, id: string, lastSentBefore: string, now: string): Promise<CommandRow | null> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ last_sent_at: now, send_count: sql`${t.send_count} + 1` })
    .where(and(eq(t.id, id), eq(t.status, 'dispatched'), lte(t.last_sent_at, lastSentBefore)))
    .returning();
  return rows[0] ?? null;
}

/** Ends an open command as failed (signing failure, refusal); false when it was no longer open. */
export async function failOpen(ex: Executor, id: string, error: string, now: string): Promise<boolean> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ status: 'failed', error, completed_at: now })
    .where(and(eq(t.id, id), inArray(t.status, ['pending', 'dispatched'])))
    .returning({ id: t.id });
  return rows.length === 1;
}

/** command_ack: acknowledged (and dispatched, if it was still pending). Idempotent. */
export async function markAcked(ex: Executor, agentId: string, id: string, now: string): Promise<boolean> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({
      status: 'dispatched',
      acked_at: sql`COALESCE(${t.acked_at}, ${now})`,
      dispatched_at: sql`COALESCE(${t.dispatched_at}, ${now})`,
      last_sent_at: sql`COALESCE(${t.last_sent_at}, ${now})`,
    })
    .where(and(eq(t.id, id), eq(t.agent_id, agentId), inArray(t.status, ['pending', 'dispatched'])))
    .returning({ id: t.id });
  return rows.length === 1;
}

/** command_result on an open command; false for late results (already ended) and foreign ids. */
export async function markResult(
  ex: Executor,
  agentId: string,
  id: string,
  outcome: { status: 'completed' | 'failed'; result: Record<string, unknown> | null; error: string | null },
  now: string,
): Promise<boolean> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ status: outcome.status, result: outcome.result, error: outcome.error, completed_at: now, acked_at: sql`COALESCE(${t.acked_at}, ${now})` })
    .where(and(eq(t.id, id), eq(t.agent_id, agentId), inArray(t.status, ['pending', 'dispatched'])))
    .returning({ id: t.id });
  return rows.length === 1;
}

export async function timeOutExpired(ex: Executor, now: string, error: string): Promise<string[]> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ status: 'timeout', error, completed_at: now })
    .where(and(inArray(t.status, ['pending', 'dispatched']), lt(t.timeout_at, now)))
    .returning({ id: t.id });
  return rows.map((r) => r.id);
}

export async function expireBuffered(ex: Executor, now: string): Promise<string[]> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ status: 'buffer_expired', completed_at: now, error: 'no online agent advertised the engine before the buffer time ran out' })
    .where(and(eq(t.status, 'buffered'), lte(t.buffer_expires_at, now)))
    .returning({ id: t.id });
  return rows.map((r) => r.id);
}

/** Buffered commands still in their buffer time, oldest first (optionally of one project). */
export async function bufferedCommands(ex: Executor, now: string, limit: number, projectId?: string): Promise<CommandRow[]> {
  const t = ex.t.commands;
  const conds = [eq(t.status, 'buffered'), gt(t.buffer_expires_at, now)];
  if (projectId) conds.push(eq(t.project_id, projectId));
  return ex.q
    .select()
    .from(t)
    .where(and(...conds))
    .orderBy(asc(t.issued_at), asc(t.id))
    .limit(limit);
}

/** buffered -> pending for `agentId`; null when another agent took it or it expired. */
export async function routeBuffered(ex: Executor, id: string, agentId: string, now: string, timeoutAt: string): Promise<CommandRow | null> {
  const t = ex.t.commands;
  const rows = await ex.q
    .update(t)
    .set({ status: 'pending', agent_id: agentId, timeout_at: timeoutAt, buffer_expires_at: null })
    .where(and(eq(t.id, id), eq(t.status, 'buffered'), gt(t.buffer_expires_at, now)))
    .returning();
  return rows[0] ?? null;
}

/** Of `agentIds`, those with at least one pending command. */
export async function agentsWithPending(ex: Executor, agentIds: string[]): Promise<string[]> {
  if (agentIds.length === 0) return [];
  const t = ex.t.commands;
  const rows = await ex.q
    .selectDistinct({ agent_id: t.agent_id })
    .from(t)
    .where(and(eq(t.status, 'pending'), inArray(t.agent_id, agentIds)));
  return rows.map((r) => r.agent_id).filter((id): id is string => id !== null);
}
