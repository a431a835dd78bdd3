// The shapes of the notification routes: answers (as the OpenAPI document and
// the dashboard read them) and request bodies.
import { Type, type Static } from '@sinclair/typebox';
import { AnyObject, Answer, Body, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { CHANNEL_TYPES } from './channels/base.ts';

/** The ten trigger keys of the specification: the only ones a subscription or default may name. */
export const TRIGGERS = [
  'task.failed',
  'task.succeeded',
  'task.retried',
  'agent.offline',
  'agent.online',
  'schedule.fire.failed',
  'schedule.fire.succeeded',
  'schedule.task_failed',
  'schedule.misfired',
  'schedule.circuit_breaker.tripped',
] as const;
export type Trigger = (typeof TRIGGERS)[number];
/** The trigger of channel tests in the delivery log. */
export const TEST_TRIGGER = 'test.dispatch';

const TriggerSchema = Type.Union(TRIGGERS.map((t) => Type.Literal(t)));
const ChannelType = Type.Union(CHANNEL_TYPES.map((t) => Type.Literal(t)));
export const PRIORITIES = ['critical', 'high', 'normal', 'low'] as const;

export const FiltersSchema = Type.Object(
  {
    priority: Type.Optional(Type.Array(Type.Union(PRIORITIES.map((p) => Type.Literal(p))), { maxItems: 4, uniqueItems: true })),
    task_name: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'substring of the task name' })),
    task_name_pattern: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'fnmatch glob: at most five * or ? wildcards and three [...] classes' }),
    ),
  },
  { additionalProperties: false, $id: 'NotificationFilters' },
);

const ChannelIds = Type.Array(Uuid, { maxItems: 64, uniqueItems: true });
const Cooldown = Type.Integer({ minimum: 0, maximum: 86400 });
/** A channel's config: checked by its type's rules before saving; 16 KiB at most. */
const Config = Type.Record(Type.String(), Type.Unknown(), { description: 'per type: see the specification; at most 16 KiB as JSON' });
const ChannelName = Type.String({ minLength: 1, maxLength: 200 });

export const ChannelPublic = Answer(
  {
    id: Uuid,
    /** Null for a personal channel. */
    project_id: Nullable(Uuid),
    name: Type.String(),
    type: ChannelType,
    config: Type.Record(Type.String(), Type.Unknown(), { description: 'secret values (smtp_pass, hmac_secret, bot_token, password, integration_key) masked' }),
    is_active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'ChannelPublic',
);
export type ChannelPublic = Static<typeof ChannelPublic>;

export const ChannelTestResult = Answer(
  {
    success: Type.Boolean(),
    status_code: Type.Integer({ description: "the receiver's HTTP status (SMTP: its reply code); 0 when none came" }),
    error: Nullable(Type.String()),
    response_body: Nullable(Type.String()),
  },
  'ChannelTestResult',
);
export type ChannelTestResult = Static<typeof ChannelTestResult>;

export const SubscriptionPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    trigger: TriggerSchema,
    filters: FiltersSchema,
    in_app: Type.Boolean(),
    user_channel_ids: Type.Array(Uuid),
    project_channel_ids: Type.Array(Uuid),
    cooldown_seconds: Type.Integer(),
    muted_until: Nullable(Timestamp),
    last_fired_at: Nullable(Timestamp),
    is_active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'SubscriptionPublic',
);
export type SubscriptionPublic = Static<typeof SubscriptionPublic>;

export const DefaultSubscriptionPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    trigger: TriggerSchema,
    filters: FiltersSchema,
    in_app: Type.Boolean(),
    project_channel_ids: Type.Array(Uuid),
    cooldown_seconds: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'DefaultSubscriptionPublic',
);
export type DefaultSubscriptionPublic = Static<typeof DefaultSubscriptionPublic>;

export const InboxItem = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    project_slug: Type.String(),
    subscription_id: Nullable(Uuid),
    trigger: Type.String(),
    title: Type.String(),
    body: Type.String(),
    data: AnyObject,
    read_at: Nullable(Timestamp),
    created_at: Timestamp,
  },
  'InboxItem',
);
export type InboxItem = Static<typeof InboxItem>;
export const InboxPage = Answer({ items: Type.Array(InboxItem), next_cursor: Nullable(Type.String()), unread: Type.Integer() }, 'InboxPage');
export type InboxPage = Static<typeof InboxPage>;
export const UnreadCount = Answer({ unread: Type.Integer() }, 'UnreadCount');

export const DeliveryPublic = Answer(
  {
    id: Uuid,
    project_id: Nullable(Uuid),
    subscription_id: Nullable(Uuid),
    channel_id: Nullable(Uuid),
    user_channel_id: Nullable(Uuid),
    channel_name: Type.String(),
    channel_type: Type.String(),
    trigger: Type.String(),
    task_engine: Nullable(Type.String()),
    task_id: Nullable(Type.String()),
    task_name: Nullable(Type.String()),
    status: Type.Union([Type.Literal('sent'), Type.Literal('failed')]),
    response_code: Nullable(Type.Integer()),
    error: Nullable(Type.String({ description: 'sanitised: no secret, token, URL path or resolved address' })),
    triggered_by_user_id: Nullable(Uuid),
    sent_at: Timestamp,
  },
  'DeliveryPublic',
);
export type DeliveryPublic = Static<typeof DeliveryPublic>;
export const DeliveryPage = Answer({ items: Type.Array(DeliveryPublic), next_cursor: Nullable(Type.String()) }, 'DeliveryPage');
export type DeliveryPage = Static<typeof DeliveryPage>;
export const DeliveriesCleared = Answer({ deleted: Type.Integer() }, 'DeliveriesCleared');

// --- request bodies ---

export const NewChannel = Body({ name: ChannelName, type: ChannelType, config: Config, is_active: Type.Optional(Type.Boolean()) });
export const ChannelPatch = Body({ name: Type.Optional(ChannelName), config: Type.Optional(Config), is_active: Type.Optional(Type.Boolean()) });
export const UnsavedChannel = Body({
  type: ChannelType,
  config: Config,
  channel_id: Type.Optional(Uuid),
});
export const ImportFromUser = Body({ user_channel_id: Uuid, name: Type.Optional(ChannelName) });
export const ImportFromProject = Body({ project_slug: Type.String({ minLength: 1, maxLength: 63 }), channel_id: Uuid, name: Type.Optional(ChannelName) });

export const NewDefault = Body({
  trigger: TriggerSchema,
  filters: Type.Optional(FiltersSchema),
  in_app: Type.Optional(Type.Boolean()),
  project_channel_ids: Type.Optional(ChannelIds),
  cooldown_seconds: Type.Optional(Cooldown),
});
export const DefaultPatch = Body({
  filters: Type.Optional(FiltersSchema),
  in_app: Type.Optional(Type.Boolean()),
  project_channel_ids: Type.Optional(ChannelIds),
  cooldown_seconds: Type.Optional(Cooldown),
});

export const NewSubscription = Body({
  project_id: Uuid,
  trigger: TriggerSchema,
  filters: Type.Optional(FiltersSchema),
  in_app: Type.Optional(Type.Boolean()),
  user_channel_ids: Type.Optional(ChannelIds),
  project_channel_ids: Type.Optional(ChannelIds),
  cooldown_seconds: Type.Optional(Cooldown),
});
export const SubscriptionPatch = Body({
  filters: Type.Optional(FiltersSchema),
  in_app: Type.Optional(Type.Boolean()),
  user_channel_ids: Type.Optional(ChannelIds),
  project_channel_ids: Type.Optional(ChannelIds),
  cooldown_seconds: Type.Optional(Cooldown),
  muted_until: Type.Optional(Nullable(Timestamp)),
  is_active: Type.Optional(Type.Boolean()),
});
