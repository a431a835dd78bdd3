// Queries of agents, their worker inventory and health samples, for both dialects.
import { and, desc, eq, inArray, isNull, lt, ne, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import type { AgentState } from './tables.ts';

export type AgentRow = typeof import('./tables.ts').agents.sqlite.$inferSelect;
export type AgentWorkerRow = typeof import('./tables.ts').agentWorkers.sqlite.$inferSelect;
export type HealthSampleRow = typeof import('./tables.ts').agentHealthSamples.sqlite.$inferSelect;

/** A live agent with the state of its project, as the transports authenticate it. */
export interface AgentAuthRow {
  agent: AgentRow;
  projectActive: boolean;
}

export async function insertAgent(ex: Executor, row: AgentRow): Promise<void> {
  await ex.q.insert(ex.t.agents).values(row);
}

export async function agentById(ex: Executor, id: string): Promise<AgentRow | null> {
  const t = ex.t.agents;
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}

export async function liveAgentByName(ex: Executor, projectId: string, name: string): Promise<AgentRow | null> {
  const t = ex.t.agents;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.name, name), isNull(t.revoked_at))))[0] ?? null;
}

export async function tombstonesNamed(ex: Executor, projectId: string, name: string): Promise<AgentRow[]> {
  const t = ex.t.agents;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.project_id, projectId), eq(t.name, name), sql`${t.revoked_at} IS NOT NULL`));
}

export async function renameAgent(ex: Executor, id: string, name: string, now: string): Promise<void> {
  const t = ex.t.agents;
  await ex.q.update(t).set({ name, updated_at: now }).where(eq(t.id, id));
}

export async function liveAgentsOf(ex: Executor, projectId: string): Promise<AgentRow[]> {
  const t = ex.t.agents;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.project_id, projectId), isNull(t.revoked_at)))
    .orderBy(desc(t.created_at), desc(t.id));
}

/** The live agent one of `hashes` belongs to, with its project's state. */
export async function liveAgentByTokenHash(ex: Executor, hashes: string[]): Promise<AgentAuthRow | null> {
  const a = ex.t.agents;
  const p = ex.t.projects;
  const rows = await ex.q
    .select({ agent: a, is_active: p.is_active, archived_at: p.archived_at })
    .from(a)
    .innerJoin(p, eq(p.id, a.project_id))
    .where(and(inArray(a.token_hash, hashes), isNull(a.revoked_at)))
    .limit(1);
  const r = rows[0];
  return r ? { agent: r.agent, projectActive: r.is_active && r.archived_at === null } : null;
}

/** Whether an agent is still live and its project active (re-validation in long waits). */
export async function agentStanding(ex: Executor, agentId: string): Promise<{ revoked: boolean; projectActive: boolean } | null> {
  const a = ex.t.agents;
  const p = ex.t.projects;
  const rows = await ex.q
    .select({ revoked_at: a.revoked_at, is_active: p.is_active, archived_at: p.archived_at })
    .from(a)
    .innerJoin(p, eq(p.id, a.project_id))
    .where(eq(a.id, agentId));
  const r = rows[0];
  return r ? { revoked: r.revoked_at !== null, projectActive: r.is_active && r.archived_at === null } : null;
}

/** Inside an ingest transaction: is the agent still live? On PostgreSQL the row
 * is share-locked, so a concurrent revoke waits for this transaction (and a
 * committed one is seen): revocation and in-flight frames are serialised.
 * SQLite transactions are serialised already. */
export async function lockLiveAgent(ex: Executor, agentId: string): Promise<boolean> {
  const rows =
    ex.dialect === 'postgres'
      ? await ex.all<{ id: string }>(sql`SELECT id FROM agents WHERE id = ${agentId} AND revoked_at IS NULL FOR SHARE`)
      : await ex.all<{ id: string }>(sql`SELECT id FROM agents WHERE id = ${agentId} AND revoked_at IS NULL`);
  return rows.length === 1;
}

/** Tombstones the agent: token hash overwritten, state offline. False when it was not live. */
export async function markRevoked(ex: Executor, projectId: string, agentId: string, tombstoneHash: string, now: string): Promise<boolean> {
  const t = ex.t.agents;
  const rows = await ex.q
    .update(t)
    .set({ revoked_at: now, token_hash: tombstoneHash, state: 'offline', updated_at: now })
    .where(and(eq(t.id, agentId), eq(t.project_id, projectId), isNull(t.revoked_at)))
    .returning({ id: t.id });
  return rows.length === 1;
}

export async function updateAgent(ex: Executor, id: string, changes: Partial<AgentRow>): Promise<boolean> {
  const t = ex.t.agents;
  const rows = await ex.q
    .update(t)
    .set(changes)
    .where(and(eq(t.id, id), isNull(t.revoked_at)))
    .returning({ id: t.id });
  return rows.length === 1;
}

/** Promotes a live agent that was not online; true when it changed (it came online). */
export async function promoteOnline(ex: Executor, id: string, now: string): Promise<boolean> {
  const t = ex.t.agents;
  const rows = await ex.q
    .update(t)
    .set({ last_seen_at: now, state: 'online' })
    .where(and(eq(t.id, id), isNull(t.revoked_at), ne(t.state, 'online')))
    .returning({ id: t.id });
  return rows.length === 1;
}

/** `id IN (...)` over a JSON array of ids passed as one parameter: one statement text (prepared once
 * per connection) whatever the number of agents. */
const idsIn = (ex: Executor) => (ex.dialect === 'postgres' ? 'id IN (SELECT jsonb_array_elements_text(?::jsonb))' : 'id IN (SELECT value FROM json_each(?))');

/** Liveness of many agents at once (transports' frames gathered by agents/pulse.ts): bumps
 * last_seen_at of the live ones and promotes those not online. Returns the live ones and those
 * that came online. Two statements whatever the number of agents; each row is written once. */
export async function touchAgents(ex: Executor, ids: string[], now: string): Promise<{ live: Set<string>; cameOnline: Set<string> }> {
  const list = JSON.stringify(ids);
  const seen = await ex.query<{ id: string }>(`UPDATE agents SET last_seen_at = ? WHERE ${idsIn(ex)} AND revoked_at IS NULL AND state = 'online' RETURNING id`, [now, list]);
  const promoted = await ex.query<{ id: string }>(
    `UPDATE agents SET state = 'online', last_seen_at = ? WHERE ${idsIn(ex)} AND revoked_at IS NULL AND state <> 'online' RETURNING id`,
    [now, list],
  );
  const cameOnline = new Set(promoted.map((r) => r.id));
  return { live: new Set([...seen.map((r) => r.id), ...cameOnline]), cameOnline };
}

/** Of `ids`, the live agents; inside a write transaction on PostgreSQL their rows are
 * share-locked as lockLiveAgent does (a concurrent revoke waits for the transaction). */
export async function lockLiveAgents(ex: Executor, ids: string[]): Promise<Set<string>> {
  const lock = ex.dialect === 'postgres' ? ' FOR SHARE' : '';
  const rows = await ex.query<{ id: string }>(`SELECT id FROM agents WHERE ${idsIn(ex)} AND revoked_at IS NULL${lock}`, [JSON.stringify(ids)]);
  return new Set(rows.map((r) => r.id));
}

/** Online agents not heard from since `cutoff` become offline; returns their ids. */
export async function markStaleOffline(ex: Executor, cutoff: string, now: string): Promise<string[]> {
  const t = ex.t.agents;
  const rows = await ex.q
    .update(t)
    .set({ state: 'offline', updated_at: now })
    .where(and(eq(t.state, 'online'), lt(t.last_seen_at, cutoff)))
    .returning({ id: t.id });
  return rows.map((r) => r.id);
}

export async function onlineCounts(ex: Executor): Promise<{ project: string; n: number }[]> {
  return ex.all<{ project: string; n: number }>(sql`
    SELECT p.slug AS project, COUNT(*) AS n FROM agents a JOIN projects p ON p.id = a.project_id
    WHERE a.state = ${'online' satisfies AgentState} AND a.revoked_at IS NULL GROUP BY p.slug`);
}

/** Online live agents of a project (routing by advertised engine). */
export async function onlineAgentsOf(ex: Executor, projectId: string): Promise<AgentRow[]> {
  const t = ex.t.agents;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.project_id, projectId), eq(t.state, 'online'), isNull(t.revoked_at)))
    .orderBy(desc(t.last_seen_at));
}

/** Of `ids`, those that are revoked (or gone). */
export async function revokedAmong(ex: Executor, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const t = ex.t.agents;
  const live = await ex.q
    .select({ id: t.id })
    .from(t)
    .where(and(inArray(t.id, ids), isNull(t.revoked_at)));
  const liveIds = new Set(live.map((r) => r.id));
  return ids.filter((id) => !liveIds.has(id));
}

export async function upsertAgentWorker(ex: Executor, row: AgentWorkerRow): Promise<void> {
  const t = ex.t.agentWorkers;
  await ex.q
    .insert(t)
    .values(row)
    .onConflictDoUpdate({
      target: [t.agent_id, t.worker_id],
      set: {
        role: row.role,
        framework: row.framework,
        pid: row.pid,
        started_at: row.started_at,
        state: 'online',
        last_seen_at: row.last_seen_at,
        last_connect_at: row.last_connect_at,
        updated_at: row.updated_at,
      },
    });
}

export async function setAgentWorkerState(ex: Executor, agentId: string, workerId: string, state: 'online' | 'offline', now: string): Promise<void> {
  const t = ex.t.agentWorkers;
  await ex.q
    .update(t)
    .set({ state, last_seen_at: now, updated_at: now })
    .where(and(eq(t.agent_id, agentId), eq(t.worker_id, workerId)));
}

export async function agentWorkersOf(ex: Executor, agentId: string): Promise<AgentWorkerRow[]> {
  const t = ex.t.agentWorkers;
  return ex.q.select().from(t).where(eq(t.agent_id, agentId)).orderBy(desc(t.last_connect_at));
}

/** Inserts samples in one statement, skipping frames stored before (re-sent after a reconnect);
 * returns the keys (sampleKey) of the rows inserted. */
export async function insertHealthSamples(ex: Executor, rows: HealthSampleRow[]): Promise<Set<string>> {
  const t = ex.t.agentHealthSamples;
  const inserted = await ex.q
    .insert(t)
    .values(rows)
    .onConflictDoNothing({ target: [t.agent_id, t.frame_id] })
    .returning({ agent_id: t.agent_id, frame_id: t.frame_id });
  return new Set(inserted.map((r) => sampleKey(r)));
}

export const sampleKey = (row: { agent_id: string; frame_id: string }): string => `${row.agent_id}\u0000${row.frame_id}`;

export async function healthSamplesOf(ex: Executor, agentId: string, limit: number): Promise<HealthSampleRow[]> {
  const t = ex.t.agentHealthSamples;
  return ex.q
    .select()
    .from(t)
    .where(eq(t.agent_id, agentId))
    .orderBy(desc(t.captured_at), desc(t.id))
    .limit(limit);
}

export async function pruneHealthSamples(ex: Executor, receivedBefore: string, batch: number): Promise<number> {
  const rows = await ex.all<{ id: string }>(sql`
    DELETE FROM agent_health_samples WHERE id IN
      (SELECT id FROM agent_health_samples WHERE received_at < ${receivedBefore} LIMIT ${batch})
    RETURNING id`);
  return rows.length;
}
