// Who is calling: a browser session (cookie) or an API key (Authorization:
// Bearer svc_...). Resolved lazily, once per request, by the routes that
// need it; agent routes never touch it (agents have their own tokens).
import type { AppContext } from '../server/context.ts';
import { isoMicros, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { userById, type UserRow } from '../users/store.ts';
import { requestIpOf } from '../http/request.ts';
import { unauthorized } from '../http/errors.ts';
import { SESSION_COOKIE, readCookie } from './cookies.ts';
import { resolveSession } from './sessions.ts';
import { apiKeyByHashes, updateApiKey, type ApiKeyRow, type SessionRow } from './store.ts';
import { mastersOf, tokenHashes } from './tokens.ts';

export const API_KEY_PREFIX = 'svc_';

export interface Principal {
  user: UserRow;
  via: 'session' | 'api_key';
  session: SessionRow | null;
  apiKey: ApiKeyRow | null;
  /** The user has MFA and this session has not passed the MFA step yet. */
  mfaPending: boolean;
  /** The session verified MFA within SVC_MFA_VERIFICATION_TTL_SECONDS. */
  mfaFresh: boolean;
}

const resolved = new WeakMap<Request, Promise<Principal | null>>();

/** The caller of `request`, or null when anonymous. Throws 401 for a
 * presented API key that is unknown, revoked, expired or whose owner is
 * inactive (a bad cookie is simply anonymous: browsers keep stale cookies). */
export function principalOf(ctx: AppContext, request: Request): Promise<Principal | null> {
  let p = resolved.get(request);
  if (!p) {
    p = resolve(ctx, request);
    resolved.set(request, p);
  }
  return p;
}

async function resolve(ctx: AppContext, request: Request): Promise<Principal | null> {
  // A session cookie wins over a bearer key when both are sent.
  const cookie = readCookie(request, SESSION_COOKIE);
  if (cookie) {
    const found = await resolveSession(ctx, cookie);
    if (found) return fromSession(ctx, found.session, found.user);
  }
  const auth = request.headers.get('authorization');
  const [scheme, token] = auth?.trim().split(/\s+/) ?? [];
  if (scheme?.toLowerCase() === 'bearer' && token?.startsWith(API_KEY_PREFIX)) return fromApiKey(ctx, request, token);
  return null;
}

function fromSession(ctx: AppContext, session: SessionRow, user: UserRow): Principal {
  const enrolled = user.mfa_enrolled_at !== null;
  const verifiedAt = session.mfa_verified_at ? parseIsoMicros(session.mfa_verified_at)! : null;
  return {
    user,
    via: 'session',
    session,
    apiKey: null,
    mfaPending: enrolled && verifiedAt === null,
    // Fresh: svc's own step, or an identity provider's multi-factor assertion at an SSO sign-in (auth/sso).
    mfaFresh:
      (enrolled || session.mfa_via === 'idp') && verifiedAt !== null && nowMicros() - verifiedAt < ctx.config.SVC_MFA_VERIFICATION_TTL_SECONDS * 1_000_000,
  };
}

async function fromApiKey(ctx: AppContext, request: Request, token: string): Promise<Principal> {
  const key = await apiKeyByHashes(ctx.db, tokenHashes(mastersOf(ctx.config), 'api-key', token));
  const now = nowMicros();
  if (!key) throw unauthorized('invalid_api_key', 'the API key is not valid');
  if (key.revoked_at) throw unauthorized('invalid_api_key', 'the API key was revoked', { reason: 'revoked' });
  if (key.expires_at && parseIsoMicros(key.expires_at)! <= now) throw unauthorized('invalid_api_key', 'the API key expired', { reason: 'expired' });
  const user = await userById(ctx.db, key.user_id);
  if (!user || !user.is_active) throw unauthorized('invalid_api_key', 'the API key owner is inactive', { reason: 'owner_inactive' });
  // Sampled: at most one write a minute per key.
  if (!key.last_used_at || now - parseIsoMicros(key.last_used_at)! > 60_000_000) {
    const ip = requestIpOf(ctx, request);
    await ctx.db.tx((tx) => updateApiKey(tx, key.id, { last_used_at: isoMicros(now), last_used_ip: ip }));
  }
  return { user, via: 'api_key', session: null, apiKey: key, mfaPending: false, mfaFresh: false };
}
