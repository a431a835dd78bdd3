// A small cross-process publish/subscribe bus for "something changed" signals:
// what changed and its ids, never whole rows. Every process of an installation
// has one; a signal published here reaches this process's subscribers at once
// and the other processes' through a transport:
//
//   - PostgreSQL: LISTEN/NOTIFY on a dedicated connection (./postgres.ts), so
//     the `--workers` processes of one host and the replicas of several hosts
//     on one database all hear each other;
//   - SQLite with `--workers N`: Unix sockets between the processes of the host
//     (./unix.ts);
//   - one SQLite process: nothing leaves it (the bus is in-memory).
//
// Delivery is best-effort by design: a signal sent while a connection is down,
// or dropped under backpressure, is lost. Whoever reacts to signals must keep
// the periodic sweep it had before (commands re-checked, sockets swept, pages
// polled) as the fallback; a signal only makes that happen sooner.
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';

const log = logger('signals');

export type SignalHandler = (data: unknown) => void;

/** How encoded signals leave this process and arrive from the others. */
export interface SignalTransport {
  readonly kind: 'postgres' | 'unix';
  /** Sends one encoded envelope to the other processes; never throws, may drop. */
  send(text: string): void;
  /** Whether signals from other processes can arrive right now. */
  connected(): boolean;
  close(): Promise<void>;
}

/** NOTIFY payloads must stay below 8000 bytes; envelopes above this are dropped (senders keep them small). */
export const MAX_SIGNAL_BYTES = 7900;

interface Envelope {
  /** The publishing bus (a process hears its own NOTIFYs; those are skipped). */
  o: string;
  c: string;
  d: unknown;
}

export class SignalBus {
  /** Tells this process's envelopes apart from the others'. */
  readonly origin = crypto.randomUUID();
  private readonly handlers = new Map<string, Set<SignalHandler>>();
  private transport: SignalTransport | null = null;
  /** Signals not sent to other processes (too large, or the transport dropped them). */
  dropped = 0;
  received = 0;
  private warnedSize = false;
  private readonly connectedHooks = new Set<() => void>();

  /** 'memory' until a transport is attached. */
  get kind(): 'memory' | SignalTransport['kind'] {
    return this.transport?.kind ?? 'memory';
  }

  /** Whether other processes' signals reach this one now (always true in memory). */
  connected(): boolean {
    return this.transport?.connected() ?? true;
  }

  attach(transport: SignalTransport): void {
    this.transport = transport;
  }

  /** Delivers to this process's subscribers at once, then sends to the other processes
   * (`local: false`: to the other processes only, for callers that acted here already). */
  publish(channel: string, data: unknown, options: { local?: boolean } = {}): void {
    if (options.local !== false) this.dispatch(channel, data);
    const transport = this.transport;
    if (!transport) return;
    const text = JSON.stringify({ o: this.origin, c: channel, d: data } satisfies Envelope);
    if (Buffer.byteLength(text, 'utf8') > MAX_SIGNAL_BYTES) {
      this.dropped++;
      if (!this.warnedSize) log.warn({ channel, bytes: Buffer.byteLength(text, 'utf8') }, 'a signal too large to send was dropped (send ids, not rows)');
      this.warnedSize = true;
      return;
    }
    transport.send(text);
  }

  subscribe(channel: string, fn: SignalHandler): () => void {
    let set = this.handlers.get(channel);
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(fn);
    return () => void set.delete(fn);
  }

  /** Calls `fn` whenever the transport (re)connects: signals sent while it was down are lost, so
   * whoever relies on them re-sweeps then. Returns the unsubscribe. */
  onConnected(fn: () => void): () => void {
    this.connectedHooks.add(fn);
    return () => void this.connectedHooks.delete(fn);
  }

  /** The transport (re)connected (PostgreSQL: LISTEN is in place again). */
  reconnected(): void {
    for (const fn of this.connectedHooks) {
      try {
        fn();
      } catch (e) {
        log.error({ err: describeError(e) }, 'a signal reconnect hook failed');
      }
    }
  }

  /** An envelope from the transport; this process's own are skipped (already delivered). */
  receive(text: string): void {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(text) as Envelope;
    } catch {
      return;
    }
    if (typeof envelope !== 'object' || envelope === null || envelope.o === this.origin || typeof envelope.c !== 'string') return;
    this.received++;
    this.dispatch(envelope.c, envelope.d);
  }

  private dispatch(channel: string, data: unknown): void {
    for (const fn of this.handlers.get(channel) ?? []) {
      try {
        fn(data);
      } catch (e) {
        log.error({ channel, err: describeError(e) }, 'a signal subscriber failed');
      }
    }
  }

  async close(): Promise<void> {
    const transport = this.transport;
    this.transport = null;
    await transport?.close();
  }
}
