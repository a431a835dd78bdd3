// `svc serve`: listen first (readiness answers 503 "starting"), migrate, start
// background work, then report ready. With --workers N the first process
// migrates and then starts N-1 more processes of this same executable that
// share the port (SO_REUSEPORT); it restarts any that die and stops them on
// shutdown.
import type { Subprocess } from 'bun';
import { loadConfig } from '../config/load.ts';
import { loadConfigMintingSecrets } from '../config/secrets.ts';
import { MigrationError, upgrade } from '../db/migrate.ts';
import { redactDatabaseUrl } from '../db/url.ts';
import { logger, setLogLevel } from '../lib/log.ts';
import { VERSION } from '../version.ts';
import { announceSetup } from '../setup/announce.ts';
import { bootstrapFromSettings } from '../setup/service.ts';
import { workerMetrics } from '../metrics/workers.ts';
import { startBackground } from './background.ts';
import { buildServiceApp, createContext, openConfiguredDatabase } from './compose.ts';
import { agentWebSocketOptions } from '../transport/routes.ts';
import { resolveTls } from './tls.ts';
import { startSignals } from '../signals/index.ts';
import { keepLeases } from '../platform/leases.ts';
import { startTelemetry, stopTelemetry } from '../telemetry/index.ts';
import { startSchedulerEndpoint } from '../scheduler/endpoint.ts';

const log = logger('serve');
const CHILD_ENV = 'SVC_INTERNAL_WORKER_INDEX';
const CHILD_COUNT_ENV = 'SVC_INTERNAL_WORKER_COUNT';

export interface ServeOptions {
  host?: string;
  port?: number;
  workers?: number;
}

/** argv that starts this same program again (compiled binary or `bun src/main.ts`). */
export function selfCommand(args: string[]): string[] {
  return Bun.main.startsWith('/$bunfs/') ? [process.execPath, ...args] : [process.execPath, Bun.main, ...args];
}

export async function serve(options: ServeOptions): Promise<number> {
  const workerIndex = Number(process.env[CHILD_ENV] ?? '0');
  const isChild = workerIndex > 0;
  const { loaded, minted } = isChild ? { loaded: loadConfig(), minted: [] as string[] } : loadConfigMintingSecrets();
  const { config } = loaded;
  setLogLevel(config.SVC_LOG_LEVEL);
  const host = options.host ?? config.SVC_BIND_HOST;
  const port = options.port ?? config.SVC_BIND_PORT;
  const workers = options.workers ?? config.SVC_WORKERS;
  if (minted.length > 0) {
    log.warn({ secrets: minted, file: loaded.paths.secretEnv }, 'minted secrets into the secret file; back it up with the database');
  }
  const tls = await resolveTls(config, loaded.paths.tlsDir);
  const db = openConfiguredDatabase(loaded, { backgroundCheckpoints: true });
  const ctx = createContext(loaded, db);
  ctx.worker = { index: workerIndex, count: isChild ? Number(process.env[CHILD_COUNT_ENV] ?? '1') : workers };
  // Traces and error tracking, when configured (nothing is loaded otherwise); flushed after
  // everything else has stopped (hooks run newest first).
  await startTelemetry(config, { processHandlers: true });
  ctx.lifecycle.onShutdown('telemetry', () => stopTelemetry());
  const app = buildServiceApp(ctx);
  try {
    app.listen({
      hostname: host,
      port,
      reusePort: workers > 1 || isChild,
      // Long-poll requests wait up to 60 s without writing; keep the socket.
      idleTimeout: 120,
      websocket: agentWebSocketOptions(config),
      maxRequestBodySize: config.SVC_AGENT_EVENTS_MAX_BODY_BYTES + 65536,
      ...(tls ? { tls: { cert: tls.cert, key: tls.key } } : {}),
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    process.stderr.write(`svc: cannot listen on ${host}:${port}: ${code === 'EADDRINUSE' ? 'address already in use' : (e as Error).message}\n`);
    await db.close();
    return 1;
  }
  ctx.server = app.server;
  const scheme = tls ? 'https' : 'http';
  const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  const baseUrl = config.SVC_PUBLIC_URL !== '' ? config.SVC_PUBLIC_URL.replace(/\/$/, '') : `${scheme}://${shownHost}:${app.server!.port}`;

  if (!isChild) {
    try {
      const applied = await upgrade(db);
      if (applied.length > 0) log.info({ revisions: applied }, 'applied migrations');
    } catch (e) {
      const message = e instanceof MigrationError ? e.message : `migration failed: ${(e as Error).message}`;
      log.error({ err: (e as Error).message }, 'migration failed');
      process.stderr.write(`svc: ${message}\n`);
      await app.stop();
      await db.close();
      return 1;
    }
  }

  try {
    await ctx.audit.assertWritable(db);
  } catch (e) {
    process.stderr.write(`svc: audit chain: ${(e as Error).message}\n`);
    await app.stop();
    await db.close();
    return 1;
  }
  await startSignals(ctx); // cross-process signals (live updates, agent wake-ups): LISTEN/NOTIFY, or Unix sockets between --workers
  // Leader leases are renewed while this process runs and released when it stops (platform/leases.ts).
  const leases = keepLeases(db, { ttlMs: config.SVC_LEADER_LEASE_SECONDS * 1000 });
  await startBackground(ctx);
  if (ctx.worker.count > 1) ctx.lifecycle.onShutdown('metrics', workerMetrics(ctx.metrics, ctx.paths.runDir, ctx.worker).start());
  const children = !isChild && workers > 1 ? superviseWorkers(workers - 1, host, app.server!.port!) : null;
  ctx.lifecycle.onShutdown('http', async () => {
    await ctx.agentTransport.closeAllSockets(); // agents get 1001 before the listener goes
    await app.stop(true);
  });
  // The endpoint `svc scheduler` processes fire through (SVC_SCHEDULER_GRPC_ENABLED; first process only).
  const scheduler = isChild ? null : await startSchedulerEndpoint(ctx).catch((e: Error) => (process.stderr.write(`svc: scheduler endpoint: ${e.message}\n`), undefined));
  // The database closes after every hook has run (hooks run newest first; the notifications hook, the
  // oldest, writes the last delivery rows), never as one of them.
  let stopping: Promise<void> | undefined;
  const shutdown = () =>
    (stopping ??= (async () => {
      await children?.stop();
      await ctx.lifecycle.shutdown();
      await db.close();
    })());
  if (scheduler === undefined) {
    await shutdown();
    return 1;
  }
  // Hooks run newest first: the leases go first, so another replica takes over at once.
  ctx.lifecycle.onShutdown('leases', () => leases.stop());
  // The administrator from SVC_BOOTSTRAP_ADMIN_* exists before svc says it is ready.
  if (!isChild) await bootstrapFromSettings(ctx);
  ctx.lifecycle.ready = true;

  log.info({ version: VERSION, url: baseUrl, worker: workerIndex, database: redactDatabaseUrl(loaded.database) }, 'svc ready');
  if (!isChild) {
    process.stderr.write(`svc ${VERSION} serving ${baseUrl} (${workers} worker${workers === 1 ? '' : 's'}, data in ${loaded.paths.home})\n`);
    if (tls) process.stderr.write(`TLS certificate ${tls.certFile}\nSHA-256 fingerprint ${tls.fingerprint}\n`);
    if (scheduler) process.stderr.write(`scheduler endpoint ${scheduler.url} (mutual TLS)\n`);
    // Only the first process mints and prints the setup link (the token lives in the database).
    await announceSetup(ctx, baseUrl);
  }

  return new Promise<number>((resolve) => {
    const stop = async (signal: string) => {
      log.info({ signal, worker: workerIndex }, 'shutting down');
      await shutdown();
      resolve(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
    if (isChild) {
      // A worker whose supervisor died (reparented) stops instead of holding the port.
      const parent = process.ppid;
      setInterval(() => {
        if (process.ppid !== parent) void stop('parent-exit');
      }, 2000).unref();
    }
  });
}

function superviseWorkers(count: number, host: string, port: number): { stop(): Promise<void> } {
  const procs = new Map<number, Subprocess>();
  let stopping = false;
  const start = (index: number, attempt = 0): void => {
    const proc = Bun.spawn(selfCommand(['serve', '--host', host, '--port', String(port), '--workers', '1']), {
      env: { ...process.env, [CHILD_ENV]: String(index), [CHILD_COUNT_ENV]: String(count + 1) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    procs.set(index, proc);
    void proc.exited.then((code) => {
      if (stopping) return;
      const delay = Math.min(30_000, 1000 * 2 ** attempt);
      log.error({ worker: index, code, restart_in_ms: delay }, 'worker process exited; restarting');
      setTimeout(() => start(index, attempt + 1), delay);
    });
  };
  for (let i = 1; i <= count; i++) start(i);
  return {
    async stop() {
      stopping = true;
      for (const p of procs.values()) p.kill('SIGTERM');
      await Promise.all([...procs.values()].map((p) => p.exited));
    },
  };
}
