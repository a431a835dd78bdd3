// GET /api/v1/health/deep: one entry per subsystem of this process, each
// checked within a time limit (a check that does not finish in time is
// reported failed, never left out), and a `coverage` object saying what the
// report does and does not look at. Any failed entry makes the answer 503.
import type { Static } from '@sinclair/typebox';
import { statfsSync } from 'node:fs';
import { authenticateState } from '../audit/chain.ts';
import { auditIsEmpty, loadState } from '../audit/store.ts';
import { databaseInfo } from '../db/info.ts';
import { schemaState } from '../db/migrate.ts';
import { nowIso, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { leaseKeeperOf, processHolder } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { signalsOf } from '../signals/index.ts';
import type { DeepReport as DeepReportSchema } from './schemas.ts';

export type DeepReport = Static<typeof DeepReportSchema>;
type DeepEntry = DeepReport['entries'][number];
type EntryStatus = DeepEntry['status'];

export type Outcome = { status: EntryStatus; detail: string; data?: Record<string, unknown> };
export type Check = { name: string; run: () => Promise<Outcome> | Outcome };

export const CHECK_TIMEOUT_MS = 2000;
/** Below this much free space under $SVC_HOME the disk entry fails. */
const MIN_FREE_BYTES = 512 * 1024 * 1024;
const MIN_FREE_SHARE = 0.02;

const ok = (detail: string, data: Record<string, unknown> = {}): Outcome => ({ status: 'ok', detail, data });
const failed = (detail: string, data: Record<string, unknown> = {}): Outcome => ({ status: 'failed', detail, data });

/** Runs one check within `timeoutMs`; one that throws or does not finish in time is failed. */
export async function timed(check: Check, timeoutMs: number): Promise<DeepEntry> {
  const started = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve(failed(`no answer within ${timeoutMs} ms`)), timeoutMs)));
  let outcome: Outcome;
  try {
    outcome = await Promise.race([Promise.resolve().then(check.run), late]);
  } catch (e) {
    outcome = failed(describeError(e).message ?? 'the check failed');
  } finally {
    clearTimeout(timer);
  }
  return { name: check.name, status: outcome.status, detail: outcome.detail, duration_ms: Math.round(performance.now() - started), data: outcome.data ?? {} };
}

function checks(ctx: AppContext): Check[] {
  const list: Check[] = [
    {
      name: 'database',
      run: async () => {
        const info = await databaseInfo(ctx.db);
        return ok(`${info.type} ${info.version} answers`, { ...info });
      },
    },
    {
      name: 'migrations',
      run: async () => {
        const s = await schemaState(ctx.db);
        const data = { current: s.current, head: s.head, pending: s.pending.map((m) => m.revision), unknown: s.unknown.map((m) => m.revision) };
        if (s.unknown.length > 0) return failed(`the database has revisions this build does not know (${data.unknown.join(', ')})`, data);
        return s.current === s.head ? ok(`at head ${s.head}`, data) : failed(`at ${s.current ?? 'none'}, head is ${s.head}`, data);
      },
    },
    {
      // The chain-state row only: not a walk of the log, not an integrity alert (svc audit verify is).
      name: 'audit_chain',
      run: async () => {
        const state = await loadState(ctx.db);
        const data = { scope: 'state-only' };
        // A fresh installation has neither rows nor state; rows without a state row are a loss.
        if (!state) return (await auditIsEmpty(ctx.db)) ? ok('no audit rows yet', data) : failed('audit rows exist but the chain state row is missing', data);
        authenticateState(state, ctx.audit.keyring);
        return ok('the chain state row authenticates', { ...data, rows: state.active_row_count, frozen_rows: state.frozen_row_count });
      },
    },
    {
      name: 'audit_forwarder',
      run: () => {
        const s = ctx.audit.sinkStatus();
        if (!s) return { status: 'disabled', detail: 'SVC_AUDIT_WEBHOOK_URL is not set', data: {} };
        if (s.stopped) return failed('stopped', { ...s });
        return ok(`${s.queued} of ${s.capacity} rows queued, ${s.dropped} dropped since start`, { ...s });
      },
    },
    {
      name: 'wal_checkpointer',
      run: () => {
        const mode = ctx.db.checkpoints();
        if (mode === 'none') return { status: 'disabled', detail: 'PostgreSQL: no WAL checkpoints to run', data: { mode } };
        if (mode === 'fallback') return failed('the checkpoint thread failed; writers checkpoint inline', { mode });
        return ok(mode === 'thread' ? 'checkpoints run in their own thread' : 'checkpoints run inline after commits', { mode });
      },
    },
    {
      name: 'disk',
      run: () => {
        const fs = statfsSync(ctx.paths.home);
        const free = fs.bavail * fs.bsize;
        const total = fs.blocks * fs.bsize;
        const data = { path: ctx.paths.home, free_bytes: free, total_bytes: total };
        const low = free < MIN_FREE_BYTES || free < total * MIN_FREE_SHARE;
        return low ? failed(`only ${(free / 2 ** 20).toFixed(0)} MiB free under $SVC_HOME`, data) : ok(`${(free / 2 ** 30).toFixed(1)} GiB free under $SVC_HOME`, data);
      },
    },
    {
      name: 'agent_transports',
      run: () => {
        const rt = ctx.agentTransport;
        const data = { websocket_connections: rt.sockets.size, longpoll_sessions: rt.sessions.size };
        return ok(`${data.websocket_connections} WebSocket connections, ${data.longpoll_sessions} long-poll sessions in this process`, data);
      },
    },
    {
      // How other processes' signals (live updates, agent wake-ups) reach this one.
      name: 'signals',
      run: () => {
        const bus = signalsOf(ctx);
        const data = { transport: bus.kind };
        if (bus.kind === 'memory') return { status: 'disabled', detail: 'no transport to other processes: signals stay in this one (one SQLite process)', data };
        const via = bus.kind === 'postgres' ? 'the LISTEN connection to PostgreSQL' : 'the Unix socket of this --workers process';
        return bus.connected() ? ok(`${via} is up`, data) : failed(`${via} is down (reconnecting): signals of the other processes are not heard`, data);
      },
    },
    {
      // The keeper renewing the leader leases this process holds (platform/leases.ts).
      name: 'lease_keeper',
      run: () => {
        const keeper = leaseKeeperOf(ctx.db);
        if (!keeper) return { status: 'disabled', detail: 'no lease keeper in this process (svc serve runs one)', data: {} };
        const since = Date.now() - keeper.lastRoundAt;
        const data = { holder: processHolder, held: [...keeper.held].sort(), ttl_ms: keeper.ttlMs, renew_ms: keeper.renewMs, ms_since_last_round: since };
        if (keeper.lastError !== null) return failed(`renewing leases fails: ${keeper.lastError}`, data);
        // A round that hangs records no error; past the lease time the leases it should have renewed have lapsed.
        if (since > keeper.ttlMs) return failed(`no renewal round finished in ${(since / 1000).toFixed(1)} s (leases last ${keeper.ttlMs / 1000} s)`, data);
        return ok(`${data.held.length} leases held, renewed every ${keeper.renewMs} ms`, data);
      },
    },
    {
      name: 'notifications',
      run: () => {
        const s = ctx.notifications.status();
        if (s.queued >= s.limit) return failed(`the dispatch queue is full (${s.queued}); new fires are dropped`, { ...s });
        return ok(`${s.queued} fires queued, ${s.sending} sends under way`, { ...s });
      },
    },
  ];
  for (const job of ctx.jobs.all()) {
    list.push({
      name: `job:${job.name}`,
      run: () => {
        const data = { ...job };
        if (job.last_error !== null) return failed(`the last run failed: ${job.last_error}`, data);
        // Three intervals (and a minute) without finishing a run: stuck or starved.
        const last = job.last_finished_at ? parseIsoMicros(job.last_finished_at)! / 1000 : null;
        if (last !== null && Date.now() - last > job.interval_ms * 3 + 60_000) return failed(`no run finished since ${job.last_finished_at}`, data);
        return ok(job.runs === 0 ? 'not run yet' : `last run finished ${job.last_finished_at}`, data);
      },
    });
  }
  return list;
}

export async function deepHealth(ctx: AppContext, timeoutMs = CHECK_TIMEOUT_MS): Promise<DeepReport> {
  const entries = await Promise.all(checks(ctx).map((c) => timed(c, timeoutMs)));
  const count = (s: EntryStatus) => entries.filter((e) => e.status === s).length;
  return {
    status: count('failed') > 0 ? 'failed' : 'ok',
    checked_at: nowIso(),
    worker: ctx.worker.index,
    entries,
    coverage: {
      checked: entries.length,
      failed: count('failed'),
      disabled: count('disabled'),
      not_covered: [
        ...(ctx.worker.count > 1 ? [`the other ${ctx.worker.count - 1} --workers processes (each reports its own background work)`] : []),
        'other replicas of a PostgreSQL deployment',
        'the audit log itself (svc audit verify walks it)',
        'agents and task workers (see the agents list)',
      ],
    },
  };
}
