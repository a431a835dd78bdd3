// The scheduler loop of `svc scheduler serve`: engine-agnostic and dynamic.
//
// Every SVC_SCHEDULER_SYNC_SECONDS it asks the service whether the schedules
// svc's scheduler owns changed (a stamp; the full list only when it did). For
// each enabled schedule it keeps the next run, computed here (cron in the
// schedule's time zone with DST handled, interval, clocked, solar; see
// schedules/next-run.ts), in a min-heap under one timer. When a run comes due
// it is sent to the service (POST /fire), which fires it through issueFire()
// (buffering, history, outcomes, circuit breaker and misfires apply) and
// answers 409 already_fired when another scheduler process sent it first: a
// run's fire row is unique per (schedule, scheduled_for) in the database, so
// any number of schedulers may run side by side (active-active, no leader,
// nothing to fail over) and a run still fires once.
//
// Where runs start: the service's expectation (next_run_at), which every fire
// moves past its run, so all schedulers agree on interval grids too. Runs
// missed while no scheduler ran follow the schedule's catch_up (skip;
// fire_one_missed: the latest; fire_all_missed: the latest
// SVC_SCHEDULER_CATCH_UP_MAX, none older than the service's fire buffer);
// skipped ones are what the misfire detector reports. A fire the service
// could not be reached for is retried (the unique row makes a retry safe) for
// up to a minute.
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';
import { nextRunAfter } from '../schedules/next-run.ts';
import { BrainError, type BrainClient } from './client.ts';
import type { WireList, WireSchedule } from './wire.ts';

export interface Log {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export interface RunnerOptions {
  client: BrainClient;
  syncMs: number;
  maxInFlight: number;
  catchUpMax: number;
  log: Log;
  /** Runs due at most this long ago when first seen are fired as on time (ms). */
  toleranceMs?: number;
  /** How long a fire is retried while the service cannot be reached (ms). */
  retryForMs?: number;
}

interface Entry {
  s: WireSchedule;
  version: number;
  /** The next run (µs) and its text, or null (none: a clocked schedule that ran, unreadable). */
  next: number | null;
}

interface HeapItem {
  at: number; // µs
  id: string;
  version: number;
}

/** A binary min-heap on `at`. */
class Heap {
  private a: HeapItem[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): HeapItem | undefined {
    return this.a[0];
  }
  push(x: HeapItem): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]!.at <= a[i]!.at) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): HeapItem | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]!.at < a[m]!.at) m = l;
        if (r < a.length && a[r]!.at < a[m]!.at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
  clear(): void {
    this.a = [];
  }
}

interface Pending {
  id: string;
  scheduledFor: string;
  firstTry: number; // ms
  attempt: number;
}

export interface RunnerStats {
  started_at: string;
  schedules: number;
  next_due_at: string | null;
  fires_sent: number;
  fires_accepted: number;
  duplicates: number;
  fire_errors: number;
  in_flight: number;
  queued: number;
  last_sync_at: string | null;
  last_sync_ok: boolean | null;
  last_error: string | null;
  syncs: number;
  /** Service-side firing delay (fired_at - scheduled_for) of recent accepted fires, ms. */
  jitter_ms: { count: number; p50: number | null; p99: number | null; max: number | null };
}

const nowUs = (): number => Date.now() * 1000;

export class SchedulerRunner {
  private readonly entries = new Map<string, Entry>();
  private readonly heap = new Heap();
  private token: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private syncTimer: ReturnType<typeof setTimeout> | null = null;
  private stopped = true;
  private queue: Pending[] = [];
  private inFlight = 0;
  private syncing = false;
  private readonly jitter: number[] = [];
  private readonly tolerance: number;
  private readonly retryFor: number;
  /** SVC_SCHEDULE_FIRE_BUFFER_SECONDS of the service (µs) once a sync said it: older runs are not caught up. */
  private fireBufferUs: number | null = null;
  readonly stats = {
    started_at: isoMicros(nowUs()),
    fires_sent: 0,
    fires_accepted: 0,
    duplicates: 0,
    fire_errors: 0,
    last_sync_at: null as string | null,
    last_sync_ok: null as boolean | null,
    last_error: null as string | null,
    syncs: 0,
  };
  /** Every accepted fire (schedule id, run, fired_at) for tests and the benchmark; off unless set. */
  onFire: ((f: { schedule_id: string; scheduled_for: string; fired_at: string; outcome: 'fired' | 'duplicate' }) => void) | null = null;

  constructor(private readonly o: RunnerOptions) {
    this.tolerance = (o.toleranceMs ?? 2000) * 1000;
    this.retryFor = o.retryForMs ?? 60_000;
  }

  /** Starts syncing and firing; resolves after the first sync attempt. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.syncLoop();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.timer = this.syncTimer = null;
  }

  /** Forget what was read: the next sync re-reads every schedule (restart, certificate reload). */
  resync(): void {
    this.token = null;
  }

  /** Waits until fires queued or in flight are done (shutdown), at most `ms`. */
  async drain(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while ((this.queue.length > 0 || this.inFlight > 0) && Date.now() < until) await Bun.sleep(20);
  }

  snapshot(): RunnerStats {
    const sorted = [...this.jitter].sort((a, b) => a - b);
    const q = (p: number) => (sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
    let next: number | null = null;
    for (const e of this.entries.values()) if (e.next !== null && (next === null || e.next < next)) next = e.next;
    return {
      ...this.stats,
      schedules: this.entries.size,
      next_due_at: next === null ? null : isoMicros(next),
      in_flight: this.inFlight,
      queued: this.queue.length,
      jitter_ms: { count: sorted.length, p50: q(0.5), p99: q(0.99), max: sorted.at(-1) ?? null },
    };
  }

  // --- syncing ---------------------------------------------------------------------------

  private async syncLoop(): Promise<void> {
    if (this.stopped) return;
    await this.syncOnce();
    if (!this.stopped) this.syncTimer = setTimeout(() => void this.syncLoop(), this.o.syncMs);
  }

  /** One sync: the list when its stamp changed, reconciled with what is held. */
  async syncOnce(): Promise<void> {
    if (this.syncing) return;
    this.syncing = true;
    try {
      const path = this.token ? `/schedules?token=${encodeURIComponent(this.token)}` : '/schedules';
      const list = await this.o.client.call<WireList>('GET', path);
      this.stats.syncs++;
      this.stats.last_sync_at = isoMicros(nowUs());
      if (this.stats.last_sync_ok === false) this.o.log.info({}, 'the service answers again');
      this.stats.last_sync_ok = true;
      if (typeof list.fire_buffer_seconds === 'number') this.fireBufferUs = list.fire_buffer_seconds * 1_000_000;
      if (list.changed && list.schedules) {
        this.reconcile(list.schedules);
        this.token = list.token;
      }
    } catch (e) {
      const first = this.stats.last_sync_ok !== false;
      this.stats.last_sync_ok = false;
      this.stats.last_error = (e as Error).message;
      if (first) this.o.log.warn({ err: (e as Error).message }, 'cannot read schedules from the service (retrying)');
    } finally {
      this.syncing = false;
    }
  }

  private reconcile(list: WireSchedule[]): void {
    const seen = new Set<string>();
    for (const s of list) {
      if (!s.is_enabled) continue;
      seen.add(s.id);
      const held = this.entries.get(s.id);
      if (held && held.s.updated_at === s.updated_at) {
        // Same definition: adopt the service's expectation when another scheduler moved it on.
        const theirs = s.next_run_at ? parseIsoMicros(s.next_run_at) : null;
        held.s = s;
        if (theirs !== null && held.next !== null && theirs > held.next) this.schedule(held, theirs);
        continue;
      }
      const entry: Entry = { s, version: (held?.version ?? 0) + 1, next: null };
      this.entries.set(s.id, entry);
      this.plan(entry);
    }
    for (const [id, e] of this.entries) {
      if (!seen.has(id)) {
        this.entries.delete(id);
        e.version++;
      }
    }
    this.arm();
  }

  /** The first run of a schedule just read: the service's expectation, with missed runs per catch_up. */
  private plan(e: Entry): void {
    const s = e.s;
    const now = nowUs();
    const expected = s.next_run_at ? parseIsoMicros(s.next_run_at) : null;
    if (expected === null) return this.schedule(e, this.after(s, now, null));
    if (expected >= now - this.tolerance) return this.schedule(e, expected);
    // Runs missed while no scheduler ran: the latest ones, and none the service would refuse as older
    // than its fire buffer (too_late).
    const want = s.catch_up === 'fire_all_missed' ? this.o.catchUpMax : s.catch_up === 'fire_one_missed' ? 1 : 0;
    const from = this.fireBufferUs === null ? expected : Math.max(expected, now - this.fireBufferUs);
    const toFire = want > 0 ? this.latestRuns(s, expected, from, now, want) : [];
    for (const at of toFire) this.enqueue(s.id, isoMicros(at));
    this.o.log.info({ schedule_id: s.id, name: s.name, missed_since: s.next_run_at, fired: toFire.length, catch_up: s.catch_up }, 'runs missed while no scheduler ran');
    this.schedule(e, this.after(s, now, s.kind === 'interval' ? expected : null));
  }

  /** The latest `n` runs in [from, now] (µs, oldest first), `anchor` being the expected run interval
   * grids count from. The window widens back from now, so a schedule missed for long costs about what
   * it fires, not every run it missed. */
  private latestRuns(s: WireSchedule, anchor: number, from: number, now: number, n: number): number[] {
    for (let width = 60_000_000; ; width *= 2) {
      const start = Math.max(from, now - width);
      const runs: number[] = [];
      for (let at = start <= anchor ? anchor : this.after(s, start - 1, anchor); at !== null && at <= now; at = this.after(s, at, anchor)) runs.push(at);
      if (runs.length >= n || start === from) return runs.slice(-n);
    }
  }

  private after(s: WireSchedule, afterUs: number, anchorUs: number | null): number | null {
    const next = nextRunAfter(s, afterUs, s.kind === 'interval' ? anchorUs : null);
    return next === null ? null : parseIsoMicros(next);
  }

  private schedule(e: Entry, at: number | null): void {
    e.version++;
    e.next = at;
    if (at !== null) this.heap.push({ at, id: e.s.id, version: e.version });
  }

  // --- firing ------------------------------------------------------------------------------

  private arm(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const top = this.heap.peek();
    if (!top) {
      this.timer = null;
      return;
    }
    const delay = Math.max(0, Math.min((top.at - nowUs()) / 1000, 30_000));
    this.timer = setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = null;
    const now = nowUs();
    for (let top = this.heap.peek(); top && top.at <= now + 1000; top = this.heap.peek()) {
      this.heap.pop();
      const e = this.entries.get(top.id);
      if (!e || e.version !== top.version) continue; // replaced or removed
      this.enqueue(e.s.id, isoMicros(top.at));
      this.schedule(e, this.after(e.s, top.at, top.at));
    }
    this.arm();
  }

  private enqueue(id: string, scheduledFor: string): void {
    this.queue.push({ id, scheduledFor, firstTry: Date.now(), attempt: 0 });
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.o.maxInFlight && this.queue.length > 0) {
      const p = this.queue.shift()!;
      this.inFlight++;
      void this.send(p).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async send(p: Pending): Promise<void> {
    this.stats.fires_sent++;
    let a: { status: number; body: any };
    try {
      a = await this.o.client.request('POST', '/fire', { schedule_id: p.id, scheduled_for: p.scheduledFor });
    } catch (e) {
      return this.retry(p, (e as Error).message);
    }
    if (a.status === 201) {
      this.stats.fires_accepted++;
      const firedAt = a.body?.fire?.fired_at as string | undefined;
      const due = parseIsoMicros(p.scheduledFor);
      const done = firedAt ? parseIsoMicros(firedAt) : null;
      if (due !== null && done !== null) {
        this.jitter.push((done - due) / 1000);
        if (this.jitter.length > 5000) this.jitter.splice(0, this.jitter.length - 5000);
      }
      this.onFire?.({ schedule_id: p.id, scheduled_for: p.scheduledFor, fired_at: firedAt ?? '', outcome: 'fired' });
      return;
    }
    const code = a.body?.error as string | undefined;
    if (a.status === 409 && code === 'already_fired') {
      this.stats.duplicates++;
      this.onFire?.({ schedule_id: p.id, scheduled_for: p.scheduledFor, fired_at: '', outcome: 'duplicate' });
      return;
    }
    if (a.status === 409 || a.status === 404) {
      // Disabled, deleted or moved to another scheduler since the last sync: read everything again.
      this.o.log.info({ schedule_id: p.id, scheduled_for: p.scheduledFor, error: code }, 'run not fired: the schedule changed on the service');
      this.resync();
      return;
    }
    if (a.status === 422 && code === 'too_early') {
      this.o.log.warn({ schedule_id: p.id, details: a.body?.details }, "run refused as too early: this host's clock is ahead of the service's");
      return this.retry(p, 'too_early', 500);
    }
    if (a.status >= 500 || a.status === 429) return this.retry(p, `HTTP ${a.status} ${code ?? ''}`);
    this.stats.fire_errors++;
    this.stats.last_error = `${p.id} ${p.scheduledFor}: HTTP ${a.status} ${code ?? ''} ${a.body?.message ?? ''}`.trim();
    this.o.log.error({ schedule_id: p.id, scheduled_for: p.scheduledFor, status: a.status, error: code, message: a.body?.message }, 'run refused by the service');
  }

  private retry(p: Pending, why: string, delayMs?: number): void {
    if (this.stopped || Date.now() - p.firstTry > this.retryFor) {
      this.stats.fire_errors++;
      this.stats.last_error = `${p.id} ${p.scheduledFor}: ${why}`;
      this.o.log.error({ schedule_id: p.id, scheduled_for: p.scheduledFor, err: why }, 'run not fired: the service could not be reached in time');
      return;
    }
    p.attempt++;
    const wait = delayMs ?? Math.min(5000, 250 * 2 ** (p.attempt - 1));
    if (p.attempt === 1) this.o.log.warn({ schedule_id: p.id, scheduled_for: p.scheduledFor, err: why }, 'fire failed; retrying');
    setTimeout(() => {
      this.queue.push(p);
      this.pump();
    }, wait);
  }
}

export { BrainError };
