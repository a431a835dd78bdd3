// /api/v1/projects/{slug}/notifications: the project's channels (listing for
// viewers; the rest for project admins), its default subscriptions and its
// delivery log (project admins). API keys with notifications:read / write.
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { Success } from '../http/contract.ts';
import { ProjectSlug, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import {
  ChannelPatch,
  ChannelPublic,
  ChannelTestResult,
  DefaultPatch,
  DefaultSubscriptionPublic,
  DeliveriesCleared,
  DeliveryPage,
  ImportFromUser,
  NewChannel,
  NewDefault,
  UnsavedChannel,
} from './schemas.ts';
import {
  clearDeliveries,
  createDefault,
  createProjectChannel,
  deliveries,
  importFromUser,
  listDefaults,
  listProjectChannels,
  patchDefault,
  patchProjectChannel,
  removeDefault,
  removeProjectChannel,
  testProjectChannel,
} from './service.ts';

const Path = Type.Object({ slug: ProjectSlug });
const ChannelPath = Type.Object({ slug: ProjectSlug, channel_id: Uuid });
const DefaultPath = Type.Object({ slug: ProjectSlug, default_id: Uuid });
const VIEW = { user: { scope: 'notifications:read' }, project: 'viewer' } as const;
const ADMIN_READ = { user: { scope: 'notifications:read' }, project: 'admin' } as const;
const ADMIN = { user: { scope: 'notifications:write' }, project: 'admin' } as const;
/** Saving or testing a config: a field of it failed its type's rules (422 names it). */
const CONFIG_ERRORS = { 422: ['validation_failed'] } as const;

export const notificationRoutes = (ctx: AppContext) => {
  const n = ctx.notifications;
  const who = (request: Request) => {
    const grant = grantOf(request);
    return { project: grant.project, actor: actorOf(ctx, request, grant.who), user: grant.who.user };
  };
  return new Elysia({ prefix: '/api/v1/projects/:slug/notifications', detail: { tags: ['notifications'] } })
    .get('/channels', ({ request }) => listProjectChannels(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: "The project's channels (secret values masked)", access: VIEW, params: Path, ok: Type.Array(ChannelPublic) }),
    })
    .post(
      '/channels',
      async ({ request, body, set }) => {
        const { project, actor } = who(request);
        set.status = 201;
        return createProjectChannel(n, project, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Create a channel; its config is checked for its type (outbound policy on every URL and SMTP host) before it is saved',
          access: ADMIN,
          params: Path,
          body: NewChannel,
          ok: ChannelPublic,
          status: 201,
          errors: CONFIG_ERRORS,
        }),
      },
    )
    .post(
      '/channels/import_from_user',
      async ({ request, body, set }) => {
        const { project, actor, user } = who(request);
        set.status = 201;
        return importFromUser(n, project, user.id, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: "Copy one of your personal channels (secrets included) into the project; another user's channel is not found",
          access: ADMIN,
          params: Path,
          body: ImportFromUser,
          ok: ChannelPublic,
          status: 201,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .post('/channels/test', ({ request, body }) => testProjectChannel(n, who(request).project, null, body, who(request).actor), {
      ...guarded(ctx, {
        summary:
          'Send a test notification through an unsaved config (not saved; a test.dispatch delivery row and an audit row are written); with channel_id, masked secrets are the saved channel\'s',
        access: ADMIN,
        params: Path,
        body: UnsavedChannel,
        ok: ChannelTestResult,
        errors: { 404: ['not_found'], ...CONFIG_ERRORS },
      }),
    })
    .patch(
      '/channels/:channel_id',
      ({ request, params, body }) => {
        const { project, actor } = who(request);
        return patchProjectChannel(n, project, params.channel_id, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Change a channel; a secret sent back masked keeps its stored value',
          access: ADMIN,
          params: ChannelPath,
          body: ChannelPatch,
          ok: ChannelPublic,
          errors: { 404: ['not_found'], ...CONFIG_ERRORS },
        }),
      },
    )
    .delete(
      '/channels/:channel_id',
      async ({ request, params }) => {
        const { project, actor } = who(request);
        await removeProjectChannel(n, project, params.channel_id, actor);
        return { success: true as const };
      },
      { ...guarded(ctx, { summary: 'Delete a channel (subscriptions naming it stop naming it)', access: ADMIN, params: ChannelPath, ok: Success, errors: { 404: ['not_found'] } }) },
    )
    .post('/channels/:channel_id/test', ({ request, params }) => testProjectChannel(n, who(request).project, params.channel_id, null, who(request).actor), {
      ...guarded(ctx, {
        summary: 'Send a test notification through a saved channel (a test.dispatch delivery row and an audit row are written)',
        access: ADMIN,
        params: ChannelPath,
        ok: ChannelTestResult,
        errors: { 404: ['not_found'] },
      }),
    })
    // --- defaults ---
    .get('/defaults', ({ request }) => listDefaults(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: "The project's default subscriptions (copied into a member's own when they join)", access: ADMIN_READ, params: Path, ok: Type.Array(DefaultSubscriptionPublic) }),
    })
    .post(
      '/defaults',
      async ({ request, body, set }) => {
        const { project, actor } = who(request);
        set.status = 201;
        return createDefault(n, project, body, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Add a default subscription (one per trigger)',
          access: ADMIN,
          params: Path,
          body: NewDefault,
          ok: DefaultSubscriptionPublic,
          status: 201,
          errors: { 409: ['default_exists'] },
        }),
      },
    )
    .patch(
      '/defaults/:default_id',
      ({ request, params, body }) => {
        const { project, actor } = who(request);
        return patchDefault(n, project, params.default_id, body, actor);
      },
      { ...guarded(ctx, { summary: 'Change a default subscription', access: ADMIN, params: DefaultPath, body: DefaultPatch, ok: DefaultSubscriptionPublic, errors: { 404: ['not_found'] } }) },
    )
    .delete(
      '/defaults/:default_id',
      async ({ request, params }) => {
        const { project, actor } = who(request);
        await removeDefault(n, project, params.default_id, actor);
        return { success: true as const };
      },
      { ...guarded(ctx, { summary: 'Remove a default subscription (members keep the subscriptions it gave them)', access: ADMIN, params: DefaultPath, ok: Success, errors: { 404: ['not_found'] } }) },
    )
    // --- delivery log ---
    .get('/deliveries', ({ request, query }) => deliveries(ctx.db, { projectId: grantOf(request).project.id }, query), {
      ...guarded(ctx, {
        summary: "Attempts to send through the project's channels, newest first (errors sanitised)",
        access: ADMIN_READ,
        params: Path,
        query: Type.Object({ limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })), cursor: Type.Optional(Type.String({ maxLength: 128 })) }),
        ok: DeliveryPage,
      }),
    })
    .delete(
      '/deliveries',
      ({ request, query }) => {
        const { project, actor } = who(request);
        return clearDeliveries(n, project, query.before, actor);
      },
      {
        ...guarded(ctx, {
          summary: 'Delete delivery rows (all, or those sent before `before`); the audit row notifications.deliveries.clear commits with them',
          access: ADMIN,
          params: Path,
          query: Type.Object({ before: Type.Optional(Type.String({ format: 'date-time' })) }),
          ok: DeliveriesCleared,
        }),
      },
    );
};
