// Leader election for jobs only one process may run (scheduled audit
// verification, retention pruning, offline detection, the misfire detector,
// the bulk-retry coordinator, stats maintenance, health-sample pruning): a row
// per job naming its holder until an expiry. Taking or renewing it is one
// conditional upsert, atomic on both databases, so several processes and
// replicas agree on one holder.
//
// Why rows and not PostgreSQL advisory locks: the same code works on SQLite
// (--workers) and PostgreSQL (replicas); it needs no session pinned to one
// pooled connection (a session-level advisory lock belongs to a connection,
// and dies or lingers with it: a half-open TCP connection keeps it for the
// kernel's keepalive time while its holder may already have lost it); who
// leads is a row anyone can read (`SELECT * FROM svc_leases`); and a holder
// learns it lost the lease on its next renewal instead of never.
//
// While `svc serve` runs, a keeper (keepLeases) renews every lease this process
// holds every SVC_LEADER_LEASE_SECONDS / 5 with an expiry SVC_LEADER_LEASE_SECONDS
// ahead, whatever time-to-live the job asked for: a live leader keeps its jobs
// (they do not move between replicas from run to run), a dead one loses them
// within the lease time, and a clean shutdown releases them at once. A job
// that asked for a lease held by someone else is remembered; when that lease
// expires or is released, the keeper takes it and runs the job at once
// (schedule.ts tells it which job asked), so work resumes within seconds of a
// leader dying whatever the job's interval. Without a keeper (tests, tools)
// a lease lives exactly the time-to-live asked for.
//
// Clocks: expiries are written and compared with each process's clock, so the
// hosts of several replicas must keep time (NTP); a skew well under the lease
// time is harmless.
import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'drizzle-orm';
import { hostname } from 'node:os';
import type { Db } from '../db/connect.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';

const log = logger('leases');

/** This process, as lease holders name it. */
export const processHolder = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;

/** The job asking for a lease, as schedule.ts's every() runs it: how to run it again at once. */
export const leaseAsker = new AsyncLocalStorage<() => void>();

async function upsert(db: Db, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const now = nowMicros();
  const rows = await db.tx((tx) =>
    tx.all<{ holder: string }>(sql`
      INSERT INTO svc_leases (name, holder, expires_at) VALUES (${name}, ${holder}, ${isoMicros(now + ttlMs * 1000)})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE svc_leases.holder = excluded.holder OR svc_leases.expires_at < ${isoMicros(now)}
      RETURNING holder`),
  );
  return rows.length === 1 && rows[0]!.holder === holder;
}

/** Takes or renews the lease `name` for `ttlMs`; true when this holder has it. */
export async function acquireLease(db: Db, name: string, ttlMs: number, holder = processHolder): Promise<boolean> {
  const keeper = holder === processHolder ? keepers.get(db) : undefined;
  if (!keeper) return upsert(db, name, holder, ttlMs);
  return keeper.acquire(name, leaseAsker.getStore());
}

export async function releaseLease(db: Db, name: string, holder = processHolder): Promise<void> {
  if (holder === processHolder) keepers.get(db)?.forget(name);
  await db.tx((tx) => tx.run(sql`DELETE FROM svc_leases WHERE name = ${name} AND holder = ${holder}`));
}

export interface LeaseKeeperOptions {
  /** Expiry written on every take and renewal. */
  ttlMs: number;
  /** How often held leases are renewed and wanted ones looked at (default ttlMs / 5). */
  renewMs?: number;
}

/** Renews this process's leases, takes over wanted ones that expire, releases them all at stop(). */
export class LeaseKeeper {
  readonly ttlMs: number;
  readonly renewMs: number;
  /** Leases held, as of the last take or renewal. */
  readonly held = new Set<string>();
  /** Leases a job asked for and another holder had: the jobs to run when this process takes them. */
  private readonly wanted = new Map<string, Set<() => void>>();
  /** When a renewal round last finished (at first: when the keeper started), and why the last round
   * failed (null while rounds work): what deep health reports. */
  lastRoundAt = Date.now();
  lastError: string | null = null;
  private stopped = false;
  private busy = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly db: Db,
    o: LeaseKeeperOptions,
  ) {
    this.ttlMs = o.ttlMs;
    this.renewMs = o.renewMs ?? Math.max(200, Math.floor(o.ttlMs / 5));
    this.timer = setInterval(() => void this.tick(), this.renewMs);
    this.timer.unref();
  }

  async acquire(name: string, asker: (() => void) | undefined): Promise<boolean> {
    if (this.stopped) return false;
    const won = await upsert(this.db, name, processHolder, this.ttlMs);
    if (this.stopped) return false;
    if (won) {
      if (!this.held.has(name)) log.info({ lease: name, holder: processHolder }, 'took the lease');
      this.held.add(name);
      this.wanted.delete(name);
    } else {
      this.held.delete(name);
      if (asker) {
        let jobs = this.wanted.get(name);
        if (!jobs) this.wanted.set(name, (jobs = new Set()));
        jobs.add(asker);
      }
    }
    return won;
  }

  forget(name: string): void {
    this.held.delete(name);
  }

  /** One renewal round: held leases extended in one statement (those not returned were lost), then wanted
   * leases whose holder let them go are taken and their jobs started. */
  async tick(): Promise<void> {
    if (this.busy || this.stopped) return;
    this.busy = true;
    try {
      if (this.held.size > 0) {
        const expires = isoMicros(nowMicros() + this.ttlMs * 1000);
        const rows = await this.db.tx((tx) =>
          tx.all<{ name: string }>(sql`UPDATE svc_leases SET expires_at = ${expires} WHERE holder = ${processHolder} RETURNING name`),
        );
        if (this.stopped) return;
        const kept = new Set(rows.map((r) => r.name));
        for (const name of [...this.held]) {
          if (kept.has(name)) continue;
          this.held.delete(name);
          log.warn({ lease: name, holder: processHolder }, 'lost the lease (not renewed in time; another process holds it now)');
        }
      }
      if (this.wanted.size > 0) {
        const names = [...this.wanted.keys()];
        const now = isoMicros(nowMicros());
        const taken = await this.db.all<{ name: string }>(
          sql`SELECT name FROM svc_leases WHERE name IN (${sql.join(
            names.map((n) => sql`${n}`),
            sql`, `,
          )}) AND expires_at >= ${now}`,
        );
        const busy = new Set(taken.map((r) => r.name));
        for (const name of names) {
          if (busy.has(name) || this.stopped) continue;
          const jobs = this.wanted.get(name);
          if (!(await this.acquire(name, undefined))) continue;
          for (const run of jobs ?? []) run();
        }
      }
      if (this.lastError !== null) log.info({}, 'lease renewal works again');
      this.lastError = null;
      this.lastRoundAt = Date.now();
    } catch (e) {
      const message = describeError(e).message;
      if (this.lastError === null) log.warn({ err: message }, 'renewing leases failed (retrying)');
      this.lastError = message;
    } finally {
      this.busy = false;
    }
  }

  /** Stops renewing and deletes this process's leases, so another process takes over at once. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    if (keepers.get(this.db) === this) keepers.delete(this.db);
    this.held.clear();
    this.wanted.clear();
    try {
      await this.db.tx((tx) => tx.run(sql`DELETE FROM svc_leases WHERE holder = ${processHolder}`));
    } catch (e) {
      log.warn({ err: describeError(e).message }, 'releasing leases at shutdown failed (they expire by themselves)');
    }
  }
}

const keepers = new WeakMap<Db, LeaseKeeper>();

/** The keeper renewing this process's leases on `db`, if one runs. */
export const leaseKeeperOf = (db: Db): LeaseKeeper | undefined => keepers.get(db);

/** `svc serve`: this process's leases on `db` are renewed while it runs (see the top of this file). */
export function keepLeases(db: Db, o: LeaseKeeperOptions): LeaseKeeper {
  const keeper = new LeaseKeeper(db, o);
  keepers.set(db, keeper);
  return keeper;
}
