// The access rules of route contracts (http/contract.ts), enforced for the
// routes by access/guard.ts. Sessions must pass CSRF on state-changing methods; API keys are refused
// unless the rule names the scope that admits them; fresh-MFA routes are
// session-only, and say how to re-verify: svc's authenticator, or the identity provider for a session
// whose MFA came from there.
import type { AccessRule } from '../http/contract.ts';
import type { AppContext } from '../server/context.ts';
import { ApiError, forbidden, unauthorized } from '../http/errors.ts';
import { safeEqual } from '../lib/crypto.ts';
import { CSRF_HEADER } from './cookies.ts';
import { principalOf, type Principal } from './principal.ts';
import { scopeAllows } from './scopes.ts';
import { oidcConfigured } from './sso/policy.ts';

export type { AccessRule };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Double-submit CSRF for cookie sessions, plus a same-origin check on the
 * browser's own Origin / Sec-Fetch-Site headers where it sends them. */
function checkCsrf(ctx: AppContext, request: Request, who: Principal): void {
  if (SAFE_METHODS.has(request.method) || who.via !== 'session') return;
  if (request.headers.get('sec-fetch-site') === 'cross-site') throw forbidden('csrf_failed', 'cross-site request refused');
  const origin = request.headers.get('origin');
  if (origin && origin !== 'null') {
    let host: string | null = null;
    try {
      host = new URL(origin).host;
    } catch {
      /* malformed origin: refused below */
    }
    if (!host || !ctx.hosts.allows(host)) throw forbidden('csrf_failed', 'request from another origin refused');
  }
  const token = request.headers.get(CSRF_HEADER);
  if (!token || !safeEqual(token, who.session!.csrf_token)) {
    throw forbidden('csrf_failed', `missing or wrong ${CSRF_HEADER} header`);
  }
}

export async function authorize(ctx: AppContext, request: Request, rule: AccessRule = {}): Promise<Principal> {
  const who = await principalOf(ctx, request);
  if (!who) throw unauthorized();
  if (who.via === 'api_key') {
    if (!rule.scope || rule.freshMfa) throw forbidden('api_key_not_allowed', 'this route does not accept API keys; use a browser session');
    if (!scopeAllows(who.apiKey!.scopes, rule.scope)) throw forbidden('insufficient_scope', `the API key lacks the ${rule.scope} scope`, { need: rule.scope });
  }
  if (who.mfaPending && !rule.beforeMfa) throw unauthorized('mfa_required', 'finish signing in with your authenticator code');
  checkCsrf(ctx, request, who);
  if (rule.admin && !who.user.is_admin) throw forbidden('admin_required', 'administrators only');
  if (rule.freshMfa && !who.mfaFresh) {
    const ttl = ctx.config.SVC_MFA_VERIFICATION_TTL_SECONDS;
    // Their second factor is the identity provider's, and svc has no code to ask for: confirm there again.
    if (who.user.mfa_enrolled_at === null && who.session!.mfa_via === 'idp' && oidcConfigured(ctx.config)) {
      throw new ApiError(403, 'mfa_reverify_sso', 'confirm it is you by signing in again with your identity provider', {
        ttl_seconds: ttl,
        provider: new URL(ctx.config.SVC_OIDC_ISSUER).host,
        login_url: '/api/v1/auth/sso/login?reauthenticate=true',
      });
    }
    if (who.user.mfa_enrolled_at === null) {
      throw forbidden('mfa_enrollment_required', 'this action needs two-factor authentication: enrol an authenticator first');
    }
    throw new ApiError(403, 'mfa_reverify_required', 'confirm your authenticator code to continue', { ttl_seconds: ttl });
  }
  return who;
}
