// Queries of the notification tables, for both dialects.
import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql, type SQL } from 'drizzle-orm';
import { bulkWrite, type BulkWrite } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';

export type ChannelRow = typeof import('./tables.ts').notificationChannels.sqlite.$inferSelect;
export type UserChannelRow = typeof import('./tables.ts').userChannels.sqlite.$inferSelect;
export type SubscriptionRow = typeof import('./tables.ts').userSubscriptions.sqlite.$inferSelect;
export type DefaultRow = typeof import('./tables.ts').projectDefaultSubscriptions.sqlite.$inferSelect;
export type InboxRow = typeof import('./tables.ts').userNotifications.sqlite.$inferSelect;
export type DeliveryRow = typeof import('./tables.ts').notificationDeliveries.sqlite.$inferSelect;

// --- channels ---

export async function projectChannels(ex: Executor, projectId: string): Promise<ChannelRow[]> {
  const t = ex.t.notificationChannels;
  return ex.q.select().from(t).where(eq(t.project_id, projectId)).orderBy(asc(t.name), asc(t.id));
}

export async function projectChannel(ex: Executor, projectId: string, id: string): Promise<ChannelRow | null> {
  const t = ex.t.notificationChannels;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.id, id))))[0] ?? null;
}

export async function projectChannelsById(ex: Executor, ids: readonly string[]): Promise<ChannelRow[]> {
  if (ids.length === 0) return [];
  const t = ex.t.notificationChannels;
  return ex.q.select().from(t).where(inArray(t.id, [...ids]));
}

export async function insertProjectChannel(ex: Executor, row: ChannelRow): Promise<void> {
  await ex.q.insert(ex.t.notificationChannels).values(row);
}

export async function updateProjectChannel(ex: Executor, id: string, changes: Partial<ChannelRow>): Promise<void> {
  const t = ex.t.notificationChannels;
  await ex.q.update(t).set(changes).where(eq(t.id, id));
}

export async function deleteProjectChannel(ex: Executor, id: string): Promise<void> {
  const t = ex.t.notificationChannels;
  await ex.q.delete(t).where(eq(t.id, id));
}

export async function userChannelsOf(ex: Executor, userId: string): Promise<UserChannelRow[]> {
  const t = ex.t.userChannels;
  return ex.q.select().from(t).where(eq(t.user_id, userId)).orderBy(asc(t.name), asc(t.id));
}

export async function userChannel(ex: Executor, userId: string, id: string): Promise<UserChannelRow | null> {
  const t = ex.t.userChannels;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), eq(t.id, id))))[0] ?? null;
}

export async function userChannelsById(ex: Executor, ids: readonly string[]): Promise<UserChannelRow[]> {
  if (ids.length === 0) return [];
  const t = ex.t.userChannels;
  return ex.q.select().from(t).where(inArray(t.id, [...ids]));
}

export async function userChannelNamed(ex: Executor, userId: string, name: string): Promise<UserChannelRow | null> {
  const t = ex.t.userChannels;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), eq(t.name, name))))[0] ?? null;
}

export async function insertUserChannel(ex: Executor, row: UserChannelRow): Promise<void> {
  await ex.q.insert(ex.t.userChannels).values(row);
}

export async function updateUserChannel(ex: Executor, id: string, changes: Partial<UserChannelRow>): Promise<void> {
  const t = ex.t.userChannels;
  await ex.q.update(t).set(changes).where(eq(t.id, id));
}

export async function deleteUserChannel(ex: Executor, id: string): Promise<void> {
  const t = ex.t.userChannels;
  await ex.q.delete(t).where(eq(t.id, id));
}

// --- subscriptions and defaults ---

export async function subscriptionsOf(ex: Executor, userId: string, projectId?: string): Promise<SubscriptionRow[]> {
  const t = ex.t.userSubscriptions;
  const where = projectId ? and(eq(t.user_id, userId), eq(t.project_id, projectId)) : eq(t.user_id, userId);
  return ex.q.select().from(t).where(where).orderBy(asc(t.project_id), asc(t.trigger));
}

export async function subscription(ex: Executor, userId: string, id: string): Promise<SubscriptionRow | null> {
  const t = ex.t.userSubscriptions;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), eq(t.id, id))))[0] ?? null;
}

export async function subscriptionFor(ex: Executor, userId: string, projectId: string, trigger: string): Promise<SubscriptionRow | null> {
  const t = ex.t.userSubscriptions;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), eq(t.project_id, projectId), eq(t.trigger, trigger))))[0] ?? null;
}

export async function insertSubscription(ex: Executor, row: SubscriptionRow): Promise<void> {
  await ex.q.insert(ex.t.userSubscriptions).values(row);
}

/** Inserts unless the user already has a subscription to that trigger in that project; true when inserted. */
export async function insertSubscriptionIfAbsent(ex: Executor, row: SubscriptionRow): Promise<boolean> {
  const t = ex.t.userSubscriptions;
  const rows = await ex.q
    .insert(t)
    .values(row)
    .onConflictDoNothing({ target: [t.user_id, t.project_id, t.trigger] })
    .returning({ id: t.id });
  return rows.length === 1;
}

export async function updateSubscription(ex: Executor, id: string, changes: Partial<SubscriptionRow>): Promise<void> {
  const t = ex.t.userSubscriptions;
  await ex.q.update(t).set(changes).where(eq(t.id, id));
}

export async function deleteSubscription(ex: Executor, id: string): Promise<void> {
  const t = ex.t.userSubscriptions;
  await ex.q.delete(t).where(eq(t.id, id));
}

/** The active subscriptions a fire of `trigger` in the project may reach, with their users still members
 * (global administrators count as members of every project) and active, and not muted at `now`. */
export async function firingSubscriptions(ex: Executor, projectId: string, trigger: string, now: string): Promise<SubscriptionRow[]> {
  const s = ex.t.userSubscriptions;
  const u = ex.t.users;
  const m = ex.t.memberships;
  const rows = await ex.q
    .select({ sub: s })
    .from(s)
    .innerJoin(u, eq(u.id, s.user_id))
    .leftJoin(m, and(eq(m.user_id, s.user_id), eq(m.project_id, s.project_id)))
    .where(
      and(
        eq(s.project_id, projectId),
        eq(s.trigger, trigger),
        eq(s.is_active, true),
        eq(u.is_active, true),
        or(isNull(s.muted_until), lte(s.muted_until, now)),
        or(eq(u.is_admin, true), sql`${m.id} IS NOT NULL`),
      ),
    );
  return rows.map((r) => r.sub);
}

/** The cooldown claim: one conditional update, so of concurrent fires (any process, either database)
 * exactly one finds the window open and takes it. */
export async function claimCooldown(ex: Executor, id: string, now: string, openBefore: string): Promise<boolean> {
  const t = ex.t.userSubscriptions;
  const rows = await ex.q
    .update(t)
    .set({ last_fired_at: now })
    .where(and(eq(t.id, id), or(isNull(t.last_fired_at), lte(t.last_fired_at, openBefore))))
    .returning({ id: t.id });
  return rows.length === 1;
}

/** Records a fire of subscriptions without a cooldown (nothing to claim). */
export async function stampFired(ex: Executor, ids: readonly string[], now: string): Promise<void> {
  const t = ex.t.userSubscriptions;
  for (let i = 0; i < ids.length; i += 500) await ex.q.update(t).set({ last_fired_at: now }).where(inArray(t.id, ids.slice(i, i + 500)));
}

export async function defaultsOf(ex: Executor, projectId: string): Promise<DefaultRow[]> {
  const t = ex.t.projectDefaultSubscriptions;
  return ex.q.select().from(t).where(eq(t.project_id, projectId)).orderBy(asc(t.trigger));
}

export async function defaultRow(ex: Executor, projectId: string, id: string): Promise<DefaultRow | null> {
  const t = ex.t.projectDefaultSubscriptions;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.id, id))))[0] ?? null;
}

export async function defaultFor(ex: Executor, projectId: string, trigger: string): Promise<DefaultRow | null> {
  const t = ex.t.projectDefaultSubscriptions;
  return (await ex.q.select().from(t).where(and(eq(t.project_id, projectId), eq(t.trigger, trigger))))[0] ?? null;
}

export async function insertDefault(ex: Executor, row: DefaultRow): Promise<void> {
  await ex.q.insert(ex.t.projectDefaultSubscriptions).values(row);
}

export async function updateDefault(ex: Executor, id: string, changes: Partial<DefaultRow>): Promise<void> {
  const t = ex.t.projectDefaultSubscriptions;
  await ex.q.update(t).set(changes).where(eq(t.id, id));
}

export async function deleteDefault(ex: Executor, id: string): Promise<void> {
  const t = ex.t.projectDefaultSubscriptions;
  await ex.q.delete(t).where(eq(t.id, id));
}

/** Removes ids of a deleted channel from every subscription and default that names it. */
export async function forgetChannel(ex: Executor, column: 'project_channel_ids' | 'user_channel_ids', id: string, now: string): Promise<void> {
  const s = ex.t.userSubscriptions;
  const d = ex.t.projectDefaultSubscriptions;
  const named = (ids: string[]) => ids.includes(id);
  for (const row of await ex.q.select({ id: s.id, ids: s[column] }).from(s)) {
    if (named(row.ids)) await ex.q.update(s).set({ [column]: row.ids.filter((x) => x !== id), updated_at: now }).where(eq(s.id, row.id));
  }
  if (column === 'project_channel_ids') {
    for (const row of await ex.q.select({ id: d.id, ids: d.project_channel_ids }).from(d)) {
      if (named(row.ids)) await ex.q.update(d).set({ project_channel_ids: row.ids.filter((x) => x !== id), updated_at: now }).where(eq(d.id, row.id));
    }
  }
}

// --- inbox ---

const INBOX_WRITE: BulkWrite = {
  table: 'user_notifications',
  columns: ['id', 'user_id', 'project_id', 'subscription_id', 'trigger', 'title', 'body', 'data', 'read_at', 'created_at'],
  json: new Set(['data']),
  conflict: '',
};

/** Inbox rows in bulk (a fire reaches every subscriber: tens of rows at once, thousands in a burst). */
export async function insertInboxRows(ex: Executor, rows: InboxRow[]): Promise<void> {
  await bulkWrite(ex, INBOX_WRITE, rows);
}

/** Newest first, keyset on (created_at, id), with each row's project slug. */
export async function inboxPage(
  ex: Executor,
  userId: string,
  opts: { unreadOnly: boolean; before?: { createdAt: string; id: string }; limit: number },
): Promise<(InboxRow & { project_slug: string })[]> {
  const n = ex.t.userNotifications;
  const p = ex.t.projects;
  const where: (SQL | undefined)[] = [eq(n.user_id, userId)];
  if (opts.unreadOnly) where.push(isNull(n.read_at));
  if (opts.before) where.push(sql`(${n.created_at}, ${n.id}) < (${opts.before.createdAt}, ${opts.before.id})`);
  const rows = await ex.q
    .select({ row: n, project_slug: p.slug })
    .from(n)
    .innerJoin(p, eq(p.id, n.project_id))
    .where(and(...where))
    .orderBy(desc(n.created_at), desc(n.id))
    .limit(opts.limit);
  return rows.map((r) => ({ ...r.row, project_slug: r.project_slug }));
}

export async function unreadCount(ex: Executor, userId: string): Promise<number> {
  const n = ex.t.userNotifications;
  const [row] = await ex.q.select({ n: sql<number>`COUNT(*)` }).from(n).where(and(eq(n.user_id, userId), isNull(n.read_at)));
  return Number(row?.n ?? 0);
}

/** Marks one row (or, with id null, every unread row) of the user read; returns how many changed. */
export async function markRead(ex: Executor, userId: string, id: string | null, now: string): Promise<number> {
  const n = ex.t.userNotifications;
  const rows = await ex.q
    .update(n)
    .set({ read_at: now })
    .where(and(eq(n.user_id, userId), isNull(n.read_at), id === null ? undefined : eq(n.id, id)))
    .returning({ id: n.id });
  return rows.length;
}

export async function inboxRowOf(ex: Executor, userId: string, id: string): Promise<InboxRow | null> {
  const n = ex.t.userNotifications;
  return (await ex.q.select().from(n).where(and(eq(n.user_id, userId), eq(n.id, id))))[0] ?? null;
}

// --- deliveries ---

export async function insertDeliveries(ex: Executor, rows: DeliveryRow[]): Promise<void> {
  if (rows.length > 0) await ex.q.insert(ex.t.notificationDeliveries).values(rows);
}

/** Newest first, keyset on (sent_at, id): a project's log, or a user's (their personal channels). */
export async function deliveriesPage(
  ex: Executor,
  scope: { projectId: string } | { userId: string },
  opts: { before?: { sentAt: string; id: string }; limit: number },
): Promise<DeliveryRow[]> {
  const d = ex.t.notificationDeliveries;
  const where: (SQL | undefined)[] = ['projectId' in scope ? and(eq(d.project_id, scope.projectId), isNull(d.user_channel_id)) : eq(d.user_id, scope.userId)];
  if (opts.before) where.push(sql`(${d.sent_at}, ${d.id}) < (${opts.before.sentAt}, ${opts.before.id})`);
  return ex.q
    .select()
    .from(d)
    .where(and(...where))
    .orderBy(desc(d.sent_at), desc(d.id))
    .limit(opts.limit);
}

/** Deletes a project's deliveries (those through its own channels), all or those sent before `before`. */
export async function deleteProjectDeliveries(ex: Executor, projectId: string, before: string | null): Promise<number> {
  const d = ex.t.notificationDeliveries;
  const rows = await ex.q
    .delete(d)
    .where(and(eq(d.project_id, projectId), isNull(d.user_channel_id), before === null ? undefined : lt(d.sent_at, before)))
    .returning({ id: d.id });
  return rows.length;
}
