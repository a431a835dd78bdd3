// The signal bus of a process and the transport its database and process
// count call for (bus.ts explains the choice). Areas publish and subscribe by
// channel name; the live dashboard stream uses `live`.
import type { DatabaseTarget } from '../db/url.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { SignalBus } from './bus.ts';
import { PostgresSignals } from './postgres.ts';
import { UnixSignals } from './unix.ts';

export { SignalBus, MAX_SIGNAL_BYTES, type SignalHandler, type SignalTransport } from './bus.ts';

const log = logger('signals');

export interface SignalTransportOptions {
  database: DatabaseTarget;
  runDir: string;
  /** Processes of this `svc serve` (its --workers). */
  processes: number;
  connectTimeoutSeconds: number;
  /** Called whenever the PostgreSQL listener (re)connects. */
  onListening?(): void;
}

/** Attaches the transport this installation needs: PostgreSQL LISTEN/NOTIFY on PostgreSQL, Unix sockets between
 * the processes of a multi-process SQLite host, none (in-memory) for one SQLite process. */
export async function startSignalTransport(bus: SignalBus, o: SignalTransportOptions): Promise<void> {
  if (bus.kind !== 'memory') return;
  if (o.database.dialect === 'postgres') {
    const pg = new PostgresSignals({
      url: o.database.url,
      connectTimeoutSeconds: o.connectTimeoutSeconds,
      onMessage: (text) => bus.receive(text),
      onListening: () => {
        bus.reconnected();
        o.onListening?.();
      },
    });
    bus.attach(pg);
    await pg.ready();
  } else if (o.processes > 1) {
    const unix = new UnixSignals({ runDir: o.runDir, onMessage: (text) => bus.receive(text) });
    unix.start();
    bus.attach(unix);
  }
  log.debug({ transport: bus.kind }, 'signal bus started');
}

const buses = new WeakMap<AppContext, SignalBus>();

/** The signal bus of a process (one per AppContext; in-memory until startSignals attaches its transport). */
export function signalsOf(ctx: AppContext): SignalBus {
  let bus = buses.get(ctx);
  if (!bus) buses.set(ctx, (bus = new SignalBus()));
  return bus;
}

/** `svc serve`: connects this process's bus to the others (once its --workers index and count are known). */
export async function startSignals(ctx: AppContext): Promise<void> {
  const bus = signalsOf(ctx);
  await startSignalTransport(bus, {
    database: ctx.database,
    runDir: ctx.paths.runDir,
    processes: ctx.worker.count,
    connectTimeoutSeconds: ctx.config.SVC_DATABASE_CONNECT_TIMEOUT_SECONDS,
  });
  ctx.lifecycle.onShutdown('signals', () => bus.close());
}
