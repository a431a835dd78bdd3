// /api/v1/user: the caller's own notifications: personal channels (no admin
// role needed; importing a project's channel needs its admin role),
// subscriptions (in projects the caller belongs to), the in-app inbox and the
// log of deliveries through their personal channels.
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { Success } from '../http/contract.ts';
import { notFound } from '../http/errors.ts';
import { Answer, Uuid } from '../http/schemas.ts';
import { findProjectById, projectAccess } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import {
  ChannelPatch,
  ChannelPublic,
  ChannelTestResult,
  DeliveryPage,
  ImportFromProject,
  InboxPage,
  NewChannel,
  NewSubscription,
  SubscriptionPatch,
  SubscriptionPublic,
  UnreadCount,
  UnsavedChannel,
} from './schemas.ts';
import {
  createSubscription,
  createUserChannel,
  deliveries,
  importFromProject,
  inbox,
  listSubscriptions,
  listUserChannels,
  markAllRead,
  markOneRead,
  patchSubscription,
  patchUserChannel,
  removeSubscription,
  removeUserChannel,
  testUserChannel,
  unread,
} from './service.ts';

const READ = { user: { scope: 'notifications:read' } } as const;
const WRITE = { user: { scope: 'notifications:write' } } as const;
const ChannelPath = Type.Object({ channel_id: Uuid });
const SubscriptionPath = Type.Object({ sub_id: Uuid });
const Paging = { limit: Type.Optional(t.Integer({ minimum: 1, maximum: 200 })), cursor: Type.Optional(Type.String({ maxLength: 128 })) };
const CONFIG_ERRORS = { 422: ['validation_failed'] } as const;
const Updated = Answer({ updated: Type.Integer() });

export const userNotificationRoutes = (ctx: AppContext) => {
  const n = ctx.notifications;
  const me = (request: Request) => {
    const who = callerOf(request);
    return { who, userId: who.user.id, actor: actorOf(ctx, request, who) };
  };
  return new Elysia({ prefix: '/api/v1/user', detail: { tags: ['notifications'] } })
    .get('/channels', ({ request }) => listUserChannels(ctx.db, me(request).userId), {
      ...guarded(ctx, { summary: 'Your personal channels (secret values masked)', access: READ, ok: Type.Array(ChannelPublic) }),
    })
    .post(
      '/channels',
      async ({ request, body, set }) => {
        const { userId, actor } = me(request);
        set.status = 201;
        return createUserChannel(n, userId, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Create a personal channel (its config checked as a project channel is); names are unique per user',
          access: WRITE,
          body: NewChannel,
          ok: ChannelPublic,
          status: 201,
          errors: { 409: ['name_taken'], ...CONFIG_ERRORS },
        }),
      },
    )
    .post(
      '/channels/import_from_project',
      async ({ request, body, set }) => {
        const { who, userId, actor } = me(request);
        const { project } = await projectAccess(ctx.db, who, body.project_slug, 'admin');
        set.status = 201;
        return importFromProject(n, project, userId, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: "Copy a project's channel (secrets included) into your own; needs the project's admin role",
          access: WRITE,
          body: ImportFromProject,
          ok: ChannelPublic,
          status: 201,
          errors: { 403: ['insufficient_role'], 404: ['not_found'], 409: ['name_taken'] },
        }),
      },
    )
    .post('/channels/test', ({ request, body }) => testUserChannel(n, me(request).userId, null, body, me(request).actor), {
      ...guarded(ctx, {
        summary: "Send a test notification through an unsaved config; with channel_id, masked secrets are that channel's",
        access: WRITE,
        body: UnsavedChannel,
        ok: ChannelTestResult,
        errors: { 404: ['not_found'], ...CONFIG_ERRORS },
      }),
    })
    .patch('/channels/:channel_id', ({ request, params, body }) => patchUserChannel(n, me(request).userId, params.channel_id, body, me(request).actor), {
      ...guarded(ctx, {
        summary: 'Change a personal channel; a secret sent back masked keeps its stored value',
        access: WRITE,
        params: ChannelPath,
        body: ChannelPatch,
        ok: ChannelPublic,
        errors: { 404: ['not_found'], 409: ['name_taken'], ...CONFIG_ERRORS },
      }),
    })
    .delete(
      '/channels/:channel_id',
      async ({ request, params }) => {
        await removeUserChannel(n, me(request).userId, params.channel_id, me(request).actor);
        return { success: true as const };
      },
      { ...guarded(ctx, { summary: 'Delete a personal channel', access: WRITE, params: ChannelPath, ok: Success, errors: { 404: ['not_found'] } }) },
    )
    .post('/channels/:channel_id/test', ({ request, params }) => testUserChannel(n, me(request).userId, params.channel_id, null, me(request).actor), {
      ...guarded(ctx, { summary: 'Send a test notification through a personal channel', access: WRITE, params: ChannelPath, ok: ChannelTestResult, errors: { 404: ['not_found'] } }),
    })
    // --- subscriptions ---
    .get('/subscriptions', ({ request, query }) => listSubscriptions(ctx.db, me(request).userId, query.project_id), {
      ...guarded(ctx, {
        summary: 'Your subscriptions, all or of one project',
        access: READ,
        query: Type.Object({ project_id: Type.Optional(Uuid) }),
        ok: Type.Array(SubscriptionPublic),
      }),
    })
    .post(
      '/subscriptions',
      async ({ request, body, set }) => {
        const { who, userId, actor } = me(request);
        // Only projects the caller may see: an unknown one and another's read the same.
        const project = await findProjectById(ctx.db, body.project_id);
        if (!project) throw notFound('project');
        await projectAccess(ctx.db, who, project.slug, 'viewer');
        set.status = 201;
        return createSubscription(n, userId, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Subscribe to a trigger in a project you belong to (one subscription per trigger and project)',
          access: WRITE,
          body: NewSubscription,
          ok: SubscriptionPublic,
          status: 201,
          errors: { 404: ['not_found'], 409: ['subscription_exists'] },
        }),
      },
    )
    .patch('/subscriptions/:sub_id', ({ request, params, body }) => patchSubscription(n, me(request).userId, params.sub_id, body, me(request).actor), {
      ...guarded(ctx, {
        summary: 'Change a subscription: filters, channels, cooldown, mute (muted_until) or pause (is_active)',
        access: WRITE,
        params: SubscriptionPath,
        body: SubscriptionPatch,
        ok: SubscriptionPublic,
        errors: { 404: ['not_found'] },
      }),
    })
    .delete(
      '/subscriptions/:sub_id',
      async ({ request, params }) => {
        await removeSubscription(n, me(request).userId, params.sub_id, me(request).actor);
        return { success: true as const };
      },
      { ...guarded(ctx, { summary: 'Remove a subscription', access: WRITE, params: SubscriptionPath, ok: Success, errors: { 404: ['not_found'] } }) },
    )
    // --- deliveries and the inbox ---
    .get('/deliveries', ({ request, query }) => deliveries(ctx.db, { userId: me(request).userId }, query), {
      ...guarded(ctx, { summary: 'Attempts to send through your personal channels, newest first', access: READ, query: Type.Object(Paging), ok: DeliveryPage }),
    })
    .get('/notifications', ({ request, query }) => inbox(ctx.db, me(request).userId, query), {
      ...guarded(ctx, {
        summary: 'Your in-app inbox, newest first',
        access: READ,
        query: Type.Object({ unread_only: Type.Optional(t.Boolean()), ...Paging }),
        ok: InboxPage,
      }),
    })
    .get('/notifications/unread-count', ({ request }) => unread(ctx.db, me(request).userId), {
      ...guarded(ctx, { summary: 'How many inbox rows are unread (the bell badge polls it)', access: READ, ok: UnreadCount }),
    })
    .post(
      '/notifications/:notification_id/read',
      async ({ request, params }) => {
        await markOneRead(ctx.db, me(request).userId, params.notification_id);
        return { success: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Mark one inbox row read',
          access: WRITE,
          params: Type.Object({ notification_id: Uuid }),
          ok: Success,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .post('/notifications/read-all', ({ request }) => markAllRead(ctx.db, me(request).userId), {
      ...guarded(ctx, { summary: 'Mark every inbox row read', access: WRITE, ok: Updated }),
    });
};
