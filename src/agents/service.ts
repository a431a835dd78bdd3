// Agents: minting (token and hmac_secret returned once), revocation into a
// tombstone, the public view, health history, token verification, and the
// liveness and hello bookkeeping the transports report.
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../auth/actor.ts';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import type { Db, Executor } from '../db/connect.ts';
import { conflict, notFound, validationFailed } from '../http/errors.ts';
import { nowIso } from '../lib/clock.ts';
import { randomToken } from '../lib/crypto.ts';
import { rootCause } from '../lib/errors.ts';
import type { AppContext } from '../server/context.ts';
import { agentTokenHash, agentTokenHashes, deriveProjectSecret, hmacSecretText, matchAgentToken, mintAgentToken } from '../transport/credentials.ts';
import {
  agentById,
  agentStanding,
  healthSamplesOf,
  insertAgent,
  liveAgentByName,
  liveAgentByTokenHash,
  liveAgentsOf,
  lockLiveAgent,
  markRevoked,
  markStaleOffline,
  onlineAgentsOf,
  onlineCounts,
  pruneHealthSamples,
  renameAgent,
  revokedAmong,
  setAgentWorkerState,
  tombstonesNamed,
  promoteOnline,
  updateAgent,
  upsertAgentWorker,
  type AgentRow,
  type HealthSampleRow,
} from './store.ts';
import { storeSample, touchLiveness, type SampleOutcome } from './pulse.ts';
import type { AgentMetadata } from './tables.ts';

export type { AgentRow };

/** The protocol this service speaks (frame `v` 2, handshake "2"). */
export const CURRENT_PROTOCOL_VERSION = '2';
export const MAX_AGENT_NAME_CHARS = 200;
export const HEALTH_SAMPLES_SHOWN = 100;
/** Tombstones whose name is minted again are renamed into this namespace; live names may not use it. */
export const RESERVED_NAME_PREFIX = '~revoked:';

export const AgentPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    name: Type.String(),
    state: Type.String({ description: 'online, offline, or unknown until the first connection' }),
    protocol_version: Type.String(),
    framework_adapter: Type.String(),
    engine_adapters: Type.Array(Type.String()),
    scheduler_adapters: Type.Array(Type.String()),
    capabilities: Type.Record(Type.String(), Type.Array(Type.String())),
    last_seen_at: Nullable(Timestamp),
    last_connect_at: Nullable(Timestamp),
    created_at: Timestamp,
    is_outdated: Type.Boolean(),
  },
  'AgentPublic',
);
export type AgentPublic = Static<typeof AgentPublic>;

export const AgentMintResponse = Answer(
  {
    agent: AgentPublic,
    token: Type.String({ description: '43 URL-safe base64 characters; shown once, only its hash is stored' }),
    hmac_secret: Type.String({ description: "URL-safe base64 of the project's 32-byte frame signing key; derived, never stored" }),
  },
  'AgentMintResponse',
);
export type AgentMintResponse = Static<typeof AgentMintResponse>;

export const AgentHealthSample = Answer(
  { id: Uuid, captured_at: Timestamp, worker_id: Type.String(), telemetry_loss: Nullable(AnyObject) },
  'AgentHealthSample',
);
export type AgentHealthSample = Static<typeof AgentHealthSample>;

/** Dotted numeric versions compared part by part; anything unparseable is not "older". */
function olderThan(version: string, current: string): boolean {
  const parse = (v: string) => (/^\d+(\.\d+)*$/.test(v) ? v.split('.').map(Number) : null);
  const a = parse(version);
  const b = parse(current)!;
  if (!a) return false;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

export function toAgentPublic(row: AgentRow): AgentPublic {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    state: row.state,
    protocol_version: row.protocol_version,
    framework_adapter: row.framework_adapter,
    engine_adapters: row.engine_adapters,
    scheduler_adapters: row.scheduler_adapters,
    capabilities: row.capabilities,
    last_seen_at: row.last_seen_at,
    last_connect_at: row.last_connect_at,
    created_at: row.created_at,
    is_outdated: row.last_connect_at !== null && row.protocol_version !== '' && olderThan(row.protocol_version, CURRENT_PROTOCOL_VERSION),
  };
}

const mastersOf = (ctx: Pick<AppContext, 'config'>) => ({ current: ctx.config.SVC_SECRET, previous: ctx.config.SVC_PREVIOUS_SECRETS });

/** The project's frame signing key from the current master (what hmac_secret encodes). */
export const projectSigningKey = (ctx: Pick<AppContext, 'config'>, projectId: string): Buffer =>
  deriveProjectSecret(ctx.config.SVC_SECRET, projectId);

// --- management (called by the project routes) --------------------------------

/** Live agents of a project, newest first; tombstones are hidden. */
export async function listAgents(ex: Executor, projectId: string): Promise<AgentPublic[]> {
  return (await liveAgentsOf(ex, projectId)).map(toAgentPublic);
}

async function liveAgentOf(ex: Executor, projectId: string, agentId: string): Promise<AgentRow> {
  const row = await agentById(ex, agentId);
  if (!row || row.project_id !== projectId || row.revoked_at !== null) throw notFound('agent');
  return row;
}

/** One live agent of the project; 404 for revoked agents and agents of other projects. */
export async function getAgent(ex: Executor, projectId: string, agentId: string): Promise<AgentPublic> {
  return toAgentPublic(await liveAgentOf(ex, projectId, agentId));
}

/** Mints an agent: 409 `conflict` when a live agent of the project has the name.
 * A tombstone holding the name is moved into the reserved namespace first. */
export async function mintAgent(ctx: AppContext, projectId: string, name: string, actor: Actor): Promise<AgentMintResponse> {
  const clean = name.trim();
  if (clean === '' || clean.length > MAX_AGENT_NAME_CHARS) {
    throw validationFailed([{ path: '/name', message: `must be a string of 1 to ${MAX_AGENT_NAME_CHARS} characters` }]);
  }
  if (clean.startsWith(RESERVED_NAME_PREFIX)) {
    throw validationFailed([{ path: '/name', message: `must not start with ${RESERVED_NAME_PREFIX} (reserved for revoked agents)` }]);
  }
  const token = mintAgentToken();
  const hmacSecret = hmacSecretText(projectSigningKey(ctx, projectId));
  const tokenHash = agentTokenHash(ctx.config.SVC_SECRET, token);
  const duplicate = () => conflict(`an agent named ${clean} exists in this project`, { field: 'name' });
  try {
    const row = await ctx.db.tx(async (tx) => {
      if (await liveAgentByName(tx, projectId, clean)) throw duplicate();
      const now = nowIso();
      for (const tomb of await tombstonesNamed(tx, projectId, clean)) {
        await renameAgent(tx, tomb.id, `${RESERVED_NAME_PREFIX}${tomb.id}:${clean}`, now);
      }
      const agent: AgentRow = {
        id: crypto.randomUUID(),
        project_id: projectId,
        name: clean,
        token_hash: tokenHash,
        state: 'unknown',
        transport: null,
        protocol_version: '',
        framework_adapter: '',
        engine_adapters: [],
        scheduler_adapters: [],
        capabilities: {},
        runtime_features: [],
        metadata: {},
        last_seen_at: null,
        last_connect_at: null,
        created_at: now,
        updated_at: now,
        revoked_at: null,
      };
      await insertAgent(tx, agent);
      await ctx.audit.append(tx, {
        ...actor,
        action: 'agent.token.minted',
        target_type: 'agent',
        target_id: agent.id,
        project_id: projectId,
        metadata: { name: clean },
      });
      return agent;
    });
    return { agent: toAgentPublic(row), token, hmac_secret: hmacSecret };
  } catch (e) {
    // Two concurrent mints of one name: the unique index decides, the loser gets the same 409.
    const code = (rootCause(e) as { code?: string }).code;
    if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE') throw duplicate();
    throw e;
  }
}

/** Revokes: the row becomes a tombstone (revoked_at set, token hash overwritten,
 * hidden from the list). The commit comes first; live sockets and waiting polls
 * are kicked afterwards, best-effort (other processes notice within a sweep). */
export async function revokeAgent(ctx: AppContext, projectId: string, agentId: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const row = await liveAgentOf(tx, projectId, agentId);
    const now = nowIso();
    // Unguessable and never a valid token's hash: the old token cannot match it.
    if (!(await markRevoked(tx, projectId, agentId, `revoked:${randomToken(32)}`, now))) throw notFound('agent');
    await ctx.audit.append(tx, {
      ...actor,
      action: 'agent.token.revoked',
      target_type: 'agent',
      target_id: agentId,
      project_id: projectId,
      metadata: { name: row.name },
    });
    tx.afterCommit(() => ctx.agentTransport.agentRevoked(agentId));
  });
}

/** At most 100 health samples, newest first; 404 for revoked or foreign agents.
 * An empty list means nothing was reported, not zero loss. */
export async function agentHealth(ex: Executor, projectId: string, agentId: string, limit = HEALTH_SAMPLES_SHOWN): Promise<AgentHealthSample[]> {
  await liveAgentOf(ex, projectId, agentId);
  const rows = await healthSamplesOf(ex, agentId, Math.min(Math.max(limit, 1), HEALTH_SAMPLES_SHOWN));
  return rows.map((r) => ({ id: r.id, captured_at: r.captured_at, worker_id: r.worker_id, telemetry_loss: r.telemetry_loss ?? null }));
}

// --- the transports' side -----------------------------------------------------------

export interface AuthenticatedAgent {
  agent: AgentRow;
  projectActive: boolean;
  /** True when the token was hashed with a previous master (the bearer still works; hmac_secret may not). */
  previousMaster: boolean;
}

const TOKEN_RE = /^[A-Za-z0-9_\-.~+/=]{1,512}$/;

/** The live agent a bearer token belongs to, checked against SVC_SECRET and
 * every SVC_PREVIOUS_SECRETS entry; null when missing, malformed, unknown or revoked. */
export async function authenticateAgentToken(ctx: Pick<AppContext, 'config' | 'db'>, token: string | null): Promise<AuthenticatedAgent | null> {
  if (!token || !TOKEN_RE.test(token)) return null;
  const masters = mastersOf(ctx);
  const found = await liveAgentByTokenHash(ctx.db, agentTokenHashes(token, masters));
  if (!found) return null;
  // The lookup matched on equality; confirm in constant time and learn which master it was.
  const match = matchAgentToken(token, found.agent.token_hash, masters);
  if (!match) return null;
  return { agent: found.agent, projectActive: found.projectActive, previousMaster: match.master === 'previous' };
}

export const agentStandingOf = (ex: Executor, agentId: string) => agentStanding(ex, agentId);
export const lockAgentForIngest = (ex: Executor, agentId: string) => lockLiveAgent(ex, agentId);
export const findAgent = (ex: Executor, agentId: string) => agentById(ex, agentId);
export const revokedAgentsAmong = (ex: Executor, ids: string[]) => revokedAmong(ex, ids);
export const onlineAgentsOfProject = (ex: Executor, projectId: string) => onlineAgentsOf(ex, projectId);

/** Liveness: last_seen_at bumped, promoted to online. `live` is false when the agent is revoked;
 * `cameOnline` when it was not online before (agent.online fires). Written in a transaction shared
 * with the other agents of this process seen meanwhile (pulse.ts). */
export const touchAgentLiveness = (db: Db, agentId: string): Promise<{ live: boolean; cameOnline: boolean }> => touchLiveness(db, agentId);

export interface HelloFacts {
  protocolVersion: string;
  framework: string;
  engines: string[];
  schedulers: string[];
  capabilities: Record<string, string[]>;
  runtimeFeatures: string[] | null;
  metadata: AgentMetadata;
  worker: { workerId: string; role: string | null; pid: number | null; startedAt: string | null } | null;
}

/** A WebSocket hello: records what the agent advertised and marks it online. `live` is false when
 * the agent was revoked meanwhile; `cameOnline` when it was not online before. */
export async function recordHello(db: Db, agent: AgentRow, hello: HelloFacts): Promise<{ live: boolean; cameOnline: boolean }> {
  return db.tx(async (tx) => {
    const now = nowIso();
    const cameOnline = await promoteOnline(tx, agent.id, now);
    const ok = await updateAgent(tx, agent.id, {
      state: 'online',
      transport: 'ws',
      protocol_version: hello.protocolVersion,
      framework_adapter: hello.framework,
      engine_adapters: hello.engines,
      scheduler_adapters: hello.schedulers,
      capabilities: hello.capabilities,
      ...(hello.runtimeFeatures ? { runtime_features: hello.runtimeFeatures } : {}),
      metadata: hello.metadata,
      last_seen_at: now,
      last_connect_at: now,
      updated_at: now,
    });
    if (!ok) return { live: false, cameOnline: false };
    if (hello.worker) {
      await upsertAgentWorker(tx, {
        id: crypto.randomUUID(),
        agent_id: agent.id,
        project_id: agent.project_id,
        worker_id: hello.worker.workerId,
        role: hello.worker.role,
        framework: hello.framework,
        pid: hello.worker.pid,
        started_at: hello.worker.startedAt,
        state: 'online',
        last_seen_at: now,
        last_connect_at: now,
        created_at: now,
        updated_at: now,
      });
    }
    return { live: true, cameOnline };
  });
}

/** A hello refused for its protocol version still records what was advertised (for is_outdated). */
export async function recordRefusedHello(db: Db, agentId: string, protocolVersion: string): Promise<void> {
  await db.tx(async (tx) => {
    const now = nowIso();
    await updateAgent(tx, agentId, { protocol_version: protocolVersion.slice(0, 40), last_connect_at: now, updated_at: now });
  });
}

export async function recordWorkerGone(db: Db, agentId: string, workerId: string): Promise<void> {
  await db.tx((tx) => setAgentWorkerState(tx, agentId, workerId, 'offline', nowIso()));
}

/** A long-poll connect probe: transport and runtime features (when the header was sent). */
export async function recordProbe(db: Db, agentId: string, runtimeFeatures: string[] | null): Promise<void> {
  await db.tx(async (tx) => {
    const now = nowIso();
    await updateAgent(tx, agentId, {
      transport: 'longpoll',
      last_connect_at: now,
      updated_at: now,
      ...(runtimeFeatures ? { runtime_features: runtimeFeatures } : {}),
    });
  });
}

/** Stores one agent_status sample, in a transaction shared with other agents' samples and
 * liveness (pulse.ts): 'duplicate' for a re-sent frame, 'revoked' when the agent is. */
export const storeHealthSample = (db: Db, row: HealthSampleRow): Promise<SampleOutcome> => storeSample(db, row);

/** Offline detection: online agents silent for SVC_AGENT_OFFLINE_TIMEOUT_SECONDS. */
export async function sweepOfflineAgents(ctx: Pick<AppContext, 'db' | 'config'>, nowIsoText: string, cutoffIso: string): Promise<string[]> {
  return ctx.db.tx((tx) => markStaleOffline(tx, cutoffIso, nowIsoText));
}

export const onlineAgentCounts = (ex: Executor) => onlineCounts(ex);

export async function pruneHealthHistory(db: Db, receivedBefore: string): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await db.tx((tx) => pruneHealthSamples(tx, receivedBefore, 5000));
    total += n;
    if (n < 5000) return total;
    await new Promise((r) => setImmediate(r));
  }
}
