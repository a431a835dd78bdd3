import { col, defineTable } from '../db/define.ts';

/** A project's shared channels (project admins manage them; every member sees them, secrets masked). */
export const notificationChannels = defineTable('notification_channels', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  name: col.text('name').notNull(),
  type: col.text('type').notNull(),
  config: col.json<Record<string, unknown>>('config').notNull(),
  is_active: col.bool('is_active').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

/** A user's personal channels. */
export const userChannels = defineTable('user_channels', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  name: col.text('name').notNull(),
  type: col.text('type').notNull(),
  config: col.json<Record<string, unknown>>('config').notNull(),
  is_active: col.bool('is_active').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export interface Filters {
  priority?: ('critical' | 'high' | 'normal' | 'low')[];
  task_name?: string;
  task_name_pattern?: string;
}

/** What a user is told of, in one project: one row per (user, project, trigger). */
export const userSubscriptions = defineTable('user_subscriptions', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  project_id: col.text('project_id').notNull(),
  trigger: col.text('trigger').notNull(),
  filters: col.json<Filters>('filters').notNull(),
  in_app: col.bool('in_app').notNull(),
  user_channel_ids: col.json<string[]>('user_channel_ids').notNull(),
  project_channel_ids: col.json<string[]>('project_channel_ids').notNull(),
  cooldown_seconds: col.int('cooldown_seconds').notNull(),
  muted_until: col.ts('muted_until'),
  /** Claimed by one conditional update per fire: the cooldown's clock. */
  last_fired_at: col.ts('last_fired_at'),
  is_active: col.bool('is_active').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

/** A project's templates, copied into a member's subscriptions when they join. */
export const projectDefaultSubscriptions = defineTable('project_default_subscriptions', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  trigger: col.text('trigger').notNull(),
  filters: col.json<Filters>('filters').notNull(),
  in_app: col.bool('in_app').notNull(),
  project_channel_ids: col.json<string[]>('project_channel_ids').notNull(),
  cooldown_seconds: col.int('cooldown_seconds').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

/** The in-app inbox. */
export const userNotifications = defineTable('user_notifications', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  project_id: col.text('project_id').notNull(),
  subscription_id: col.text('subscription_id'),
  trigger: col.text('trigger').notNull(),
  title: col.text('title').notNull(),
  body: col.text('body').notNull(),
  data: col.json<Record<string, unknown>>('data').notNull(),
  read_at: col.ts('read_at'),
  created_at: col.ts('created_at').notNull(),
});

export type DeliveryStatus = 'sent' | 'failed';

/** One attempt to send through a channel (project or personal), including channel tests. */
export const notificationDeliveries = defineTable('notification_deliveries', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id'),
  /** The owner of the personal channel it went through (user delivery log). */
  user_id: col.text('user_id'),
  subscription_id: col.text('subscription_id'),
  channel_id: col.text('channel_id'),
  user_channel_id: col.text('user_channel_id'),
  channel_name: col.text('channel_name').notNull(),
  channel_type: col.text('channel_type').notNull(),
  trigger: col.text('trigger').notNull(),
  task_engine: col.text('task_engine'),
  task_id: col.text('task_id'),
  task_name: col.text('task_name'),
  status: col.text('status').$type<DeliveryStatus>().notNull(),
  response_code: col.int('response_code'),
  response_body: col.text('response_body'),
  error: col.text('error'),
  triggered_by_user_id: col.text('triggered_by_user_id'),
  sent_at: col.ts('sent_at').notNull(),
});
