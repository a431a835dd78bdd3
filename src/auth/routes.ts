// /api/v1/auth: login and logout, the current user, own password and
// sessions, MFA; /api/v1/api-keys: own API keys. Browser sessions only
// (API keys are refused on all of these).
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { contract } from '../http/contract.ts';
import { Body, Uuid } from '../http/schemas.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { findProjectById, listProjects, memberProjectIds } from '../projects/service.ts';
import { assertTimeZone, getUser, patchUser, setPassword, toUserPublic } from '../users/service.ts';
import { actorOf } from './actor.ts';
import { createApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
import { CSRF_COOKIE, SESSION_COOKIE, TRUST_COOKIE, clearCookie, isSecureRequest, readCookie, withCookies } from './cookies.ts';
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
import { NewPassword, verifyPassword } from './passwords.ts';
import type { Principal } from './principal.ts';
import {
  ApiKeyMinted,
  ApiKeyPublic,
  Disabled,
  LoginAnswer,
  Me,
  MfaEnrolment,
  MfaStatus,
  MfaVerified,
  PasswordPolicy,
  RecoveryCodes,
  Revoked,
  Scopes,
  SessionPublic,
  TrustedDevice,
  UserAnswer,
} from './schemas.ts';
import { ADMIN_ONLY_SCOPES, SCOPES } from './scopes.ts';
import { createSession, liveSessions, revokeSession } from './sessions.ts';

const Code = Type.String({ minLength: 6, maxLength: 32 });

const SIGNED_IN = { user: {} } as const;
const BEFORE_MFA = { user: { beforeMfa: true } } as const;
const FRESH_MFA = { user: { freshMfa: true } } as const;
const Id = Type.Object({ id: Uuid });
const POLICY_CODES = ['validation_failed'] as const;
const CODE_THROTTLE = { 429: ['rate_limited'] } as const;

async function me(ctx: AppContext, who: Principal): Promise<Me> {
  const projects = who.mfaPending ? [] : await listProjects(ctx, who, false);
  return {
    ...toUserPublic(who.user),
    mfa: { enrolled: who.user.mfa_enrolled_at !== null, pending: who.mfaPending, fresh: who.mfaFresh },
    memberships: projects.map((p) => ({ project_id: p.id, project_slug: p.slug, project_name: p.name, role: p.role })),
  };
}

export const authRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['auth'] } })
    .get(
      '/api/v1/auth/policy',
      () => ({
        min_length: ctx.config.SVC_PASSWORD_MIN_LENGTH,
        max_length: 256,
        required_character_classes_below_16: 3,
        character_classes: ['lowercase', 'uppercase', 'digit', 'symbol'],
        common_passwords_refused: true,
      }),
      { ...contract({ summary: 'The password policy (for forms that check as you type)', access: { public: true }, ok: PasswordPolicy }) },
    )
    .post(
      '/api/v1/auth/login',
      async ({ request, body }) => {
        const result = await login(ctx, body, actorOf(ctx, request, null), readCookie(request, TRUST_COOKIE));
        return withCookies(200, { user: toUserPublic(result.user), mfa_required: result.mfaRequired }, result.session.cookies(isSecureRequest(ctx, request)));
      },
      {
        ...contract({
          summary: 'Sign in; sets the session and CSRF cookies. mfa_required means POST /auth/mfa/verify next.',
          access: { public: true },
          body: Body({
            email: Type.String({ minLength: 1, maxLength: 320 }),
            password: Type.String({ minLength: 1, maxLength: 1024 }),
            remember_me: Type.Optional(Type.Boolean()),
          }),
          ok: LoginAnswer,
          errors: { 401: ['invalid_credentials'], 403: ['password_login_disabled'], 429: ['rate_limited'] },
        }),
      },
    )
    .post(
      '/api/v1/auth/logout',
      async ({ request }) => {
        const who = callerOf(request);
        await ctx.db.tx(async (tx) => {
          await revokeSession(tx, who.session!.id, 'logout');
          await ctx.audit.append(tx, { ...actorOf(ctx, request, who), action: 'auth.logout', target_type: 'session', target_id: who.session!.id });
        });
        const secure = isSecureRequest(ctx, request);
        return withCookies(204, null, [clearCookie(SESSION_COOKIE, secure), clearCookie(CSRF_COOKIE, secure)]);
      },
      { ...guarded(ctx, { summary: 'Sign out: this session ends and its cookies are cleared', access: BEFORE_MFA, ok: Type.Null(), status: 204 }) },
    )
    .get('/api/v1/auth/me', async ({ request }) => me(ctx, callerOf(request)), {
      ...guarded(ctx, { summary: 'The signed-in user, their MFA state and project memberships', access: BEFORE_MFA, ok: Me }),
    })
    .patch(
      '/api/v1/auth/me',
      async ({ request, body }) => {
        const who = callerOf(request);
        if (body.timezone !== undefined) assertTimeZone(body.timezone);
        const user = await patchUser(ctx, who.user.id, body, who.user.id, actorOf(ctx, request, who));
        return me(ctx, { ...who, user: { ...who.user, ...user } });
      },
      {
        ...guarded(ctx, {
          summary: 'Change your own profile (not your e-mail address or roles)',
          access: SIGNED_IN,
          body: Body({
            first_name: Type.Optional(Type.String({ maxLength: 100 })),
            last_name: Type.Optional(Type.String({ maxLength: 100 })),
            display_name: Type.Optional(Type.String({ maxLength: 200 })),
            timezone: Type.Optional(Type.String({ maxLength: 64 })),
          }),
          ok: Me,
        }),
      },
    )
    .post(
      '/api/v1/auth/change-password',
      async ({ request, body }) => {
        const who = callerOf(request);
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
        ...guarded(ctx, {
          summary: 'Change your own password; every other session and remembered device ends',
          access: SIGNED_IN,
          body: Body({ current_password: Type.String({ minLength: 1, maxLength: 1024 }), new_password: NewPassword(ctx.config.SVC_PASSWORD_MIN_LENGTH) }),
          ok: UserAnswer,
          errors: { 401: ['wrong_password'], 422: POLICY_CODES },
        }),
      },
    )
    .get(
      '/api/v1/auth/sessions',
      async ({ request }) => {
        const who = callerOf(request);
        return (await liveSessions(ctx.db, who.user.id)).map((s) => ({
          id: s.id,
          issued_at: s.issued_at,
          last_seen_at: s.last_seen_at,
          expires_at: s.expires_at,
          ip: s.ip,
          user_agent: s.user_agent,
          is_current: s.id === who.session!.id,
        }));
      },
      { ...guarded(ctx, { summary: 'Your live sessions', access: SIGNED_IN, ok: Type.Array(SessionPublic) }) },
    )
    .post(
      '/api/v1/auth/sessions/:id/revoke',
      async ({ request, params }) => {
        const who = callerOf(request);
        const session = (await liveSessions(ctx.db, who.user.id)).find((s) => s.id === params.id);
        if (!session) throw notFound('session');
        await ctx.db.tx(async (tx) => {
          await revokeSession(tx, session.id, 'user_revoke');
          await ctx.audit.append(tx, { ...actorOf(ctx, request, who), action: 'auth.session_revoked', target_type: 'session', target_id: session.id });
        });
        return { revoked: true as const };
      },
      { ...guarded(ctx, { summary: 'End one of your sessions', access: SIGNED_IN, params: Id, ok: Revoked, errors: { 404: ['not_found'] } }) },
    )
    // --- MFA ---
    .get('/api/v1/auth/mfa/status', async ({ request }) => mfaStatus(ctx, callerOf(request).user.id), {
      ...guarded(ctx, { summary: 'Your two-factor state', access: BEFORE_MFA, ok: MfaStatus }),
    })
    .post(
      '/api/v1/auth/mfa/enroll-start',
      async ({ request }) => {
        const who = callerOf(request);
        const host = ctx.config.SVC_PUBLIC_URL ? new URL(ctx.config.SVC_PUBLIC_URL).host : (request.headers.get('host') ?? 'svc');
        return startEnrolment(ctx, who, actorOf(ctx, request, who), host);
      },
      { ...guarded(ctx, { summary: 'Start enrolling an authenticator: its secret and provisioning URL', access: SIGNED_IN, ok: MfaEnrolment, errors: { 409: ['already_enrolled'] } }) },
    )
    .post(
      '/api/v1/auth/mfa/enroll-complete',
      async ({ request, body }) => {
        const who = callerOf(request);
        return completeEnrolment(ctx, who, body.code, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: 'Confirm enrolment with a code; returns the recovery codes once',
          access: SIGNED_IN,
          body: Body({ code: Code }),
          ok: RecoveryCodes,
          errors: { 400: ['wrong_code'], 409: ['already_enrolled', 'no_pending_enrolment'], ...CODE_THROTTLE },
        }),
      },
    )
    .post(
      '/api/v1/auth/mfa/verify',
      async ({ request, body }) => {
        const who = callerOf(request);
        const result = await verifySecondFactor(ctx, who, body, actorOf(ctx, request, who));
        const { trustCookie, ...answer } = result;
        return withCookies(200, answer, trustCookie ? [trustCookie(isSecureRequest(ctx, request))] : []);
      },
      {
        ...guarded(ctx, {
          summary: 'Pass the login MFA step, or re-verify for routes that need a fresh verification',
          access: BEFORE_MFA,
          body: Body({ code: Code, remember_device: Type.Optional(Type.Boolean()) }),
          ok: MfaVerified,
          errors: { 400: ['wrong_code'], 409: ['mfa_not_enrolled'], ...CODE_THROTTLE },
        }),
      },
    )
    .post(
      '/api/v1/auth/mfa/disable',
      async ({ request, body }) => {
        const who = callerOf(request);
        await disableMfa(ctx, who, body, actorOf(ctx, request, who));
        return { disabled: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Turn two-factor authentication off (password and a current code)',
          access: FRESH_MFA,
          body: Body({ password: Type.String({ minLength: 1, maxLength: 1024 }), code: Code }),
          ok: Disabled,
          errors: { 400: ['wrong_credentials'], 409: ['mfa_not_enrolled'], ...CODE_THROTTLE },
        }),
      },
    )
    .post(
      '/api/v1/auth/mfa/recovery-codes/regenerate',
      async ({ request }) => {
        const who = callerOf(request);
        return regenerateRecoveryCodes(ctx, who.user.id, actorOf(ctx, request, who));
      },
      { ...guarded(ctx, { summary: 'New recovery codes (the old ones stop working)', access: FRESH_MFA, ok: RecoveryCodes, errors: { 409: ['mfa_not_enrolled'] } }) },
    )
    .get('/api/v1/auth/mfa/trusted-devices', async ({ request }) => listTrustedDevices(ctx, callerOf(request).user.id), {
      ...guarded(ctx, { summary: 'Devices that skip the MFA step at login', access: SIGNED_IN, ok: Type.Array(TrustedDevice) }),
    })
    .post(
      '/api/v1/auth/mfa/trusted-devices/:id/revoke',
      async ({ request, params }) => {
        const who = callerOf(request);
        await revokeTrustedDevice(ctx, who.user.id, params.id, actorOf(ctx, request, who));
        return { revoked: true as const };
      },
      { ...guarded(ctx, { summary: 'Forget a remembered device', access: FRESH_MFA, params: Id, ok: Revoked, errors: { 404: ['not_found'] } }) },
    )
    // --- API keys ---
    .get('/api/v1/api-keys/scopes', () => ({ scopes: SCOPES, admin_only: ADMIN_ONLY_SCOPES }), {
      ...guarded(ctx, { summary: 'The scopes an API key can have (some only administrators may grant)', access: SIGNED_IN, ok: Scopes }),
    })
    .get('/api/v1/api-keys', async ({ request }) => listApiKeys(ctx, callerOf(request).user.id), {
      ...guarded(ctx, { summary: 'Your API keys (never their secrets)', access: SIGNED_IN, ok: Type.Array(ApiKeyPublic) }),
    })
    .post(
      '/api/v1/api-keys',
      async ({ request, body, set }) => {
        const who = callerOf(request);
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
        ...guarded(ctx, {
          summary: 'Create an API key; the secret is in the answer once and never again',
          access: FRESH_MFA,
          body: Body({
            name: Type.String({ minLength: 1, maxLength: 200 }),
            scopes: Type.Array(Type.Union(SCOPES.map((scope) => Type.Literal(scope))), { minItems: 1, maxItems: 32 }),
            project_id: Type.Optional(Uuid),
            expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
          }),
          ok: ApiKeyMinted,
          status: 201,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .delete(
      '/api/v1/api-keys/:id',
      async ({ request, params }) => {
        const who = callerOf(request);
        await revokeApiKey(ctx, who.user.id, params.id, actorOf(ctx, request, who));
        return { revoked: true as const };
      },
      { ...guarded(ctx, { summary: 'Revoke one of your API keys', access: SIGNED_IN, params: Id, ok: Revoked, errors: { 404: ['not_found'] } }) },
    );
