// /api/v1/projects: projects, memberships and invitations;
// /api/v1/invitations: previewing and accepting an invitation (anonymous).
import { Type } from '@sinclair/typebox';
import { Body } from '../http/schemas.ts';
import { Elysia, t } from 'elysia';
import { actorOf } from '../auth/actor.ts';
import { isSecureRequest, withCookies } from '../auth/cookies.ts';
import { authorize } from '../auth/guards.ts';
import { principalOf } from '../auth/principal.ts';
import { createSession } from '../auth/sessions.ts';
import { conflict, tooManyRequests } from '../http/errors.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import { requestIpOf } from '../http/request.ts';
import type { AppContext } from '../server/context.ts';
import { assertEmail, insertPreparedUser, prepareUser, toUserPublic } from '../users/service.ts';
import {
  acceptInvitation,
  addMember,
  archiveProject,
  changeMemberRole,
  createProject,
  getProject,
  invite,
  listInvitations,
  listMembers,
  listProjects,
  liveInvitation,
  patchProject,
  previewInvitation,
  removeMember,
  revokeInvitation,
  type Role,
} from './service.ts';

const RoleSchema = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')]);
const Slug = t.Object({ slug: t.String({ minLength: 1, maxLength: 63 }) });

export const projectRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['projects'] } })
    .get(
      '/api/v1/projects',
      async ({ request, query }) => {
        const who = await authorize(ctx, request, { scope: 'projects:read' });
        return listProjects(ctx, who, query.include_archived === true && who.user.is_admin);
      },
      { query: t.Object({ include_archived: t.Optional(t.Boolean()) }), detail: { summary: 'Projects the caller may see (all of them for administrators)' } },
    )
    .post(
      '/api/v1/projects',
      async ({ request, body, set }) => {
        const who = await authorize(ctx, request, { admin: true });
        set.status = 201;
        return createProject(ctx, body, actorOf(ctx, request, who));
      },
      {
        body: Body({
          slug: Type.String({ minLength: 2, maxLength: 63 }),
          name: Type.String({ minLength: 1, maxLength: 200 }),
          description: Type.Optional(Type.String({ maxLength: 2000 })),
        }),
      },
    )
    .get('/api/v1/projects/:slug', async ({ request, params }) => getProject(ctx, await authorize(ctx, request, { scope: 'projects:read' }), params.slug), {
      params: Slug,
    })
    .patch(
      '/api/v1/projects/:slug',
      async ({ request, params, body }) => {
        const who = await authorize(ctx, request);
        return patchProject(ctx, who, params.slug, body, actorOf(ctx, request, who));
      },
      {
        params: Slug,
        body: Body({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), description: Type.Optional(Type.String({ maxLength: 2000 })) }),
      },
    )
    .delete(
      '/api/v1/projects/:slug',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { admin: true, freshMfa: true });
        await archiveProject(ctx, who, params.slug, actorOf(ctx, request, who));
        return { archived: true };
      },
      { params: Slug, detail: { summary: 'Archive a project; its agents are refused from then on (403 project_inactive)' } },
    )
    // --- memberships ---
    .get('/api/v1/projects/:slug/memberships', async ({ request, params }) => listMembers(ctx, await authorize(ctx, request), params.slug), { params: Slug })
    .post(
      '/api/v1/projects/:slug/memberships',
      async ({ request, params, body, set }) => {
        const who = await authorize(ctx, request);
        set.status = 201;
        return addMember(ctx, who, params.slug, body, actorOf(ctx, request, who));
      },
      { params: Slug, body: Body({ user_id: Type.String({ format: 'uuid' }), role: RoleSchema }) },
    )
    .patch(
      '/api/v1/projects/:slug/memberships/:id',
      async ({ request, params, body }) => {
        const who = await authorize(ctx, request);
        return changeMemberRole(ctx, who, params.slug, params.id, body.role, actorOf(ctx, request, who));
      },
      { params: t.Object({ slug: t.String({ maxLength: 63 }), id: t.String({ format: 'uuid' }) }), body: Body({ role: RoleSchema }) },
    )
    .delete(
      '/api/v1/projects/:slug/memberships/:id',
      async ({ request, params }) => {
        const who = await authorize(ctx, request);
        await removeMember(ctx, who, params.slug, params.id, actorOf(ctx, request, who));
        return { removed: true };
      },
      { params: t.Object({ slug: t.String({ maxLength: 63 }), id: t.String({ format: 'uuid' }) }) },
    )
    // --- invitations ---
    .get('/api/v1/projects/:slug/invitations', async ({ request, params }) => listInvitations(ctx, await authorize(ctx, request), params.slug), { params: Slug })
    .post(
      '/api/v1/projects/:slug/invitations',
      async ({ request, params, body, set }) => {
        const who = await authorize(ctx, request);
        const email = assertEmail(body.email);
        set.status = 201;
        return invite(ctx, who, params.slug, { email, role: body.role ?? 'viewer', ttl_days: body.ttl_days ?? 7 }, actorOf(ctx, request, who));
      },
      {
        params: Slug,
        body: Body({
          email: Type.String({ minLength: 3, maxLength: 320 }),
          role: Type.Optional(RoleSchema),
          ttl_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 })),
        }),
        detail: { summary: 'Invite someone by e-mail; the token is in the answer once (share the accept link)' },
      },
    )
    .delete(
      '/api/v1/projects/:slug/invitations/:id',
      async ({ request, params }) => {
        const who = await authorize(ctx, request);
        await revokeInvitation(ctx, who, params.slug, params.id, actorOf(ctx, request, who));
        return { revoked: true };
      },
      { params: t.Object({ slug: t.String({ maxLength: 63 }), id: t.String({ format: 'uuid' }) }) },
    )
    .get(
      '/api/v1/invitations/preview',
      async ({ request, query }) => {
        throttle(ctx, request);
        return previewInvitation(ctx, query.token);
      },
      { query: t.Object({ token: t.String({ minLength: 10, maxLength: 200 }) }) },
    )
    .post(
      '/api/v1/invitations/accept',
      async ({ request, body }) => {
        throttle(ctx, request);
        // Someone already signed in as the invited address joins with their account.
        const who = await principalOf(ctx, request);
        const { invitation } = await liveInvitation(ctx.db, ctx, body.token);
        if (who && who.via === 'session' && who.user.email === invitation.email) {
          // Joining with a signed-in account is a session action: CSRF applies.
          await authorize(ctx, request);
          const { project } = await ctx.db.tx((tx) => acceptInvitation(tx, ctx, body.token, who.user.id, actorOf(ctx, request, who)));
          return { user: toUserPublic(who.user), project_slug: project.slug, role: invitation.role };
        }
        if (!body.password) throw conflict('set a password to create your account', {}, 'password_required');
        const prepared = await prepareUser(ctx, { email: invitation.email, password: body.password, display_name: body.display_name });
        const actor = actorOf(ctx, request, null);
        const result = await ctx.db.tx(async (tx) => {
          const user = await insertPreparedUser(tx, ctx, prepared, { ...actor, user_id: prepared.id });
          const { project } = await acceptInvitation(tx, ctx, body.token, prepared.id, { ...actor, user_id: prepared.id });
          const session = await createSession(tx, ctx, prepared, { remember: false, ip: actor.source_ip ?? null, userAgent: actor.user_agent ?? null, mfaVerified: false });
          return { user, project, session };
        });
        return withCookies(201, { user: result.user, project_slug: result.project.slug, role: invitation.role as Role }, result.session.cookies(isSecureRequest(ctx, request)));
      },
      {
        body: Body({
          token: Type.String({ minLength: 10, maxLength: 200 }),
          password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
          display_name: Type.Optional(Type.String({ maxLength: 200 })),
        }),
        detail: { summary: 'Accept an invitation: creates the account (signed in), or joins with the signed-in account of that address' },
      },
    );

/** Invitation preview and accept: 30 per address per minute. */
function throttle(ctx: AppContext, request: Request): void {
  const invitationAttempts = limiterFor(ctx, 'invitation', 30, 60_000);
  const key = requestIpOf(ctx, request) ?? 'unknown';
  if (!invitationAttempts.take(key)) throw tooManyRequests(invitationAttempts.retryAfterSeconds(key), 'too many invitation requests; try again in a minute');
}

