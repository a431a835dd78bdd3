// The dispatcher: fires are queued by whoever causes them (after their own
// commit) and handled here, off their path. A batch of queued fires is
// evaluated against the active subscriptions of its project and trigger
// (filters, mutes, membership), each subscription's cooldown is claimed by a
// conditional update, the inbox rows are written, and then every channel
// named is sent to, at most SEND_CONCURRENCY at a time, each within its
// timeout; one delivery row per attempt. A dead receiver costs a failed row
// and a slot for its timeout, never the caller's time. Both waits are bounded:
// a full queue drops fires (counted and logged), and a send beyond
// SEND_BACKLOG is not attempted but logged as a failed delivery row (counted),
// so a slow receiver in a failure storm costs rows, not memory. Fires live in
// memory only: a process that dies between the commit and the send loses them.
import type { AuditService } from '../audit/service.ts';
import type { Config } from '../config/load.ts';
import type { Db, Executor } from '../db/connect.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { Resolver } from '../outbound/resolve.ts';
import { projectById } from '../projects/store.ts';
import { findTask } from '../tasks/service.ts';
import type { NotificationPayload, SendOptions, SendResult } from './channels/base.ts';
import { typeNamed } from './config.ts';
import { filtersMatch } from './filters.ts';
import { pathOf, payloadOf, type Fire } from './fires.ts';
import {
  claimCooldown,
  firingSubscriptions,
  stampFired,
  insertDeliveries,
  insertInboxRows,
  projectChannelsById,
  userChannelsById,
  type ChannelRow,
  type DeliveryRow,
  type InboxRow,
  type SubscriptionRow,
  type UserChannelRow,
} from './store.ts';

const log = logger('notifications');

/** Fires waiting to be handled; beyond this new ones are dropped. */
export const QUEUE_LIMIT = 10_000;
/** Fires handled together (one read of subscriptions per project and trigger, one transaction). */
const BATCH = 200;
const SEND_CONCURRENCY = 16;
/** Sends waiting for a slot or under way; beyond this a send is not attempted (a failed row says so). */
export const SEND_BACKLOG = 1000;
/** At shutdown: how long queued fires and waiting sends may still go out, and the margin after the last send's timeout. */
const STOP_GRACE_MS = 5000;
/** Delivery rows of sends ending within this long are written together. */
const LOG_FLUSH_MS = 50;
/** A loss (full queue, full backlog) is logged at most once in this long; its counter counts every one. */
const LOSS_WARNING_INTERVAL_MS = 10_000;
/** While agents' events are being stored (one commit in this long), fires wait... */
const INGEST_QUIET_MS = 25;
/** ...but never longer than this after they were queued. */
const MAX_DEFER_MS = 5000;

/** What the notification area needs of the service around it. */
export interface NotifyDeps {
  db: Db;
  audit: AuditService;
  config: Config;
  metrics: Metrics;
}

/** A send to one channel, and where its delivery row points. */
interface Target {
  kind: 'project' | 'user';
  id: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
  userId: string | null;
  subscriptionId: string;
}

function notificationMetrics(m: NotifyDeps['metrics']) {
  return {
    fired: m.counter('svc_notifications_fired_total', 'Triggers fired and evaluated, by trigger.', ['trigger']),
    cooled: m.counter('svc_notifications_cooldown_skipped_total', 'Subscription matches suppressed by their cooldown.'),
    dropped: m.counter('svc_notifications_dropped_total', 'Fires dropped because the dispatch queue was full or the service was stopping.'),
    backlogFull: m.counter('svc_notifications_backlog_full_total', 'Channel sends not attempted because SEND_BACKLOG sends were already waiting or under way.'),
    deliveries: m.counter('svc_notification_deliveries_total', 'Channel sends, by channel type and status.', ['type', 'status']),
  };
}

/** Logs a kind of loss at most once per LOSS_WARNING_INTERVAL_MS, with how many were lost since the last line:
 * under a storm a line per loss would flood the log (the counters count each one). */
function lossWarning(message: string): (lost: number, context: Record<string, unknown>) => void {
  let warnedAt = -Infinity;
  let since = 0;
  return (lost, context) => {
    since += lost;
    const now = performance.now();
    if (now - warnedAt < LOSS_WARNING_INTERVAL_MS) return;
    log.warn({ lost: since, ...context }, message);
    warnedAt = now;
    since = 0;
  };
}

/** What a send that never began leaves in the delivery log. */
const notSent = (why: string): SendResult => ({ success: false, status_code: null, error: `not sent: ${why}`, response_body: null });

export class Notifications {
  /** Tests only: the outbound client's stand-in DNS and a certificate to trust. */
  outbound: { resolver?: Resolver; ca?: string } = {};
  private readonly queue: { fire: Fire; at: number }[] = [];
  private draining: Promise<void> | null = null;
  private slots = SEND_CONCURRENCY;
  /** Sends waiting for a slot: resolved with true when they get one, false when the service gives up on them. */
  private readonly waiting: ((got: boolean) => void)[] = [];
  private readonly sends = new Set<Promise<void>>();
  private readonly logged: DeliveryRow[] = [];
  private flushing: Promise<void> | null = null;
  /** Set by stop(): fires are refused; once `abandoned`, sends not yet begun are not attempted. */
  private stopping = false;
  private abandoned = false;
  private readonly warnDropped = lossWarning('notification fires dropped: the queue is full or the service is stopping');
  private readonly warnBacklog = lossWarning('notification send backlog full: sends not attempted');
  /** When the ingest path last stored task events (performance.now()): fires wait while it is busy. */
  private ingestAt = -Infinity;

  // Registered up front so a scrape shows each counter at zero before the first fire.
  private readonly metrics: ReturnType<typeof notificationMetrics>;

  constructor(readonly deps: NotifyDeps) {
    deps.metrics.swallowedSites('notifications', ['dispatch', 'delivery_log']);
    this.metrics = notificationMetrics(deps.metrics);
  }

  /** The outbound policy every channel send and check runs under. */
  sendOptions(): SendOptions {
    return {
      allowHttp: this.deps.config.SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP,
      timeoutMs: this.deps.config.SVC_NOTIFICATIONS_TIMEOUT_SECONDS * 1000,
      ...this.outbound,
    };
  }

  /** Fires waiting, sends under way and the queue's bound (deep health). */
  status(): { queued: number; limit: number; sending: number } {
    return { queued: this.queue.length, limit: QUEUE_LIMIT, sending: this.sends.size };
  }

  /** Queues fires; returns at once. */
  fire(fires: readonly Fire[]): void {
    const room = this.stopping ? 0 : QUEUE_LIMIT - this.queue.length;
    if (fires.length > room) {
      const lost = fires.length - Math.max(0, room);
      this.metrics.dropped.inc(lost);
      this.warnDropped(lost, { queued: this.queue.length, stopping: this.stopping });
    }
    const at = performance.now();
    for (const fire of fires.slice(0, Math.max(0, room))) this.queue.push({ fire, at });
    if (!this.draining && this.queue.length > 0) this.draining = new Promise((resolve) => setImmediate(() => void this.drain().finally(resolve)));
  }

  /** Resolves once every queued fire is handled and every send has ended and is logged (tests, stop()). */
  async settled(): Promise<void> {
    while (this.draining || this.sends.size > 0 || this.flushing) {
      await this.draining;
      await Promise.all([...this.sends]);
      await this.flushing;
    }
  }

  /**
   * Shutdown, before the database closes: new fires are refused; queued ones are handled and their sends
   * made for up to STOP_GRACE_MS. Then fires still queued are dropped (counted) and sends still waiting
   * for a slot are logged as failed without being attempted; the sends under way end within their
   * timeout and every delivery row is written. Bounded: 2 * STOP_GRACE_MS plus one send timeout.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (await within(this.settled(), STOP_GRACE_MS)) return;
    this.abandoned = true;
    const dropped = this.queue.splice(0).length;
    if (dropped > 0) this.metrics.dropped.inc(dropped);
    const waiting = this.waiting.splice(0);
    for (const give of waiting) give(false);
    log.warn({ dropped_fires: dropped, abandoned_sends: waiting.length }, 'stopping: notification fires dropped and sends abandoned');
    // A send under way ends within its timeout (the channel contract); the last rows are flushed after it.
    if (!(await within(this.settled(), this.sendOptions().timeoutMs + STOP_GRACE_MS))) log.error({ sending: this.sends.size }, 'stopping: notification sends did not end in time');
  }

  /** The ingest path stored task events just now (called after its commit). */
  ingestCommitted(): void {
    this.ingestAt = performance.now();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // Storing agents' events comes first: while it is busy, fires wait (a little, at most MAX_DEFER_MS).
        while (performance.now() - this.ingestAt < INGEST_QUIET_MS && performance.now() - this.queue[0]!.at < MAX_DEFER_MS) {
          await new Promise((resolve) => setTimeout(resolve, INGEST_QUIET_MS));
        }
        const batch = this.queue.splice(0, BATCH).map((q) => q.fire);
        try {
          await this.handle(batch);
        } catch (e) {
          this.deps.metrics.swallowed('notifications', 'dispatch');
          log.error({ err: describeError(e), fires: batch.length }, 'notification dispatch failed; fires dropped');
        }
      }
    } finally {
      this.draining = null;
    }
  }

  /** Evaluates fires, claims cooldowns and writes inbox rows in one transaction, then sends. */
  private async handle(fires: Fire[]): Promise<void> {
    const now = nowIso();
    const m = this.metrics;
    const projects = new Map<string, { slug: string } | null>();
    const candidates = new Map<string, SubscriptionRow[]>();
    const matched: { fire: Fire; slug: string; subs: SubscriptionRow[] }[] = [];
    for (const queued of fires) {
      m.fired.inc({ trigger: queued.trigger });
      if (!projects.has(queued.projectId)) {
        const p = await projectById(this.deps.db, queued.projectId);
        projects.set(queued.projectId, p?.is_active ? { slug: p.slug } : null);
      }
      const project = projects.get(queued.projectId);
      if (!project) continue;
      const key = `${queued.projectId}\u0000${queued.trigger}`;
      if (!candidates.has(key)) candidates.set(key, await firingSubscriptions(this.deps.db, queued.projectId, queued.trigger, now));
      // Most fires have no one listening (every finished task fires): those cost no read of their task.
      const listening = candidates.get(key)!;
      if (listening.length === 0) continue;
      const fire = await withTaskRow(this.deps.db, queued);
      const facts = { task_name: fire.task?.name ?? null, priority: fire.task?.priority ?? null };
      const subs = listening.filter((s) => filtersMatch(s.filters, facts));
      if (subs.length > 0) matched.push({ fire, slug: project.slug, subs });
    }
    if (matched.length === 0) return;

    const publicUrl = this.deps.config.SVC_PUBLIC_URL;
    // Each subscription once per batch: its fires here share one moment, so a cooldown window
    // can only go to the first of them, and a subscription without one is stamped once.
    const bySub = new Map<string, { sub: SubscriptionRow; entries: number[] }>();
    matched.forEach(({ subs }, i) => {
      for (const sub of subs) {
        const seen = bySub.get(sub.id);
        if (seen) seen.entries.push(i);
        else bySub.set(sub.id, { sub, entries: [i] });
      }
    });
    const jobs: { payload: NotificationPayload; targets: Target[] }[] = [];
    const channels = await channelsOf(this.deps.db, [...bySub.values()].map((x) => x.sub));
    await this.deps.db.tx(async (tx) => {
      const winners = matched.map(() => [] as SubscriptionRow[]);
      const unlimited: string[] = [];
      const openBefore = (sub: SubscriptionRow) => isoMicros(nowMicros() - sub.cooldown_seconds * 1_000_000);
      for (const { sub, entries } of bySub.values()) {
        if (sub.cooldown_seconds === 0) {
          unlimited.push(sub.id);
          for (const i of entries) winners[i]!.push(sub);
        } else if (await claimCooldown(tx, sub.id, now, openBefore(sub))) {
          winners[entries[0]!]!.push(sub);
          if (entries.length > 1) m.cooled.inc(entries.length - 1);
        } else m.cooled.inc(entries.length);
      }
      await stampFired(tx, unlimited, now);
      const inbox: InboxRow[] = [];
      for (const [i, { fire, slug }] of matched.entries()) {
        const won = winners[i]!;
        if (won.length === 0) continue;
        const payload = payloadOf(fire, slug, publicUrl);
        for (const sub of won.filter((s) => s.in_app)) inbox.push(inboxRow(sub, payload, pathOf(fire, slug), now));
        const targets = targetsOf(channels, fire.projectId, won);
        if (targets.length > 0) jobs.push({ payload, targets });
      }
      await insertInboxRows(tx, inbox);
    });
    for (const job of jobs) for (const target of job.targets) this.enqueue(job.payload, target);
  }

  /** Starts a send, or, with SEND_BACKLOG sends already pending, logs it as not attempted. */
  private enqueue(payload: NotificationPayload, target: Target): void {
    if (this.sends.size >= SEND_BACKLOG) {
      this.metrics.backlogFull.inc();
      this.warnBacklog(1, { pending: this.sends.size });
      void this.record(payload, target, notSent(`${SEND_BACKLOG} sends were already waiting (receivers slow or down)`));
      return;
    }
    const send = this.deliver(payload, target);
    this.sends.add(send);
    void send.finally(() => this.sends.delete(send));
  }

  /** Sends through one channel when a slot is free, and logs the attempt. */
  private async deliver(payload: NotificationPayload, target: Target): Promise<void> {
    let result: SendResult;
    if (!(await this.slot())) result = notSent('the service stopped first');
    else {
      try {
        result = await typeNamed(target.type).send(target.config, payload, this.sendOptions());
      } catch (e) {
        // send() never throws by contract; a bug must still leave a failed row, not a lost fire.
        result = { success: false, status_code: null, error: `internal error: ${describeError(e).message ?? 'send failed'}`, response_body: null };
      } finally {
        this.release();
      }
    }
    await this.record(payload, target, result);
  }

  /** Counts an attempt and queues its delivery row; resolves once the row is written (or its write failed). */
  private record(payload: NotificationPayload, target: Target, result: SendResult): Promise<void> {
    this.metrics.deliveries.inc({ type: target.type, status: result.success ? 'sent' : 'failed' });
    this.logged.push(deliveryRow(payload, target, result, null));
    return (this.flushing ??= this.flushLog());
  }

  /** Writes the delivery rows of sends that ended meanwhile, together (one commit for many attempts). */
  private async flushLog(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, LOG_FLUSH_MS));
    const rows = this.logged.splice(0);
    this.flushing = null;
    try {
      await this.deps.db.tx((tx) => insertDeliveries(tx, rows));
    } catch (e) {
      this.deps.metrics.swallowed('notifications', 'delivery_log');
      log.error({ err: describeError(e), rows: rows.length }, 'writing notification delivery rows failed');
    }
  }

  /** Waits for a send slot; false when the service stopped waiting for it (stop()). */
  private async slot(): Promise<boolean> {
    if (this.abandoned) return false;
    if (this.slots > 0) {
      this.slots--;
      return true;
    }
    return new Promise<boolean>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next(true);
    else this.slots++;
  }
}

/** Whether `work` ended within `ms` (it goes on either way). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A task fire with what the task's row knows and the event did not say (its name above all). */
async function withTaskRow(db: Db, fire: Fire): Promise<Fire> {
  const t = fire.task;
  if (!t) return fire;
  const row = await findTask(db, fire.projectId, t.engine, t.task_id);
  if (!row) return fire;
  return {
    ...fire,
    task: {
      ...t,
      name: row.name ?? t.name,
      queue: t.queue ?? row.queue,
      priority: t.priority ?? row.priority,
      exception: t.exception ?? row.exception,
      traceback: t.traceback ?? row.traceback,
    },
  };
}

function inboxRow(sub: SubscriptionRow, payload: NotificationPayload, path: string | null, now: string): InboxRow {
  return {
    id: crypto.randomUUID(),
    user_id: sub.user_id,
    project_id: sub.project_id,
    subscription_id: sub.id,
    trigger: payload.trigger,
    title: payload.title.slice(0, 500),
    body: payload.body,
    data: {
      path,
      task_id: payload.task_id,
      task_name: payload.task_name,
      engine: payload.engine,
      queue: payload.queue,
      priority: payload.priority,
      agent_id: payload.agent_id,
      schedule_id: payload.schedule_id,
    },
    read_at: null,
    created_at: now,
  };
}

interface Channels {
  project: Map<string, ChannelRow>;
  user: Map<string, UserChannelRow>;
}

/** The channels a batch's subscriptions name, read once for the batch. */
async function channelsOf(ex: Executor, subs: SubscriptionRow[]): Promise<Channels> {
  const projectIds = [...new Set(subs.flatMap((s) => s.project_channel_ids))];
  const userIds = [...new Set(subs.flatMap((s) => s.user_channel_ids))];
  return {
    project: new Map((await projectChannelsById(ex, projectIds)).map((c) => [c.id, c])),
    user: new Map((await userChannelsById(ex, userIds)).map((c) => [c.id, c])),
  };
}

/** The active channels the winning subscriptions name: a project channel once per fire however many
 * subscriptions name it; a personal channel only its owner's subscriptions may name. */
function targetsOf(channels: Channels, projectId: string, winners: SubscriptionRow[]): Target[] {
  const { project: projectRows, user: userRows } = channels;
  const out: Target[] = [];
  const seen = new Set<string>();
  for (const sub of winners) {
    for (const id of sub.project_channel_ids) {
      const c = projectRows.get(id);
      if (!c || !c.is_active || c.project_id !== projectId || seen.has(id)) continue;
      seen.add(id);
      out.push({ kind: 'project', id, name: c.name, type: c.type, config: c.config, userId: null, subscriptionId: sub.id });
    }
    for (const id of sub.user_channel_ids) {
      const c = userRows.get(id);
      if (!c || !c.is_active || c.user_id !== sub.user_id || seen.has(id)) continue;
      seen.add(id);
      out.push({ kind: 'user', id, name: c.name, type: c.type, config: c.config, userId: c.user_id, subscriptionId: sub.id });
    }
  }
  return out;
}

const MAX_ERROR = 1024;
const MAX_RESPONSE = 2048;

/** The delivery log row of one attempt (a fire's, or a channel test's with `triggeredBy`). */
export function deliveryRow(
  payload: NotificationPayload,
  target: Omit<Target, 'config' | 'subscriptionId'> & { subscriptionId: string | null; projectId?: string | null },
  result: SendResult,
  triggeredBy: string | null,
): DeliveryRow {
  const sentAt = nowIso();
  return {
    id: crypto.randomUUID(),
    project_id: target.projectId !== undefined ? target.projectId : payload.project_id || null,
    user_id: target.userId,
    subscription_id: target.subscriptionId,
    channel_id: target.kind === 'project' ? target.id || null : null,
    user_channel_id: target.kind === 'user' ? target.id || null : null,
    channel_name: target.name,
    channel_type: target.type,
    trigger: payload.trigger,
    task_engine: payload.engine,
    task_id: payload.task_id,
    task_name: payload.task_name,
    status: result.success ? 'sent' : 'failed',
    response_code: result.status_code,
    response_body: result.success ? null : (result.response_body?.slice(0, MAX_RESPONSE) ?? null),
    error: result.error?.slice(0, MAX_ERROR) ?? null,
    triggered_by_user_id: triggeredBy,
    sent_at: sentAt,
  };
}

/** Newest-first cursors of the inbox and delivery logs: `<timestamp>|<id>`. */
export function parseCursor(cursor: string | undefined): { at: string; id: string } | undefined {
  if (!cursor) return undefined;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)\|([0-9a-f-]{36})$/.exec(cursor);
  return m && parseIsoMicros(m[1]!) !== null ? { at: m[1]!, id: m[2]! } : undefined;
}
