// Signals over PostgreSQL LISTEN/NOTIFY: one dedicated connection per process
// (outside the query pool, so a busy pool never delays a signal and a signal
// never takes a pooled connection) that LISTENs on one channel and sends the
// NOTIFYs too. Every process and replica on the database hears every signal.
//
// The connection reconnects by itself: when it closes, or a heartbeat query
// fails or hangs, it is dropped and opened again with backoff (0.5 s doubling
// to 30 s). An outage is logged once when it starts and once when it ends.
// Signals sent while it is down are dropped (the bus is best-effort; see bus.ts).
import postgres from 'postgres';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { SignalTransport } from './bus.ts';

const log = logger('signals');

export const PG_SIGNAL_CHANNEL = 'svc_signals';
const HEARTBEAT_MS = 15_000;
const HEARTBEAT_TIMEOUT_MS = 10_000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export interface PostgresSignalOptions {
  url: string;
  connectTimeoutSeconds: number;
  onMessage(text: string): void;
  /** Called after every (re)connect once LISTEN is in place (a good moment to re-sweep). */
  onListening?(): void;
}

export class PostgresSignals implements SignalTransport {
  readonly kind = 'postgres' as const;
  private sql: postgres.Sql | null = null;
  private listening = false;
  private stopped = false;
  private backoff = BACKOFF_MIN_MS;
  private outageSince: number | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private firstListen: Promise<void>;
  private markFirst!: () => void;

  constructor(private readonly o: PostgresSignalOptions) {
    this.firstListen = new Promise((resolve) => (this.markFirst = resolve));
    this.heartbeat = setInterval(() => void this.check(), HEARTBEAT_MS);
    this.heartbeat.unref();
    void this.open();
  }

  /** Resolves once LISTEN first succeeded, or after `ms` (start-up does not wait for a database that is down). */
  ready(ms = 5000): Promise<void> {
    return Promise.race([this.firstListen, new Promise<void>((r) => setTimeout(r, ms).unref())]);
  }

  connected(): boolean {
    return this.listening;
  }

  send(text: string): void {
    const sql = this.sql;
    if (!sql || !this.listening) return;
    sql`SELECT pg_notify(${PG_SIGNAL_CHANNEL}, ${text})`.catch(() => {
      // The connection went away mid-send: the close handler reconnects.
    });
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    const sql = postgres(this.o.url, {
      max: 1,
      idle_timeout: 0,
      max_lifetime: 0,
      connect_timeout: this.o.connectTimeoutSeconds,
      fetch_types: false,
      onnotice: () => {},
      onclose: () => {
        if (this.sql === sql) this.lost(sql, new Error('connection closed'));
      },
      onnotify: (channel: string, payload: string) => {
        if (channel === PG_SIGNAL_CHANNEL) this.o.onMessage(payload);
      },
    } as postgres.Options<Record<string, never>>);
    this.sql = sql;
    try {
      await sql.unsafe(`LISTEN ${PG_SIGNAL_CHANNEL}`);
      if (this.sql !== sql) return;
      this.listening = true;
      this.backoff = BACKOFF_MIN_MS;
      if (this.outageSince !== null) {
        log.info({ down_ms: Date.now() - this.outageSince }, 'signal listener reconnected');
        this.outageSince = null;
      }
      this.markFirst();
      this.o.onListening?.();
    } catch (e) {
      this.lost(sql, e);
    }
  }

  /** Drops the connection and schedules the next attempt (logged once per outage). */
  private lost(sql: postgres.Sql, e: unknown): void {
    if (this.sql !== sql) return;
    this.sql = null;
    this.listening = false;
    void sql.end({ timeout: 0 }).catch(() => {});
    if (this.stopped) return;
    if (this.outageSince === null) {
      this.outageSince = Date.now();
      log.warn({ err: describeError(e).message }, 'signal listener lost its database connection; reconnecting (other processes\' signals wait for it, sweeps go on)');
    }
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
    this.retry = setTimeout(() => void this.open(), delay);
    this.retry.unref();
  }

  /** A connection that stopped answering (a dead peer TCP never reports) is replaced. */
  private async check(): Promise<void> {
    const sql = this.sql;
    if (!sql || !this.listening) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        sql`SELECT 1`,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('heartbeat timed out')), HEARTBEAT_TIMEOUT_MS))),
      ]);
    } catch (e) {
      this.lost(sql, e);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    if (this.retry) clearTimeout(this.retry);
    const sql = this.sql;
    this.sql = null;
    this.listening = false;
    await sql?.end({ timeout: 1 }).catch(() => {});
  }
}
