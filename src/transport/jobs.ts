// Background work of the agent transports in one process:
//   - delivery sweep (every 300 ms): pending commands for an agent connected here
//     are pushed, polls waiting here on an agent with pending commands are woken;
//     buffered schedule.fire commands are routed to a connected agent advertising
//     their engine
//   - revocation sweep (every 2 s): sockets and waiting polls of agents revoked
//     elsewhere are kicked and ended
//   - idle sockets (every 2 s): no hello in 10 s or silent past SVC_WS_IDLE_TIMEOUT_SECONDS -> 4408
//   - offline detection (every 5 s, one leader), command timeouts (every 5 s), buffer expiry (every 10 s)
//   - long-poll session and marker expiry (every 60 s), health-history retention (hourly, one leader)
// Commands issued and agents revoked in another process or replica arrive at
// once as signals (transport/signals.ts); the delivery and revocation sweeps
// are the fallback for a signal that was lost (a listener reconnecting), and
// they run at once whenever the signal listener (re)connects.
import { onlineAgentCounts, pruneHealthHistory, revokedAgentsAmong, sweepOfflineAgents } from '../agents/service.ts';
import { TASK_STATES } from '../tasks/schemas.ts';
import { agentsWithPendingCommands } from '../commands/delivery.ts';
import { bufferedFiresFor, expireBufferedFires, routeBufferedFire, timeOutCommands } from '../commands/service.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { logger } from '../lib/log.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { agentFrameMetrics } from './router.ts';
import { attachAgentSignals } from './signals.ts';

const log = logger('agent.jobs');
const IN_CHUNK = 500;
const OFFLINE_SWEEP_MS = 5000;

/** Agents this process serves: connected WebSockets and waiting long-polls. */
const localAgentIds = (ctx: AppContext): string[] => {
  const rt = ctx.agentTransport;
  return [...new Set([...rt.sockets.agentIds(), ...rt.waitingAgentIds()])];
};

/** Pushes pending commands to locally connected agents, wakes local polls waiting on agents that have
 * some, and routes buffered fires to connected agents. */
export async function deliverySweep(ctx: AppContext): Promise<void> {
  const rt = ctx.agentTransport;
  const ids = localAgentIds(ctx);
  for (let i = 0; i < ids.length; i += IN_CHUNK) {
    for (const agentId of await agentsWithPendingCommands(ctx.db, ids.slice(i, i + IN_CHUNK))) rt.commandWaiting(agentId);
  }
  const sockets = rt.sockets.all().filter((s) => s.engines.length > 0);
  if (sockets.length === 0) return;
  for (const row of await bufferedFiresFor(ctx.db, null, [...new Set(sockets.flatMap((s) => s.engines))])) {
    const socket = sockets.find((s) => s.projectId === row.project_id && s.engines.includes(row.engine!));
    if (socket && (await routeBufferedFire(ctx, row.id, socket.agentId))) socket.pushCommands();
  }
}

/** Kicks local sockets and ends local waiting polls of agents revoked by another process (whose signal did not arrive). */
export async function revocationSweep(ctx: AppContext): Promise<void> {
  const rt = ctx.agentTransport;
  const ids = localAgentIds(ctx);
  for (let i = 0; i < ids.length; i += IN_CHUNK) {
    for (const agentId of await revokedAgentsAmong(ctx.db, ids.slice(i, i + IN_CHUNK))) rt.revokedHere(agentId);
  }
}

export function idleSweep(ctx: AppContext): void {
  const now = nowMicros();
  const sockets = ctx.agentTransport.sockets;
  for (const socket of [...sockets.handshaking, ...sockets.all()]) socket.checkIdle(now);
}

export async function offlineSweep(ctx: AppContext): Promise<string[]> {
  const now = nowMicros();
  const gone = await sweepOfflineAgents(ctx, isoMicros(now), isoMicros(now - ctx.config.SVC_AGENT_OFFLINE_TIMEOUT_SECONDS * 1_000_000));
  if (gone.length > 0) {
    log.info({ agents: gone.slice(0, 50), count: gone.length }, 'agents went offline');
    ctx.reactions.agentsWentOffline(gone);
  }
  return gone;
}

export function registerAgentMetrics(ctx: AppContext): void {
  // Read from the shared database: every `--workers` process says the same, so merged scrapes take one (max).
  // A scrape collects both gauges concurrently; they share one query.
  let reading: Promise<{ project: string; n: number | string }[]> | null = null;
  const counts = () =>
    (reading ??= onlineAgentCounts(ctx.db).finally(() => {
      reading = null;
    }));
  ctx.metrics.gauge(
    'svc_project_agents_online',
    'Live agents currently online, by project.',
    ['project'],
    async function () {
      const rows = await counts();
      this.reset();
      for (const r of rows) this.set({ project: r.project }, Number(r.n));
    },
    'max',
  );
  ctx.metrics.gauge(
    'svc_agents_online',
    'Live agents currently online.',
    [],
    async function () {
      this.set((await counts()).reduce((n, r) => n + Number(r.n), 0));
    },
    'max',
  );
  // Counted where they happen (ingest, the address allow-list); declared here at zero so a scrape shows them from the start.
  const { tasks } = agentFrameMetrics(ctx);
  for (const state of TASK_STATES) tasks.inc({ state }, 0);
  ctx.metrics.counter('svc_auth_ip_denied_total', 'Requests refused by an address allow-list, by surface.', ['surface']).inc({ surface: 'agent' }, 0);
  ctx.metrics.gauge('svc_ws_connections', 'Agent WebSocket connections held by this process.', [], function () {
    this.set(ctx.agentTransport.sockets.size);
  });
  ctx.metrics.gauge('svc_longpoll_sessions', 'Long-poll sessions held by this process.', [], function () {
    this.set(ctx.agentTransport.sessions.size);
  });
}

export async function startAgentJobs(ctx: AppContext): Promise<void> {
  registerAgentMetrics(ctx);
  const c = ctx.config;
  // Signals from the other processes and replicas first; the two sweeps below stay as their fallback.
  attachAgentSignals(ctx, async () => {
    await Promise.all([deliverySweep(ctx), revocationSweep(ctx)]);
  });
  every(ctx, 'agent-ws-delivery', 300, () => deliverySweep(ctx));
  every(ctx, 'agent-ws-revocations', 2000, () => revocationSweep(ctx));
  every(ctx, 'agent-ws-idle', 2000, async () => idleSweep(ctx));
  // One leader marks agents offline (the UPDATE is safe to race, but N replicas need not all scan).
  every(ctx, 'agent-offline', OFFLINE_SWEEP_MS, async () => {
    if (await acquireLease(ctx.db, 'agent-offline', 3 * OFFLINE_SWEEP_MS)) await offlineSweep(ctx);
  });
  every(ctx, 'command-timeouts', 5000, async () => void ctx.reactions.commandsChanged?.(null, await timeOutCommands(ctx.db)));
  every(ctx, 'schedule-fire-buffer', 10_000, async () => void ctx.reactions.commandsChanged?.(null, await expireBufferedFires(ctx.db)));
  every(ctx, 'longpoll-sessions', 60_000, async () => ctx.agentTransport.sessions.sweep());
  every(ctx, 'agent-health-retention', 3600_000, async () => {
    if (!(await acquireLease(ctx.db, 'agent-health-retention', 2 * 3600_000))) return;
    const cutoff = isoMicros(nowMicros() - c.SVC_AGENT_HEALTH_RETENTION_DAYS * 86_400_000_000);
    const n = await pruneHealthHistory(ctx.db, cutoff);
    if (n > 0) log.info({ pruned: n, cutoff }, 'pruned agent health samples past retention');
  });
  // Registered before the HTTP server's hook, so it runs after it: serve.ts closes the sockets first.
  ctx.lifecycle.onShutdown('agent-sockets', () => ctx.agentTransport.closeAllSockets());
}
