// /api/v1/projects: projects, memberships and invitations;
// /api/v1/invitations: previewing and accepting an invitation (anonymous).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { isSecureRequest, withCookies } from '../auth/cookies.ts';
import { authorize } from '../auth/guards.ts';
import { principalOf } from '../auth/principal.ts';
import { createSession } from '../auth/sessions.ts';
import { contract, handlerBounds } from '../http/contract.ts';
import { conflict, tooManyRequests } from '../http/errors.ts';
import { Body, Email, ProjectPath, ProjectSlug, Uuid } from '../http/schemas.ts';
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
  SLUG_RE,
  type Role,
} from './service.ts';
import { InvitationAccepted, InvitationMinted, InvitationPreview, InvitationPublic, Member, Membership, ProjectPublic, RoleSchema } from './schemas.ts';
import { NewPassword } from '../auth/passwords.ts';

const SlugId = Type.Object({ slug: ProjectSlug, id: Uuid });
// Project administration: the service checks the role again inside its transaction.
const PROJECT_ADMIN = { user: {}, project: 'admin' } as const;
const THROTTLED = { 429: ['rate_limited'] } as const;
const Archived = Type.Object({ archived: Type.Literal(true) }, { additionalProperties: false });
const Removed = Type.Object({ removed: Type.Literal(true) }, { additionalProperties: false });
const Revoked = Type.Object({ revoked: Type.Literal(true) }, { additionalProperties: false });

export const projectRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['projects'] } })
    .get(
      '/api/v1/projects',
      async ({ request, query }) => {
        const who = callerOf(request);
        return listProjects(ctx, who, query.include_archived === true && who.user.is_admin);
      },
      {
        ...guarded(ctx, {
          summary: 'Projects the caller may see (all of them for administrators)',
          access: { user: { scope: 'projects:read' } },
          query: Type.Object({ include_archived: Type.Optional(t.Boolean()) }),
          ok: Type.Array(ProjectPublic),
        }),
      },
    )
    .post(
      '/api/v1/projects',
      async ({ request, body, set }) => {
        set.status = 201;
        return createProject(ctx, body, actorOf(ctx, request, callerOf(request)));
      },
      {
        ...guarded(ctx, {
          summary: 'Create a project (administrators)',
          access: { user: { admin: true } },
          body: Body({
            slug: handlerBounds(Type.String({ minLength: 2, maxLength: 63 }), { pattern: SLUG_RE.source }),
            name: Type.String({ minLength: 1, maxLength: 200 }),
            description: Type.Optional(Type.String({ maxLength: 2000 })),
          }),
          ok: ProjectPublic,
          status: 201,
          errors: { 409: ['slug_taken'] },
        }),
      },
    )
    .get('/api/v1/projects/:slug', async ({ request, params }) => getProject(ctx, callerOf(request), params.slug), {
      ...guarded(ctx, { summary: 'One project, with the caller\'s role in it', access: { user: { scope: 'projects:read' }, project: 'viewer' }, params: ProjectPath, ok: ProjectPublic }),
    })
    .patch(
      '/api/v1/projects/:slug',
      async ({ request, params, body }) => {
        const who = callerOf(request);
        return patchProject(ctx, who, params.slug, body, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: 'Rename a project or change its description (project admin)',
          access: PROJECT_ADMIN,
          params: ProjectPath,
          body: Body({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), description: Type.Optional(Type.String({ maxLength: 2000 })) }),
          ok: ProjectPublic,
        }),
      },
    )
    .delete(
      '/api/v1/projects/:slug',
      async ({ request, params }) => {
        const who = callerOf(request);
        await archiveProject(ctx, who, params.slug, actorOf(ctx, request, who));
        return { archived: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Archive a project; its agents are refused from then on (403 project_inactive)',
          access: { user: { admin: true, freshMfa: true }, project: 'admin' },
          params: ProjectPath,
          ok: Archived,
          errors: { 409: ['last_project'] },
        }),
      },
    )
    // --- memberships ---
    .get('/api/v1/projects/:slug/memberships', async ({ request, params }) => listMembers(ctx, callerOf(request), params.slug), {
      ...guarded(ctx, { summary: 'Members of the project with their roles (project admin)', access: PROJECT_ADMIN, params: ProjectPath, ok: Type.Array(Member) }),
    })
    .post(
      '/api/v1/projects/:slug/memberships',
      async ({ request, params, body, set }) => {
        const who = callerOf(request);
        set.status = 201;
        return addMember(ctx, who, params.slug, body, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: 'Add an existing user to the project (project admin)',
          access: PROJECT_ADMIN,
          params: ProjectPath,
          body: Body({ user_id: Uuid, role: RoleSchema }),
          ok: Membership,
          status: 201,
          errors: { 404: ['not_found'], 409: ['already_member'] },
        }),
      },
    )
    .patch(
      '/api/v1/projects/:slug/memberships/:id',
      async ({ request, params, body }) => {
        const who = callerOf(request);
        return changeMemberRole(ctx, who, params.slug, params.id, body.role, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: "Change a member's role (project admin)",
          access: PROJECT_ADMIN,
          params: SlugId,
          body: Body({ role: RoleSchema }),
          ok: Membership,
          errors: { 404: ['not_found'], 409: ['last_project_admin'] },
        }),
      },
    )
    .delete(
      '/api/v1/projects/:slug/memberships/:id',
      async ({ request, params }) => {
        const who = callerOf(request);
        await removeMember(ctx, who, params.slug, params.id, actorOf(ctx, request, who));
        return { removed: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Remove a member (project admin)',
          access: PROJECT_ADMIN,
          params: SlugId,
          ok: Removed,
          errors: { 404: ['not_found'], 409: ['last_project_admin'] },
        }),
      },
    )
    // --- invitations ---
    .get('/api/v1/projects/:slug/invitations', async ({ request, params }) => listInvitations(ctx, callerOf(request), params.slug), {
      ...guarded(ctx, { summary: 'Pending invitations (project admin)', access: PROJECT_ADMIN, params: ProjectPath, ok: Type.Array(InvitationPublic) }),
    })
    .post(
      '/api/v1/projects/:slug/invitations',
      async ({ request, params, body, set }) => {
        const who = callerOf(request);
        const email = assertEmail(body.email);
        set.status = 201;
        return invite(ctx, who, params.slug, { email, role: body.role ?? 'viewer', ttl_days: body.ttl_days ?? 7 }, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: 'Invite someone by e-mail; the token is in the answer once (share the accept link)',
          access: PROJECT_ADMIN,
          params: ProjectPath,
          body: Body({
            email: Email,
            role: Type.Optional(RoleSchema),
            ttl_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 })),
          }),
          ok: InvitationMinted,
          status: 201,
          errors: { 409: ['already_member'] },
        }),
      },
    )
    .delete(
      '/api/v1/projects/:slug/invitations/:id',
      async ({ request, params }) => {
        const who = callerOf(request);
        await revokeInvitation(ctx, who, params.slug, params.id, actorOf(ctx, request, who));
        return { revoked: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Withdraw an invitation (project admin)',
          access: PROJECT_ADMIN,
          params: SlugId,
          ok: Revoked,
          errors: { 404: ['not_found'], 409: ['already_accepted'] },
        }),
      },
    )
    .get(
      '/api/v1/invitations/preview',
      async ({ request, query }) => {
        throttle(ctx, request);
        return previewInvitation(ctx, query.token);
      },
      {
        ...contract({
          summary: 'What an invitation token invites to (anonymous; 30 requests a minute per address)',
          access: { public: true },
          query: Type.Object({ token: Type.String({ minLength: 10, maxLength: 200 }) }),
          ok: InvitationPreview,
          errors: { 404: ['not_found'], ...THROTTLED },
        }),
      },
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
        ...contract({
          summary: 'Accept an invitation: creates the account (signed in, 201), or joins with the signed-in account of that address (200)',
          access: { public: true },
          body: Body({
            token: Type.String({ minLength: 10, maxLength: 200 }),
            password: Type.Optional(NewPassword(ctx.config.SVC_PASSWORD_MIN_LENGTH)),
            display_name: Type.Optional(Type.String({ maxLength: 200 })),
          }),
          ok: InvitationAccepted,
          status: 201,
          answers: { 200: InvitationAccepted },
          errors: { 401: ['mfa_required', 'invalid_api_key'], 403: ['csrf_failed'], 404: ['not_found'], 409: ['password_required', 'already_member', 'email_taken'], ...THROTTLED },
        }),
      },
    );

/** Invitation preview and accept: 30 per address per minute. */
function throttle(ctx: AppContext, request: Request): void {
  const invitationAttempts = limiterFor(ctx, 'invitation', 30, 60_000);
  const key = requestIpOf(ctx, request) ?? 'unknown';
  if (!invitationAttempts.take(key)) throw tooManyRequests(invitationAttempts.retryAfterSeconds(key), 'too many invitation requests; try again in a minute');
}

