// The rules of notification channels (a project's and a user's own),
// subscriptions and project defaults, the inbox and the delivery logs. Every
// change of a channel, default or subscription writes its audit row in the
// same transaction; a channel test writes its delivery row and audit row
// together once the attempt ended.
import type { Actor } from '../auth/actor.ts';
import type { Db, Executor, Tx } from '../db/connect.ts';
import { conflict, notFound, validationFailed, type FieldError } from '../http/errors.ts';
import { isoMicros, nowIso } from '../lib/clock.ts';
import { checkConfig, keepMaskedSecrets, maskConfig, typeNamed } from './config.ts';
import { deliveryRow, parseCursor, type Notifications } from './dispatch.ts';
import { checkFilters } from './filters.ts';
import { testPayload } from './fires.ts';
import type {
  ChannelPublic,
  ChannelTestResult,
  DefaultSubscriptionPublic,
  DeliveryPage,
  DeliveryPublic,
  InboxPage,
  SubscriptionPublic,
  Trigger,
} from './schemas.ts';
import {
  defaultFor,
  defaultRow,
  defaultsOf,
  deleteDefault,
  deleteProjectChannel,
  deleteProjectDeliveries,
  deleteSubscription,
  deleteUserChannel,
  deliveriesPage,
  forgetChannel,
  inboxPage,
  inboxRowOf,
  insertDefault,
  insertDeliveries,
  insertProjectChannel,
  insertSubscription,
  insertSubscriptionIfAbsent,
  insertUserChannel,
  markRead,
  projectChannel,
  projectChannels,
  projectChannelsById,
  subscription,
  subscriptionFor,
  subscriptionsOf,
  unreadCount,
  updateDefault,
  updateProjectChannel,
  updateSubscription,
  updateUserChannel,
  userChannel,
  userChannelNamed,
  userChannelsById,
  userChannelsOf,
  type ChannelRow,
  type DefaultRow,
  type DeliveryRow,
  type SubscriptionRow,
  type UserChannelRow,
} from './store.ts';
import type { Filters } from './tables.ts';

type Project = { id: string; slug: string };

// --- channels ---

const channelPublic = (c: ChannelRow | UserChannelRow): ChannelPublic => ({
  id: c.id,
  project_id: 'project_id' in c ? c.project_id : null,
  name: c.name,
  type: c.type as ChannelPublic['type'],
  config: maskConfig(c.type, c.config),
  is_active: c.is_active,
  created_at: c.created_at,
  updated_at: c.updated_at,
});

export interface ChannelInput {
  name: string;
  type: string;
  config: Record<string, unknown>;
  is_active?: boolean;
}

export interface ChannelPatchInput {
  name?: string;
  config?: Record<string, unknown>;
  is_active?: boolean;
}

export async function listProjectChannels(db: Db, projectId: string): Promise<ChannelPublic[]> {
  return (await projectChannels(db, projectId)).map(channelPublic);
}

async function projectChannelOr404(ex: Executor, projectId: string, id: string): Promise<ChannelRow> {
  const c = await projectChannel(ex, projectId, id);
  if (!c) throw notFound('channel');
  return c;
}

async function userChannelOr404(ex: Executor, userId: string, id: string): Promise<UserChannelRow> {
  const c = await userChannel(ex, userId, id);
  if (!c) throw notFound('channel');
  return c;
}

const channelAudit = (c: { id: string; name: string; type: string }) => ({ target_type: 'notification_channel', target_id: c.id, metadata: { name: c.name, type: c.type } });

export async function createProjectChannel(n: Notifications, project: Project, input: ChannelInput, actor: Actor): Promise<ChannelPublic> {
  const config = await checkConfig(input.type, input.config, n.sendOptions());
  const now = nowIso();
  const row: ChannelRow = { id: crypto.randomUUID(), project_id: project.id, name: input.name.trim(), type: input.type, config, is_active: input.is_active ?? true, created_at: now, updated_at: now };
  await n.deps.db.tx(async (tx) => {
    await insertProjectChannel(tx, row);
    await n.deps.audit.append(tx, { ...actor, action: 'notifications.channel.create', project_id: project.id, ...channelAudit(row) });
  });
  return channelPublic(row);
}

/** Copies one of the caller's personal channels (secrets included, server-side) into the project. */
export async function importFromUser(n: Notifications, project: Project, userId: string, input: { user_channel_id: string; name?: string }, actor: Actor): Promise<ChannelPublic> {
  // Another user's channel is as unknown as a missing one: its existence is not confirmed.
  const source = await userChannelOr404(n.deps.db, userId, input.user_channel_id);
  const now = nowIso();
  const row: ChannelRow = {
    id: crypto.randomUUID(),
    project_id: project.id,
    name: (input.name ?? `Copy of ${source.name}`).trim().slice(0, 200),
    type: source.type,
    config: source.config,
    is_active: true,
    created_at: now,
    updated_at: now,
  };
  await n.deps.db.tx(async (tx) => {
    await insertProjectChannel(tx, row);
    await n.deps.audit.append(tx, {
      ...actor,
      action: 'notifications.channel.import_from_user',
      project_id: project.id,
      ...channelAudit(row),
      metadata: { name: row.name, type: row.type, user_channel_id: source.id },
    });
  });
  return channelPublic(row);
}

/** A PATCH's changes: the config re-checked whole, a masked secret sent back keeps the stored one. */
async function channelChanges(n: Notifications, stored: ChannelRow | UserChannelRow, patch: ChannelPatchInput): Promise<Partial<ChannelRow>> {
  const changes: Partial<ChannelRow> = { updated_at: nowIso() };
  if (patch.name !== undefined) changes.name = patch.name.trim();
  if (patch.is_active !== undefined) changes.is_active = patch.is_active;
  if (patch.config !== undefined) changes.config = await checkConfig(stored.type, keepMaskedSecrets(stored.type, patch.config, stored.config), n.sendOptions());
  return changes;
}

export async function patchProjectChannel(n: Notifications, project: Project, id: string, patch: ChannelPatchInput, actor: Actor): Promise<ChannelPublic> {
  const stored = await projectChannelOr404(n.deps.db, project.id, id);
  const changes = await channelChanges(n, stored, patch);
  await n.deps.db.tx(async (tx) => {
    await updateProjectChannel(tx, id, changes);
    await n.deps.audit.append(tx, {
      ...actor,
      action: 'notifications.channel.update',
      project_id: project.id,
      ...channelAudit(stored),
      metadata: { name: stored.name, type: stored.type, changed: Object.keys(patch) },
    });
  });
  return channelPublic({ ...stored, ...changes });
}

export async function removeProjectChannel(n: Notifications, project: Project, id: string, actor: Actor): Promise<void> {
  await n.deps.db.tx(async (tx) => {
    const stored = await projectChannelOr404(tx, project.id, id);
    await deleteProjectChannel(tx, id);
    await forgetChannel(tx, 'project_channel_ids', id, nowIso());
    await n.deps.audit.append(tx, { ...actor, action: 'notifications.channel.delete', project_id: project.id, ...channelAudit(stored) });
  });
}

export async function listUserChannels(db: Db, userId: string): Promise<ChannelPublic[]> {
  return (await userChannelsOf(db, userId)).map(channelPublic);
}

async function uniqueUserChannelName(ex: Executor, userId: string, name: string, except?: string): Promise<void> {
  const same = await userChannelNamed(ex, userId, name);
  if (same && same.id !== except) throw conflict('you have a channel of that name already', { name }, 'name_taken');
}

async function insertUserChannelAudited(n: Notifications, row: UserChannelRow, actor: Actor, action: string, extra: Record<string, unknown> = {}): Promise<ChannelPublic> {
  await n.deps.db.tx(async (tx) => {
    await uniqueUserChannelName(tx, row.user_id, row.name);
    await insertUserChannel(tx, row);
    await n.deps.audit.append(tx, { ...actor, action, ...channelAudit(row), metadata: { name: row.name, type: row.type, ...extra } });
  });
  return channelPublic(row);
}

export async function createUserChannel(n: Notifications, userId: string, input: ChannelInput, actor: Actor): Promise<ChannelPublic> {
  const config = await checkConfig(input.type, input.config, n.sendOptions());
  const now = nowIso();
  const row: UserChannelRow = { id: crypto.randomUUID(), user_id: userId, name: input.name.trim(), type: input.type, config, is_active: input.is_active ?? true, created_at: now, updated_at: now };
  return insertUserChannelAudited(n, row, actor, 'user_notifications.channel.create');
}

/** Copies a project channel (secrets included, server-side) into the caller's own; the route has checked
 * that the caller is an admin of that project. */
export async function importFromProject(n: Notifications, project: Project, userId: string, input: { channel_id: string; name?: string }, actor: Actor): Promise<ChannelPublic> {
  const source = await projectChannelOr404(n.deps.db, project.id, input.channel_id);
  const now = nowIso();
  const row: UserChannelRow = {
    id: crypto.randomUUID(),
    user_id: userId,
    name: (input.name ?? `Copy of ${source.name}`).trim().slice(0, 200),
    type: source.type,
    config: source.config,
    is_active: true,
    created_at: now,
    updated_at: now,
  };
  return insertUserChannelAudited(n, row, { ...actor }, 'user_notifications.channel.import_from_project', { project_id: project.id, channel_id: source.id });
}

export async function patchUserChannel(n: Notifications, userId: string, id: string, patch: ChannelPatchInput, actor: Actor): Promise<ChannelPublic> {
  const stored = await userChannelOr404(n.deps.db, userId, id);
  const changes = await channelChanges(n, stored, patch);
  await n.deps.db.tx(async (tx) => {
    if (changes.name !== undefined) await uniqueUserChannelName(tx, userId, changes.name, id);
    await updateUserChannel(tx, id, changes);
    await n.deps.audit.append(tx, { ...actor, action: 'user_notifications.channel.update', ...channelAudit(stored), metadata: { name: stored.name, type: stored.type, changed: Object.keys(patch) } });
  });
  return channelPublic({ ...stored, ...changes });
}

export async function removeUserChannel(n: Notifications, userId: string, id: string, actor: Actor): Promise<void> {
  await n.deps.db.tx(async (tx) => {
    const stored = await userChannelOr404(tx, userId, id);
    await deleteUserChannel(tx, id);
    await forgetChannel(tx, 'user_channel_ids', id, nowIso());
    await n.deps.audit.append(tx, { ...actor, action: 'user_notifications.channel.delete', ...channelAudit(stored) });
  });
}

// --- channel tests ---

interface TestTarget {
  /** Where the delivery row and audit row belong. */
  project: Project | null;
  userId: string | null;
  channel: { kind: 'project' | 'user'; id: string; name: string; type: string; config: Record<string, unknown> };
  action: string;
}

/** Sends the test payload; the delivery row (trigger test.dispatch) and the audit row commit together. */
async function runTest(n: Notifications, t: TestTarget, actor: Actor): Promise<ChannelTestResult> {
  const now = nowIso();
  const payload = testPayload(t.project, now);
  const result = await typeNamed(t.channel.type).send(t.channel.config, payload, n.sendOptions());
  const row = deliveryRow(payload, { ...t.channel, userId: t.userId, subscriptionId: null, projectId: t.project?.id ?? null }, result, actor.user_id ?? null);
  await n.deps.db.tx(async (tx) => {
    await insertDeliveries(tx, [row]);
    await n.deps.audit.append(tx, {
      ...actor,
      action: t.action,
      result: result.success ? 'success' : 'failed',
      project_id: t.project?.id ?? null,
      target_type: 'notification_channel',
      target_id: t.channel.id || undefined,
      metadata: { type: t.channel.type, saved: t.channel.id !== '', status_code: result.status_code },
    });
  });
  return { success: result.success, status_code: result.status_code ?? 0, error: result.error, response_body: result.response_body };
}

/** An unsaved config to test; with `channel_id` (an edit of a saved channel) masked secrets are the stored ones. */
export interface UnsavedTest {
  type: string;
  config: Record<string, unknown>;
  channel_id?: string;
}

/** The config of an edit form as it would be saved. */
async function unsavedConfig(n: Notifications, unsaved: UnsavedTest, stored: () => Promise<ChannelRow | UserChannelRow>) {
  const base = unsaved.channel_id ? await stored() : null;
  const config = base && base.type === unsaved.type ? keepMaskedSecrets(unsaved.type, unsaved.config, base.config) : unsaved.config;
  return { id: '', name: '(unsaved)', type: unsaved.type, config: await checkConfig(unsaved.type, config, n.sendOptions()) };
}

export async function testProjectChannel(n: Notifications, project: Project, id: string | null, unsaved: UnsavedTest | null, actor: Actor) {
  const channel = id
    ? await projectChannelOr404(n.deps.db, project.id, id)
    : await unsavedConfig(n, unsaved!, () => projectChannelOr404(n.deps.db, project.id, unsaved!.channel_id!));
  return runTest(n, { project, userId: null, channel: { kind: 'project', ...pick(channel) }, action: 'notifications.channel.test' }, actor);
}

export async function testUserChannel(n: Notifications, userId: string, id: string | null, unsaved: UnsavedTest | null, actor: Actor) {
  const channel = id
    ? await userChannelOr404(n.deps.db, userId, id)
    : await unsavedConfig(n, unsaved!, () => userChannelOr404(n.deps.db, userId, unsaved!.channel_id!));
  return runTest(n, { project: null, userId, channel: { kind: 'user', ...pick(channel) }, action: 'user_notifications.channel.test' }, actor);
}

const pick = (c: { id: string; name: string; type: string; config: Record<string, unknown> }) => ({ id: c.id, name: c.name, type: c.type, config: c.config });

// --- subscriptions and defaults ---

const subscriptionPublic = (s: SubscriptionRow): SubscriptionPublic => ({
  id: s.id,
  project_id: s.project_id,
  trigger: s.trigger as Trigger,
  filters: s.filters,
  in_app: s.in_app,
  user_channel_ids: s.user_channel_ids,
  project_channel_ids: s.project_channel_ids,
  cooldown_seconds: s.cooldown_seconds,
  muted_until: s.muted_until,
  last_fired_at: s.last_fired_at,
  is_active: s.is_active,
  created_at: s.created_at,
  updated_at: s.updated_at,
});

const defaultPublic = (d: DefaultRow): DefaultSubscriptionPublic => ({
  id: d.id,
  project_id: d.project_id,
  trigger: d.trigger as Trigger,
  filters: d.filters,
  in_app: d.in_app,
  project_channel_ids: d.project_channel_ids,
  cooldown_seconds: d.cooldown_seconds,
  created_at: d.created_at,
  updated_at: d.updated_at,
});

/** The filter rules and the channel ids: project channels of this project, personal channels of this user. */
async function checkTargets(ex: Executor, projectId: string, input: { filters?: Filters; project_channel_ids?: string[]; user_channel_ids?: string[] }, userId?: string): Promise<void> {
  const errors: FieldError[] = input.filters ? checkFilters(input.filters) : [];
  if (input.project_channel_ids?.length) {
    const found = new Set((await projectChannelsById(ex, input.project_channel_ids)).filter((c) => c.project_id === projectId).map((c) => c.id));
    input.project_channel_ids.forEach((id, i) => {
      if (!found.has(id)) errors.push({ path: `/project_channel_ids/${i}`, message: 'not a channel of this project' });
    });
  }
  if (input.user_channel_ids?.length) {
    const found = new Set((await userChannelsById(ex, input.user_channel_ids)).filter((c) => c.user_id === userId).map((c) => c.id));
    input.user_channel_ids.forEach((id, i) => {
      if (!found.has(id)) errors.push({ path: `/user_channel_ids/${i}`, message: 'not one of your channels' });
    });
  }
  if (errors.length > 0) throw validationFailed(errors);
}

/** `muted_until` as stored: microsecond UTC text (sorts with the rest), or null. */
function mutedUntil(text: string | null | undefined): string | null | undefined {
  if (text === undefined || text === null) return text;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw validationFailed([{ path: '/muted_until', message: 'must be an ISO 8601 timestamp' }]);
  return isoMicros(ms * 1000);
}

export interface SubscriptionInput {
  project_id: string;
  trigger: Trigger;
  filters?: Filters;
  in_app?: boolean;
  user_channel_ids?: string[];
  project_channel_ids?: string[];
  cooldown_seconds?: number;
}

export type SubscriptionPatchInput = Partial<Omit<SubscriptionInput, 'project_id' | 'trigger'>> & { muted_until?: string | null; is_active?: boolean };

export async function listSubscriptions(db: Db, userId: string, projectId?: string): Promise<SubscriptionPublic[]> {
  return (await subscriptionsOf(db, userId, projectId)).map(subscriptionPublic);
}

/** Creates a subscription; the route has checked that the user may see the project. */
export async function createSubscription(n: Notifications, userId: string, input: SubscriptionInput, actor: Actor): Promise<SubscriptionPublic> {
  const now = nowIso();
  const row: SubscriptionRow = {
    id: crypto.randomUUID(),
    user_id: userId,
    project_id: input.project_id,
    trigger: input.trigger,
    filters: input.filters ?? {},
    in_app: input.in_app ?? true,
    user_channel_ids: input.user_channel_ids ?? [],
    project_channel_ids: input.project_channel_ids ?? [],
    cooldown_seconds: input.cooldown_seconds ?? 0,
    muted_until: null,
    last_fired_at: null,
    is_active: true,
    created_at: now,
    updated_at: now,
  };
  await n.deps.db.tx(async (tx) => {
    await checkTargets(tx, input.project_id, input, userId);
    if (await subscriptionFor(tx, userId, input.project_id, input.trigger)) {
      throw conflict('you are subscribed to that trigger in this project already; change that subscription', { trigger: input.trigger }, 'subscription_exists');
    }
    await insertSubscription(tx, row);
    await n.deps.audit.append(tx, { ...actor, action: 'subscription.created', project_id: row.project_id, target_type: 'subscription', target_id: row.id, metadata: { trigger: row.trigger } });
  });
  return subscriptionPublic(row);
}

export async function patchSubscription(n: Notifications, userId: string, id: string, patch: SubscriptionPatchInput, actor: Actor): Promise<SubscriptionPublic> {
  return n.deps.db.tx(async (tx) => {
    const stored = await subscription(tx, userId, id);
    if (!stored) throw notFound('subscription');
    await checkTargets(tx, stored.project_id, patch, userId);
    const { muted_until, ...rest } = patch;
    const changes: Partial<SubscriptionRow> = { ...rest, updated_at: nowIso() };
    const muted = mutedUntil(muted_until);
    if (muted !== undefined) changes.muted_until = muted;
    await updateSubscription(tx, id, changes);
    await n.deps.audit.append(tx, {
      ...actor,
      action: 'subscription.updated',
      project_id: stored.project_id,
      target_type: 'subscription',
      target_id: id,
      metadata: { trigger: stored.trigger, changed: Object.keys(patch) },
    });
    return subscriptionPublic({ ...stored, ...changes });
  });
}

export async function removeSubscription(n: Notifications, userId: string, id: string, actor: Actor): Promise<void> {
  await n.deps.db.tx(async (tx) => {
    const stored = await subscription(tx, userId, id);
    if (!stored) throw notFound('subscription');
    await deleteSubscription(tx, id);
    await n.deps.audit.append(tx, { ...actor, action: 'subscription.deleted', project_id: stored.project_id, target_type: 'subscription', target_id: id, metadata: { trigger: stored.trigger } });
  });
}

export async function listDefaults(db: Db, projectId: string): Promise<DefaultSubscriptionPublic[]> {
  return (await defaultsOf(db, projectId)).map(defaultPublic);
}

export type DefaultInput = Omit<SubscriptionInput, 'project_id' | 'user_channel_ids'>;

export async function createDefault(n: Notifications, project: Project, input: DefaultInput, actor: Actor): Promise<DefaultSubscriptionPublic> {
  const now = nowIso();
  const row: DefaultRow = {
    id: crypto.randomUUID(),
    project_id: project.id,
    trigger: input.trigger,
    filters: input.filters ?? {},
    in_app: input.in_app ?? true,
    project_channel_ids: input.project_channel_ids ?? [],
    cooldown_seconds: input.cooldown_seconds ?? 0,
    created_at: now,
    updated_at: now,
  };
  await n.deps.db.tx(async (tx) => {
    await checkTargets(tx, project.id, input);
    if (await defaultFor(tx, project.id, input.trigger)) throw conflict('the project has a default for that trigger already; change it', { trigger: input.trigger }, 'default_exists');
    await insertDefault(tx, row);
    await n.deps.audit.append(tx, { ...actor, action: 'notifications.default.create', project_id: project.id, target_type: 'notification_default', target_id: row.id, metadata: { trigger: row.trigger } });
  });
  return defaultPublic(row);
}

export async function patchDefault(n: Notifications, project: Project, id: string, patch: Partial<DefaultInput>, actor: Actor): Promise<DefaultSubscriptionPublic> {
  return n.deps.db.tx(async (tx) => {
    const stored = await defaultRow(tx, project.id, id);
    if (!stored) throw notFound('default');
    await checkTargets(tx, project.id, patch);
    const changes: Partial<DefaultRow> = { ...patch, updated_at: nowIso() };
    await updateDefault(tx, id, changes);
    await n.deps.audit.append(tx, {
      ...actor,
      action: 'notifications.default.update',
      project_id: project.id,
      target_type: 'notification_default',
      target_id: id,
      metadata: { trigger: stored.trigger, changed: Object.keys(patch) },
    });
    return defaultPublic({ ...stored, ...changes });
  });
}

export async function removeDefault(n: Notifications, project: Project, id: string, actor: Actor): Promise<void> {
  await n.deps.db.tx(async (tx) => {
    const stored = await defaultRow(tx, project.id, id);
    if (!stored) throw notFound('default');
    await deleteDefault(tx, id);
    await n.deps.audit.append(tx, { ...actor, action: 'notifications.default.delete', project_id: project.id, target_type: 'notification_default', target_id: id, metadata: { trigger: stored.trigger } });
  });
}

/** A new project starts with one default: members are told in the app when a task fails. */
export async function seedProjectDefaults(tx: Tx, projectId: string): Promise<void> {
  const now = nowIso();
  await insertDefault(tx, {
    id: crypto.randomUUID(),
    project_id: projectId,
    trigger: 'task.failed',
    filters: {},
    in_app: true,
    project_channel_ids: [],
    cooldown_seconds: 0,
    created_at: now,
    updated_at: now,
  });
}

/** The project's defaults become the new member's subscriptions (those they have not got already). */
export async function materializeDefaults(tx: Tx, projectId: string, userId: string): Promise<number> {
  const now = nowIso();
  let made = 0;
  for (const d of await defaultsOf(tx, projectId)) {
    const inserted = await insertSubscriptionIfAbsent(tx, {
      id: crypto.randomUUID(),
      user_id: userId,
      project_id: projectId,
      trigger: d.trigger,
      filters: d.filters,
      in_app: d.in_app,
      user_channel_ids: [],
      project_channel_ids: d.project_channel_ids,
      cooldown_seconds: d.cooldown_seconds,
      muted_until: null,
      last_fired_at: null,
      is_active: true,
      created_at: now,
      updated_at: now,
    });
    if (inserted) made++;
  }
  return made;
}

// --- inbox ---

const BAD_CURSOR = () => validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);

export async function inbox(db: Db, userId: string, q: { unread_only?: boolean; limit?: number; cursor?: string }): Promise<InboxPage> {
  const limit = q.limit ?? 50;
  const cursor = parseCursor(q.cursor);
  if (q.cursor && !cursor) throw BAD_CURSOR();
  const rows = await inboxPage(db, userId, { unreadOnly: q.unread_only ?? false, before: cursor && { createdAt: cursor.at, id: cursor.id }, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map((r) => ({
      id: r.id,
      project_id: r.project_id,
      project_slug: r.project_slug,
      subscription_id: r.subscription_id,
      trigger: r.trigger,
      title: r.title,
      body: r.body,
      data: r.data,
      read_at: r.read_at,
      created_at: r.created_at,
    })),
    next_cursor: rows.length > limit && last ? `${last.created_at}|${last.id}` : null,
    unread: await unreadCount(db, userId),
  };
}

export const unread = async (db: Db, userId: string) => ({ unread: await unreadCount(db, userId) });

export async function markOneRead(db: Db, userId: string, id: string): Promise<void> {
  await db.tx(async (tx) => {
    if (!(await inboxRowOf(tx, userId, id))) throw notFound('notification');
    await markRead(tx, userId, id, nowIso());
  });
}

export const markAllRead = async (db: Db, userId: string) => ({ updated: await db.tx((tx) => markRead(tx, userId, null, nowIso())) });

// --- delivery logs ---

const deliveryPublic = (d: DeliveryRow): DeliveryPublic => ({
  id: d.id,
  project_id: d.project_id,
  subscription_id: d.subscription_id,
  channel_id: d.channel_id,
  user_channel_id: d.user_channel_id,
  channel_name: d.channel_name,
  channel_type: d.channel_type,
  trigger: d.trigger,
  task_engine: d.task_engine,
  task_id: d.task_id,
  task_name: d.task_name,
  status: d.status,
  response_code: d.response_code,
  error: d.error,
  triggered_by_user_id: d.triggered_by_user_id,
  sent_at: d.sent_at,
});

export async function deliveries(db: Db, scope: { projectId: string } | { userId: string }, q: { limit?: number; cursor?: string }): Promise<DeliveryPage> {
  const limit = q.limit ?? 50;
  const cursor = parseCursor(q.cursor);
  if (q.cursor && !cursor) throw BAD_CURSOR();
  const rows = await deliveriesPage(db, scope, { before: cursor && { sentAt: cursor.at, id: cursor.id }, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(deliveryPublic), next_cursor: rows.length > limit && last ? `${last.sent_at}|${last.id}` : null };
}

/** Deletes a project's delivery rows (all, or those sent before `before`) with their audit row, atomically. */
export async function clearDeliveries(n: Notifications, project: Project, before: string | undefined, actor: Actor): Promise<{ deleted: number }> {
  let cutoff: string | null = null;
  if (before !== undefined) {
    const ms = Date.parse(before);
    if (Number.isNaN(ms)) throw validationFailed([{ location: 'query', path: '/before', message: 'must be an ISO 8601 timestamp' }]);
    cutoff = isoMicros(ms * 1000);
  }
  return n.deps.db.tx(async (tx) => {
    const deleted = await deleteProjectDeliveries(tx, project.id, cutoff);
    await n.deps.audit.append(tx, {
      ...actor,
      action: 'notifications.deliveries.clear',
      project_id: project.id,
      target_type: 'project',
      target_id: project.id,
      metadata: { actor: actor.user_id, count: deleted, cutoff },
    });
    return { deleted };
  });
}
