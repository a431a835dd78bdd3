// The live stream's per-process hub: the dashboard connections this process
// holds, their subscriptions, and the fan-out of change notices to them.
//
// Changes arrive on the signal bus (channel `live`) from every process: the
// hub merges them per (type, project) over SVC_LIVE_COALESCE_MS (coalesce.ts)
// and sends each merged notice, serialised once, to the connections subscribed
// to that project and type. Access is checked when a project is subscribed and
// again when a signal says memberships, the user or the session changed (from
// the audit rows that record those changes, on any process), and every minute
// for every connection (lost signals, sessions that expired or idled out): a
// connection whose session ended is closed (4401), a subscription whose project
// is no longer readable is dropped (`unsubscribed`, access_lost).
import type { ServerWebSocket } from 'bun';
import type { Principal } from '../auth/principal.ts';
import { liveSessions } from '../auth/sessions.ts';
import { nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { findProjectById, listProjects, projectAccess, SLUG_RE } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import type { SignalBus } from '../signals/index.ts';
import { userById } from '../users/store.ts';
import { Coalescer, type Change } from './coalesce.ts';
import {
  LIVE_CLOSE,
  MAX_CLIENT_MESSAGE_BYTES,
  MAX_SUBSCRIPTIONS,
  NOTICE_TYPES,
  type ClientMessage,
  type LiveNotice,
  type NoticeType,
  type ServerMessage,
} from './protocol.ts';
import { LIVE_CHANNEL, type LiveSignal } from './publisher.ts';

const log = logger('live');

const SWEEP_MS = 5000;
const ACCESS_SWEEP_MS = 60_000;
/** A connection that has not opened this long after its upgrade is forgotten. */
const OPEN_WITHIN_MS = 10_000;
/** Past this many bytes buffered for a slow tab, notices are dropped until it drains (then `resync`). */
const LAG_BYTES = 256 * 1024;
const ALL_TYPES: ReadonlySet<NoticeType> = new Set(NOTICE_TYPES);

interface Subscription {
  /** The slug as subscribed, or `*`. */
  name: string;
  types: Set<NoticeType>;
  /** `*` only: every project (administrators) or these project ids. */
  all?: boolean;
  projects?: Set<string>;
}

interface Handlers {
  open(ws: ServerWebSocket<unknown>): void;
  message(ws: ServerWebSocket<unknown>, message: string | Buffer): void;
  close(ws: ServerWebSocket<unknown>, code: number, reason: string): void;
  drain(ws: ServerWebSocket<unknown>): void;
}

export class LiveConnection {
  ws: ServerWebSocket<unknown> | null = null;
  readonly userId: string;
  readonly sessionId: string;
  /** Subscriptions by project id, `*` for every readable project. */
  readonly subs = new Map<string, Subscription>();
  lastInbound = Date.now();
  readonly acceptedAt = Date.now();
  lagging = false;
  closed = false;

  constructor(
    private readonly hub: LiveHub,
    public who: Principal,
  ) {
    this.userId = who.user.id;
    this.sessionId = who.session?.id ?? '';
  }

  handlers(): Handlers {
    return {
      open: (ws) => this.hub.opened(this, ws),
      message: (_ws, message) => this.hub.received(this, message),
      close: () => this.hub.release(this),
      drain: () => this.drained(),
    };
  }

  send(message: ServerMessage | string): void {
    const ws = this.ws;
    if (!ws || this.closed || this.lagging) return;
    const written = ws.send(typeof message === 'string' ? message : JSON.stringify(message));
    // 0: the socket is gone; -1: queued behind backpressure. A tab far behind loses notices, then resyncs.
    if (written === 0) return;
    if (written === -1 && ws.getBufferedAmount() > LAG_BYTES) this.lagging = true;
  }

  private drained(): void {
    if (!this.lagging) return;
    this.lagging = false;
    this.send({ type: 'resync' });
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws?.close(code, reason);
    this.hub.release(this);
  }
}

export class LiveHub {
  private readonly connections = new Set<LiveConnection>();
  private readonly byUser = new Map<string, Set<LiveConnection>>();
  private readonly byProject = new Map<string, Set<LiveConnection>>();
  private readonly stars = new Set<LiveConnection>();
  private readonly slugs = new Map<string, string>();
  private readonly coalescer: Coalescer;
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private readonly unsubscribe: () => void;
  /** Notices sent to tabs (tests and the benchmark read it). */
  sent = 0;

  constructor(
    private readonly ctx: AppContext,
    bus: SignalBus,
  ) {
    this.coalescer = new Coalescer(ctx.config.SVC_LIVE_COALESCE_MS, (c) => this.fanOut(c));
    this.unsubscribe = bus.subscribe(LIVE_CHANNEL, (data) => this.signal(data as LiveSignal));
    const idle = setInterval(() => this.sweepIdle(), SWEEP_MS);
    const access = setInterval(() => void this.sweepAccess(), ACCESS_SWEEP_MS);
    idle.unref();
    access.unref();
    this.timers.push(idle, access);
  }

  /** Connections `userId` holds in this process (the per-user cap counts them). */
  countOf(userId: string): number {
    return this.byUser.get(userId)?.size ?? 0;
  }

  get size(): number {
    return this.connections.size;
  }

  /** Reserves a place for a connection about to be upgraded (counted against the cap at once). */
  accept(who: Principal): LiveConnection {
    const conn = new LiveConnection(this, who);
    this.connections.add(conn);
    let set = this.byUser.get(conn.userId);
    if (!set) this.byUser.set(conn.userId, (set = new Set()));
    set.add(conn);
    return conn;
  }

  opened(conn: LiveConnection, ws: ServerWebSocket<unknown>): void {
    conn.ws = ws;
    conn.lastInbound = Date.now();
    if (conn.closed) return void ws.close(LIVE_CLOSE.going, 'closed');
    conn.send({
      type: 'ready',
      worker: this.ctx.worker.index,
      idle_timeout_seconds: this.ctx.config.SVC_LIVE_IDLE_TIMEOUT_SECONDS,
      max_subscriptions: MAX_SUBSCRIPTIONS,
    });
  }

  release(conn: LiveConnection): void {
    conn.closed = true;
    if (!this.connections.delete(conn)) return;
    const set = this.byUser.get(conn.userId);
    set?.delete(conn);
    if (set?.size === 0) this.byUser.delete(conn.userId);
    for (const key of conn.subs.keys()) this.unindex(conn, key);
    conn.subs.clear();
  }

  received(conn: LiveConnection, raw: string | Buffer): void {
    if (conn.closed) return;
    conn.lastInbound = Date.now();
    const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.byteLength;
    let msg: ClientMessage;
    try {
      if (size > MAX_CLIENT_MESSAGE_BYTES) throw new Error('too large');
      msg = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8')) as ClientMessage;
      if (typeof msg !== 'object' || msg === null) throw new Error('not an object');
    } catch {
      return conn.close(LIVE_CLOSE.badMessage, 'messages are JSON objects of at most 4096 bytes');
    }
    switch (msg.type) {
      case 'ping':
        return conn.send({ type: 'pong' });
      case 'subscribe':
        return void this.subscribe(conn, msg).catch((e) => {
          log.error({ err: describeError(e), user_id: conn.userId }, 'a live subscription failed');
          conn.send({ type: 'error', code: 'not_found', message: 'the subscription failed; try again', project: String(msg.project) });
        });
      case 'unsubscribe':
        return this.unsubscribeName(conn, msg.project, 'requested');
      default:
        return conn.close(LIVE_CLOSE.badMessage, 'unknown message type');
    }
  }

  private async subscribe(conn: LiveConnection, msg: Extract<ClientMessage, { type: 'subscribe' }>): Promise<void> {
    const name = msg.project;
    const types = Array.isArray(msg.types) ? msg.types.filter((t): t is NoticeType => ALL_TYPES.has(t)) : [...NOTICE_TYPES];
    if (typeof name !== 'string' || (name !== '*' && !SLUG_RE.test(name)) || types.length === 0) {
      return conn.send({ type: 'error', code: 'bad_message', message: 'subscribe needs a project slug (or *) and known types', ...(typeof name === 'string' ? { project: name } : {}) });
    }
    const existing = [...conn.subs].find(([, s]) => s.name === name);
    if (!existing && conn.subs.size >= MAX_SUBSCRIPTIONS) {
      return conn.send({ type: 'error', code: 'too_many_subscriptions', message: `at most ${MAX_SUBSCRIPTIONS} subscriptions per connection`, project: name });
    }
    const sub: Subscription = { name, types: new Set(types) };
    let projectId: string | null = null;
    if (name === '*') {
      await this.fillStar(conn, sub);
    } else {
      try {
        const { project } = await projectAccess(this.ctx.db, conn.who, name, 'viewer');
        projectId = project.id;
        this.slugs.set(project.id, project.slug);
      } catch {
        // Unknown, archived or not a member: the same answer, so existence is not confirmed.
        return conn.send({ type: 'error', code: 'not_found', message: 'no such project, or you are not a member', project: name });
      }
    }
    if (conn.closed) return;
    const key = projectId ?? '*';
    if (existing && existing[0] !== key) this.unindex(conn, existing[0]);
    conn.subs.set(key, sub);
    this.index(conn, key);
    conn.send({ type: 'subscribed', project: name, project_id: projectId, types });
  }

  /** The projects a `*` subscription covers: all for administrators, else the user's (with their slugs). */
  private async fillStar(conn: LiveConnection, sub: Subscription): Promise<void> {
    const list = await listProjects(this.ctx, conn.who, false);
    for (const p of list) this.slugs.set(p.id, p.slug);
    sub.all = conn.who.user.is_admin;
    sub.projects = new Set(list.map((p) => p.id));
  }

  private unsubscribeName(conn: LiveConnection, name: unknown, reason: 'requested' | 'access_lost'): void {
    for (const [key, sub] of conn.subs) {
      if (sub.name !== name) continue;
      conn.subs.delete(key);
      this.unindex(conn, key);
      conn.send({ type: 'unsubscribed', project: sub.name, reason });
    }
  }

  private index(conn: LiveConnection, key: string): void {
    if (key === '*') return void this.stars.add(conn);
    let set = this.byProject.get(key);
    if (!set) this.byProject.set(key, (set = new Set()));
    set.add(conn);
  }

  private unindex(conn: LiveConnection, key: string): void {
    if (key === '*') return void this.stars.delete(conn);
    const set = this.byProject.get(key);
    set?.delete(conn);
    if (set?.size === 0) this.byProject.delete(key);
  }

  // --- changes --------------------------------------------------------------------

  private signal(s: LiveSignal): void {
    if (!s || typeof s !== 'object') return;
    if (s.k === 'change') {
      if (!ALL_TYPES.has(s.t) || !Array.isArray(s.ids)) return;
      // Nobody here listens to that project: nothing to merge or send.
      if (s.p !== null && !this.byProject.has(s.p) && this.stars.size === 0) return;
      if (s.p === null && this.stars.size === 0) return;
      this.coalescer.add(s.t, s.p, s.ids, s.more === true);
    } else if (s.k === 'access') {
      void this.accessChanged(s).catch((e) => log.error({ err: describeError(e) }, 'live access re-check failed'));
    }
  }

  private fanOut(c: Change): void {
    if (c.projectId !== null && !this.slugs.has(c.projectId)) {
      // A project this process has not named yet (an administrator's `*` subscription): read its slug first.
      void findProjectById(this.ctx.db, c.projectId).then(
        (p) => {
          if (p) this.slugs.set(p.id, p.slug);
          this.deliver(c, p?.slug ?? null);
        },
        () => this.deliver(c, null),
      );
      return;
    }
    this.deliver(c, c.projectId === null ? null : this.slugs.get(c.projectId)!);
  }

  private deliver(c: Change, slug: string | null): void {
    const notice: LiveNotice = { type: c.type, project: slug, project_id: c.projectId, ids: c.ids, ...(c.more ? { more: true } : {}), at: nowIso() };
    const text = JSON.stringify(notice);
    const direct = c.projectId === null ? undefined : this.byProject.get(c.projectId);
    for (const conn of direct ?? []) {
      if (conn.subs.get(c.projectId!)?.types.has(c.type)) {
        conn.send(text);
        this.sent++;
      }
    }
    for (const conn of this.stars) {
      if (c.projectId !== null && direct?.has(conn) && conn.subs.get(c.projectId)?.types.has(c.type)) continue; // sent above
      const star = conn.subs.get('*');
      if (!star?.types.has(c.type)) continue;
      const covered = c.projectId === null ? star.all === true : star.all === true || star.projects?.has(c.projectId) === true;
      if (!covered) continue;
      conn.send(text);
      this.sent++;
    }
  }

  // --- access ---------------------------------------------------------------------

  private async accessChanged(s: Extract<LiveSignal, { k: 'access' }>): Promise<void> {
    const users = new Set<string>();
    if (s.user) users.add(s.user);
    if (s.session) for (const conn of this.connections) if (conn.sessionId === s.session) users.add(conn.userId);
    if (s.project) {
      for (const conn of this.byProject.get(s.project) ?? []) users.add(conn.userId);
      for (const conn of this.stars) users.add(conn.userId);
    }
    for (const user of users) if (this.byUser.has(user)) await this.recheckUser(user);
  }

  /** Re-checks every connection of a user: the session still live (read only: the stream is not use that keeps
   * a session from idling out), the user active, and each subscribed project still readable. */
  async recheckUser(userId: string): Promise<void> {
    const conns = [...(this.byUser.get(userId) ?? [])];
    if (conns.length === 0) return;
    const user = await userById(this.ctx.db, userId);
    const sessions = user?.is_active ? await liveSessions(this.ctx.db, userId) : [];
    const now = nowMicros();
    const idleMicros = this.ctx.config.SVC_SESSION_IDLE_TIMEOUT_SECONDS * 1_000_000;
    for (const conn of conns) {
      if (conn.closed) continue;
      const s = sessions.find((row) => row.id === conn.sessionId);
      const ended =
        !user ||
        !s ||
        (!s.remember && parseIsoMicros(s.last_seen_at)! + idleMicros <= now) ||
        s.issued_at < user.password_changed_at;
      if (ended) {
        conn.close(LIVE_CLOSE.sessionEnded, 'session ended');
        continue;
      }
      conn.who = { ...conn.who, user, session: s };
      for (const [key, sub] of [...conn.subs]) {
        if (key === '*') {
          await this.fillStar(conn, sub);
          continue;
        }
        try {
          await projectAccess(this.ctx.db, conn.who, sub.name, 'viewer');
        } catch {
          if (conn.subs.get(key) === sub) this.unsubscribeName(conn, sub.name, 'access_lost');
        }
      }
    }
  }

  private sweepIdle(): void {
    const now = Date.now();
    const idleMs = this.ctx.config.SVC_LIVE_IDLE_TIMEOUT_SECONDS * 1000;
    for (const conn of [...this.connections]) {
      if (!conn.ws && now - conn.acceptedAt > OPEN_WITHIN_MS) this.release(conn);
      else if (conn.ws && now - conn.lastInbound > idleMs) conn.close(LIVE_CLOSE.idle, 'idle timeout');
    }
  }

  private async sweepAccess(): Promise<void> {
    for (const userId of [...this.byUser.keys()]) {
      try {
        await this.recheckUser(userId);
      } catch (e) {
        log.warn({ err: describeError(e).message }, 'live access sweep failed; next sweep tries again');
        return;
      }
    }
  }

  /** Closes every connection (1001) and stops. */
  close(): void {
    this.unsubscribe();
    for (const t of this.timers) clearInterval(t);
    this.coalescer.clear();
    for (const conn of [...this.connections]) conn.close(LIVE_CLOSE.going, 'server shutting down');
  }
}
