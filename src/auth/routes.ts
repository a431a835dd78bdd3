// /api/v1/auth: login and logout, the current user, own password and
// sessions, MFA; /api/v1/api-keys: own API keys. Browser sessions only
// (API keys are refused on all of these).
import { Type } from '@sinclair/typebox';
import { Body } from '../http/schemas.ts';
import { Elysia } from 'elysia';
import { notFound, unauthorized } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { findProjectById, listProjects, memberProjectIds } from '../projects/service.ts';
import { assertTimeZone, getUser, patchUser, setPassword, toUserPublic } from '../users/service.ts';
import { actorOf } from './actor.ts';
import { createApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
import { CSRF_COOKIE, SESSION_COOKIE, TRUST_COOKIE, clearCookie, isSecureRequest, readCookie, withCookies } from './cookies.ts';
import { authorize } from './guards.ts';
import { login } from './login.ts';
import {
  completeEnrolment,
  disableMfa,
  listTrustedDevices,
  mfaStatus,
  regenerateRecoveryCodes,
  revokeTrustedDevice,
  startEnrolment,
  verifySecondFactor,
} from './mfa.ts';
import { verifyPassword } from './passwords.ts';
import type { Principal } from './principal.ts';
import { ADMIN_ONLY_SCOPES, SCOPES } from './scopes.ts';
import { createSession, liveSessions, revokeSession } from './sessions.ts';

const Code = Type.String({ minLength: 6, maxLength: 32 });

async function me(ctx: AppContext, who: Principal) {
  const projects = who.mfaPending ? [] : await listProjects(ctx, who, false);
  return {
    ...toUserPublic(who.user),
    mfa: { enrolled: who.user.mfa_enrolled_at !== null, pending: who.mfaPending, fresh: who.mfaFresh },
    memberships: projects.map((p) => ({ project_id: p.id, project_slug: p.slug, project_name: p.name, role: p.role })),
  };
}

export const authRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['auth'] } })
    .get('/api/v1/auth/policy', () => ({
      min_length: ctx.config.SVC_PASSWORD_MIN_LENGTH,
      max_length: 256,
      required_character_classes_below_16: 3,
      character_classes: ['lowercase', 'uppercase', 'digit', 'symbol'],
      common_passwords_refused: true,
    }))
    .post(
      '/api/v1/auth/login',
      async ({ request, body }) => {
        const result = await login(ctx, body, actorOf(ctx, request, null), readCookie(request, TRUST_COOKIE));
        return withCookies(200, { user: toUserPublic(result.user), mfa_required: result.mfaRequired }, result.session.cookies(isSecureRequest(ctx, request)));
      },
      {
        body: Body({
          email: Type.String({ minLength: 1, maxLength: 320 }),
          password: Type.String({ minLength: 1, maxLength: 1024 }),
          remember_me: Type.Optional(Type.Boolean()),
        }),
        detail: { summary: 'Sign in; sets the session and CSRF cookies. mfa_required means POST /auth/mfa/verify next.' },
      },
    )
    .post('/api/v1/auth/logout', async ({ request }) => {
      const who = await authorize(ctx, request, { beforeMfa: true });
      await ctx.db.tx(async (tx) => {
        await revokeSession(tx, who.session!.id, 'logout');
        await ctx.audit.append(tx, { ...actorOf(ctx, request, who), action: 'auth.logout', target_type: 'session', target_id: who.session!.id });
      });
      const secure = isSecureRequest(ctx, request);
      return withCookies(204, null, [clearCookie(SESSION_COOKIE, secure), clearCookie(CSRF_COOKIE, secure)]);
    })
    .get('/api/v1/auth/me', async ({ request }) => me(ctx, await authorize(ctx, request, { beforeMfa: true })))
    .patch(
      '/api/v1/auth/me',
      async ({ request, body }) => {
        const who = await authorize(ctx, request);
        if (body.timezone !== undefined) assertTimeZone(body.timezone);
        const user = await patchUser(ctx, who.user.id, body, who.user.id, actorOf(ctx, request, who));
        return me(ctx, { ...who, user: { ...who.user, ...user } });
      },
      {
        body: Body({
          first_name: Type.Optional(Type.String({ maxLength: 100 })),
          last_name: Type.Optional(Type.String({ maxLength: 100 })),
          display_name: Type.Optional(Type.String({ maxLength: 200 })),
          timezone: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        detail: { summary: 'Change your own profile (not your e-mail address or roles)' },
      },
    )
    .post(
      '/api/v1/auth/change-password',
      async ({ request, body }) => {
        const who = await authorize(ctx, request);
        const user = await getUser(ctx.db, who.user.id);
        if (!(await verifyPassword(user.password_hash, body.current_password, ctx.config))) {
          throw unauthorized('wrong_password', 'the current password is not right');
        }
        const actor = actorOf(ctx, request, who);
        await setPassword(ctx, who.user.id, body.new_password, actor, 'user.password_changed');
        // Every session ended with the change; hand this browser a new one.
        const fresh = await getUser(ctx.db, who.user.id);
        const session = await ctx.db.tx((tx) =>
          createSession(tx, ctx, fresh, { remember: who.session!.remember, ip: actor.source_ip ?? null, userAgent: actor.user_agent ?? null, mfaVerified: who.mfaFresh }),
        );
        return withCookies(200, { user: toUserPublic(fresh) }, session.cookies(isSecureRequest(ctx, request)));
      },
      {
        body: Body({ current_password: Type.String({ minLength: 1, maxLength: 1024 }), new_password: Type.String({ minLength: 1, maxLength: 1024 }) }),
        detail: { summary: 'Change your own password; every other session and remembered device ends' },
      },
    )
    .get('/api/v1/auth/sessions', async ({ request }) => {
      const who = await authorize(ctx, request);
      return (await liveSessions(ctx.db, who.user.id)).map((s) => ({
        id: s.id,
        issued_at: s.issued_at,
        last_seen_at: s.last_seen_at,
        expires_at: s.expires_at,
        ip: s.ip,
        user_agent: s.user_agent,
        is_current: s.id === who.session!.id,
      }));
    })
    .post('/api/v1/auth/sessions/:id/revoke', async ({ request, params }) => {
      const who = await authorize(ctx, request);
      const session = (await liveSessions(ctx.db, who.user.id)).find((s) => s.id === params.id);
      if (!session) throw notFound('session');
      await ctx.db.tx(async (tx) => {
        await revokeSession(tx, session.id, 'user_revoke');
        await ctx.audit.append(tx, { ...actorOf(ctx, request, who), action: 'auth.session_revoked', target_type: 'session', target_id: session.id });
      });
      return { revoked: true };
    })
    // --- MFA ---
    .get('/api/v1/auth/mfa/status', async ({ request }) => mfaStatus(ctx, (await authorize(ctx, request, { beforeMfa: true })).user.id))
    .post('/api/v1/auth/mfa/enroll-start', async ({ request }) => {
      const who = await authorize(ctx, request);
      const host = ctx.config.SVC_PUBLIC_URL ? new URL(ctx.config.SVC_PUBLIC_URL).host : (request.headers.get('host') ?? 'svc');
      return startEnrolment(ctx, who, actorOf(ctx, request, who), host);
    })
    .post(
      '/api/v1/auth/mfa/enroll-complete',
      async ({ request, body }) => {
        const who = await authorize(ctx, request);
        return completeEnrolment(ctx, who, body.code, actorOf(ctx, request, who));
      },
      { body: Body({ code: Code }), detail: { summary: 'Confirm enrolment with a code; returns the recovery codes once' } },
    )
    .post(
      '/api/v1/auth/mfa/verify',
      async ({ request, body }) => {
        const who = await authorize(ctx, request, { beforeMfa: true });
        const result = await verifySecondFactor(ctx, who, body, actorOf(ctx, request, who));
        const { trustCookie, ...answer } = result;
        return withCookies(200, answer, trustCookie ? [trustCookie(isSecureRequest(ctx, request))] : []);
      },
      {
        body: Body({ code: Code, remember_device: Type.Optional(Type.Boolean()) }),
        detail: { summary: 'Pass the login MFA step, or re-verify for routes that need a fresh verification' },
      },
    )
    .post(
      '/api/v1/auth/mfa/disable',
      async ({ request, body }) => {
        const who = await authorize(ctx, request, { freshMfa: true });
        await disableMfa(ctx, who, body, actorOf(ctx, request, who));
        return { disabled: true };
      },
      { body: Body({ password: Type.String({ minLength: 1, maxLength: 1024 }), code: Code }) },
    )
    .post('/api/v1/auth/mfa/recovery-codes/regenerate', async ({ request }) => {
      const who = await authorize(ctx, request, { freshMfa: true });
      return regenerateRecoveryCodes(ctx, who.user.id, actorOf(ctx, request, who));
    })
    .get('/api/v1/auth/mfa/trusted-devices', async ({ request }) => listTrustedDevices(ctx, (await authorize(ctx, request)).user.id))
    .post('/api/v1/auth/mfa/trusted-devices/:id/revoke', async ({ request, params }) => {
      const who = await authorize(ctx, request, { freshMfa: true });
      await revokeTrustedDevice(ctx, who.user.id, params.id, actorOf(ctx, request, who));
      return { revoked: true };
    })
    // --- API keys ---
    .get('/api/v1/api-keys/scopes', async ({ request }) => {
      await authorize(ctx, request);
      return { scopes: SCOPES, admin_only: ADMIN_ONLY_SCOPES };
    })
    .get('/api/v1/api-keys', async ({ request }) => listApiKeys(ctx, (await authorize(ctx, request)).user.id))
    .post(
      '/api/v1/api-keys',
      async ({ request, body, set }) => {
        const who = await authorize(ctx, request, { freshMfa: true });
        const canUse = async (_ex: unknown, projectId: string) => {
          const project = await findProjectById(ctx.db, projectId);
          if (!project?.is_active) return false;
          return who.user.is_admin || (await memberProjectIds(ctx.db, who.user.id)).includes(projectId);
        };
        const key = await createApiKey(ctx, who, body, actorOf(ctx, request, who), canUse);
        set.status = 201;
        return key;
      },
      {
        body: Body({
          name: Type.String({ minLength: 1, maxLength: 200 }),
          scopes: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 32 }),
          project_id: Type.Optional(Type.String({ format: 'uuid' })),
          expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
        }),
        detail: { summary: 'Create an API key; the secret is in the answer once and never again' },
      },
    )
    .delete('/api/v1/api-keys/:id', async ({ request, params }) => {
      const who = await authorize(ctx, request);
      await revokeApiKey(ctx, who.user.id, params.id, actorOf(ctx, request, who));
      return { revoked: true };
    });

