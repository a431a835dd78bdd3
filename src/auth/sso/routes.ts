// /api/v1/auth/sso and /api/v1/auth/proxy: single sign-on. The login and callback are browser
// navigations answered with redirects; a refused one (start, callback or proxy) is audited and
// answers the error envelope, or for a browser page (Accept: text/html) a 303 to the sign-in page
// with `?sso_error=<code>`.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { callerOf, guarded } from '../../access/guard.ts';
import { Success, contract } from '../../http/contract.ts';
import { ApiError } from '../../http/errors.ts';
import { Uuid } from '../../http/schemas.ts';
import type { AppContext } from '../../server/context.ts';
import { actorOf, type Actor } from '../actor.ts';
import { SESSION_COOKIE, TRUST_COOKIE, cookieHeader, isSecureRequest, readCookie } from '../cookies.ts';
import { LOGIN_STATE_TTL_SECONDS, checkSsoSettings, oidcConfigured, proxyConfigured } from './policy.ts';
import { LinkedIdentities, Redirect, SsoConfig } from './schemas.ts';
import type { SignedIn } from './service.ts';

/** The browser token of pending SSO logins (HttpOnly, SameSite=Lax: it must come back on the provider's redirect). */
export const SSO_COOKIE = 'svc_sso';
const CALLBACK_PATH = '/api/v1/auth/sso/callback';
/** The sign-in machinery (and through it the JOSE library), evaluated at the first SSO request only. */
const sso = () => import('./service.ts');

const LoginQuery = Type.Object({
  // Short enough that any spelling of it (percent-encoded UTF-8) fits the request line.
  next: Type.Optional(Type.String({ maxLength: 512 })),
  remember_me: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
});
const OidcLoginQuery = Type.Object({
  ...LoginQuery.properties,
  reauthenticate: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], {
      description:
        'true: the provider must sign the user in again (prompt=login, max_age=0). From a signed-in browser this confirms that session\'s user afresh (fresh MFA, the answer to 403 mfa_reverify_sso) and returns to `next` in the same session.',
    }),
  ),
});
const SIGNED_IN = { user: {} } as const;

function redirect(status: 302 | 303, location: string, cookies: string[] = []): Response {
  const headers = new Headers({ location, 'cache-control': 'no-store' });
  for (const c of cookies) headers.append('set-cookie', c);
  return new Response(null, { status, headers });
}

/** The callback URL registered at the provider: under SVC_PUBLIC_URL when set, else this request's origin. */
function callbackUrl(ctx: AppContext, request: Request): string {
  if (ctx.config.SVC_PUBLIC_URL) return `${ctx.config.SVC_PUBLIC_URL.replace(/\/$/, '')}${CALLBACK_PATH}`;
  const host = request.headers.get('host') ?? new URL(request.url).host;
  return `${isSecureRequest(ctx, request) ? 'https' : 'http'}://${host}${CALLBACK_PATH}`;
}

function signedInRedirect(ctx: AppContext, request: Request, done: SignedIn, extra: string[] = []): Response {
  return redirect(302, done.location, [...done.session.cookies(isSecureRequest(ctx, request)), ...extra]);
}

const notConfigured = () => new ApiError(404, 'sso_not_configured', 'single sign-on with OpenID Connect is not configured here');

const wantsPage = (request: Request) => (request.headers.get('accept') ?? '').includes('text/html');

/** Audits a refusal and answers it: the envelope, or the sign-in page for a browser. */
async function refused(ctx: AppContext, request: Request, method: 'oidc' | 'proxy', e: unknown, actor: Actor): Promise<Response> {
  if (!(e instanceof ApiError)) throw e;
  // Not configured is no sign-in attempt; throttled ones are (refusals.ts keeps a flood to a few rows).
  if (e.status !== 404) await (await sso()).auditRefusal(ctx, method, e, actor);
  if (wantsPage(request) && e.status !== 429) {
    // A refused re-verification: the browser is still signed in, so back to its page rather than the sign-in page.
    const back = (e.details as { return_to?: unknown }).return_to;
    const page = typeof back === 'string' ? back : '/login';
    return redirect(303, `${page}${page.includes('?') ? '&' : '?'}sso_error=${encodeURIComponent(e.error)}`);
  }
  throw e;
}

const CALLBACK_ERRORS = {
  400: ['sso_state_invalid', 'sso_replayed', 'sso_code_rejected'],
  401: ['sso_token_invalid'],
  403: ['sso_denied', 'sso_email_unverified', 'sso_no_account', 'sso_account_inactive', 'sso_reverify_refused'],
  404: ['sso_not_configured'],
  429: ['rate_limited'],
  502: ['sso_provider_error'],
} as const;

export const ssoRoutes = (ctx: AppContext) => {
  // Contradictory settings stop the service here, before it listens.
  checkSsoSettings(ctx.config);
  return new Elysia({ detail: { tags: ['auth'] } })
    .get(
      '/api/v1/auth/sso/config',
      (): SsoConfig => ({
        oidc: { enabled: oidcConfigured(ctx.config), label: ctx.config.SVC_OIDC_BUTTON_LABEL },
        proxy: { enabled: proxyConfigured(ctx.config) },
        password_login: { enabled: true, break_glass_only: ctx.config.SVC_PASSWORD_LOGIN_DISABLED },
      }),
      { ...contract({ summary: 'How this service signs people in (for the sign-in page): SSO button, proxy, passwords', access: { public: true }, ok: SsoConfig }) },
    )
    .get(
      '/api/v1/auth/sso/login',
      async ({ request, query }) => {
        if (!oidcConfigured(ctx.config)) throw notConfigured();
        const secure = isSecureRequest(ctx, request);
        const actor = actorOf(ctx, request, null);
        try {
          const started = await (await sso()).startOidcLogin(ctx, {
            next: query.next ?? '/',
            remember: query.remember_me === 'true',
            redirectUri: callbackUrl(ctx, request),
            browserToken: readCookie(request, SSO_COOKIE),
            actor,
            reauthenticate: query.reauthenticate === 'true',
            sessionToken: readCookie(request, SESSION_COOKIE),
          });
          const cookie = cookieHeader({ name: SSO_COOKIE, value: started.browserToken, maxAgeSeconds: LOGIN_STATE_TTL_SECONDS, httpOnly: true, sameSite: 'Lax' }, secure);
          return redirect(302, started.location, [cookie]);
        } catch (e) {
          return refused(ctx, request, 'oidc', e, actor);
        }
      },
      {
        ...contract({
          summary: 'Start signing in with the OpenID Connect provider: 302 to its authorization endpoint',
          description: 'Sets the short-lived svc_sso cookie that binds the login to this browser. `next` is the dashboard path to return to.',
          access: { public: true },
          query: OidcLoginQuery,
          ok: Redirect,
          answers: { 302: Redirect, 303: Redirect },
          errors: { 404: ['sso_not_configured'], 429: ['rate_limited'], 502: ['sso_provider_error'] },
        }),
      },
    )
    .get(
      CALLBACK_PATH,
      async ({ request }) => {
        const url = new URL(request.url);
        const q = (name: string) => url.searchParams.get(name) ?? undefined;
        if (!oidcConfigured(ctx.config)) throw notConfigured();
        const actor = actorOf(ctx, request, null);
        try {
          const done = await (await sso()).finishOidcLogin(
            ctx,
            { state: q('state'), code: q('code'), error: q('error'), iss: q('iss') },
            readCookie(request, SSO_COOKIE),
            readCookie(request, TRUST_COOKIE),
            actor,
          );
          const clear = cookieHeader({ name: SSO_COOKIE, value: '', maxAgeSeconds: 0, httpOnly: true, sameSite: 'Lax' }, isSecureRequest(ctx, request));
          if ('reverified' in done) return redirect(302, done.location, [clear]);
          return signedInRedirect(ctx, request, done, [clear]);
        } catch (e) {
          return refused(ctx, request, 'oidc', e, actor);
        }
      },
      {
        ...contract({
          summary: 'Where the provider sends the browser back: checks the answer, signs in, 302 to the page it came from (or the MFA step)',
          description:
            'For a re-verification (started with reauthenticate=true by a signed-in browser) the provider must sign in the same user, just now, with multi-factor: the session becomes MFA-fresh and no new session is made; otherwise 403 sso_reverify_refused (a browser goes back to its page with ?sso_error=) and the session is left as it was.',
          access: { public: true },
          checkedByHandler: {
            query: Type.Object({
              state: Type.Optional(Type.String({ maxLength: 128, pattern: '^[A-Za-z0-9_-]*$' })),
              code: Type.Optional(Type.String({ maxLength: 2048, pattern: '^[\\x21-\\x7e]*$' })),
              error: Type.Optional(Type.String({ maxLength: 64, pattern: '^[\\x21-\\x7e]*$' })),
              iss: Type.Optional(Type.String({ maxLength: 2048, pattern: '^[\\x21-\\x7e]*$' })),
            }),
          },
          ok: Redirect,
          answers: { 302: Redirect, 303: Redirect },
          errors: CALLBACK_ERRORS,
        }),
      },
    )
    .get(
      '/api/v1/auth/proxy/login',
      async ({ request, query }) => {
        if (!proxyConfigured(ctx.config)) throw new ApiError(404, 'proxy_auth_not_configured', 'sign-in through a trusted proxy is not configured here');
        const actor = actorOf(ctx, request, null);
        try {
          const done = await (await sso()).proxyLogin(ctx, request, { next: query.next ?? '/', remember: query.remember_me === 'true', trustToken: readCookie(request, TRUST_COOKIE) }, actor);
          return signedInRedirect(ctx, request, done);
        } catch (e) {
          return refused(ctx, request, 'proxy', e, actor);
        }
      },
      {
        ...contract({
          summary: 'Sign in as the user the trusted proxy names in its header: 302 to the dashboard',
          description: 'Only from the addresses in SVC_AUTH_PROXY_ADDRESSES (the socket peer); from any other the header is ignored and the request refused.',
          access: { public: true },
          query: LoginQuery,
          ok: Redirect,
          answers: { 302: Redirect, 303: Redirect },
          errors: {
            401: ['proxy_header_missing'],
            403: ['proxy_not_trusted', 'sso_email_unverified', 'sso_no_account', 'sso_account_inactive'],
            404: ['proxy_auth_not_configured'],
            429: ['rate_limited'],
          },
        }),
      },
    )
    .get('/api/v1/auth/sso/identities', async ({ request }) => (await sso()).linkedIdentities(ctx, callerOf(request).user), {
      ...guarded(ctx, { summary: 'Your identities at identity providers, and whether you can also sign in with a password', access: SIGNED_IN, ok: LinkedIdentities }),
    })
    .delete(
      '/api/v1/auth/sso/identities/:id',
      async ({ request, params }) => {
        const who = callerOf(request);
        await (await sso()).unlinkIdentity(ctx, who.user.id, params.id, actorOf(ctx, request, who));
        return { success: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Unlink one of your identities (refused when it is your last way to sign in)',
          access: SIGNED_IN,
          params: Type.Object({ id: Uuid }),
          ok: Success,
          errors: { 404: ['not_found'], 409: ['last_sign_in_method'] },
        }),
      },
    );
};
