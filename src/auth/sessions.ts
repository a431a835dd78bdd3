// Server-side browser sessions. The cookie carries a random token; the
// database keeps only its keyed hash. A session ends at its absolute
// lifetime, after the idle timeout (unless "keep me signed in"), when it is
// revoked, or when its user is deactivated or changes password.
import type { Executor, Tx } from '../db/connect.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import { userById, type UserRow } from '../users/store.ts';
import { CSRF_COOKIE, SESSION_COOKIE, cookieHeader } from './cookies.ts';
import { insertSession, liveSessionsOf, revokeSessionsOf, sessionByHashes, updateSession, type SessionRow } from './store.ts';
import { mastersOf, mintToken, tokenHash, tokenHashes } from './tokens.ts';

const TOUCH_EVERY_MICROS = 60_000_000;

export interface NewSession {
  session: SessionRow;
  token: string;
  cookies: (secure: boolean) => string[];
}

export async function createSession(
  tx: Tx,
  ctx: AppContext,
  user: UserRow,
  opts: { remember: boolean; ip: string | null; userAgent: string | null; mfaVerified: boolean; mfaVia?: 'idp' },
): Promise<NewSession> {
  const token = mintToken();
  const now = nowMicros();
  const lifetime = opts.remember ? ctx.config.SVC_SESSION_REMEMBER_ME_LIFETIME_SECONDS : ctx.config.SVC_SESSION_ABSOLUTE_LIFETIME_SECONDS;
  const session: SessionRow = {
    id: crypto.randomUUID(),
    user_id: user.id,
    token_hash: tokenHash(mastersOf(ctx.config), 'session', token),
    csrf_token: mintToken(),
    issued_at: isoMicros(now),
    expires_at: isoMicros(now + lifetime * 1_000_000),
    last_seen_at: isoMicros(now),
    remember: opts.remember,
    revoked_at: null,
    revocation_reason: null,
    ip: opts.ip,
    user_agent: opts.userAgent?.slice(0, 256) ?? null,
    mfa_verified_at: opts.mfaVerified ? isoMicros(now) : null,
    mfa_via: opts.mfaVerified ? (opts.mfaVia ?? null) : null,
  };
  await insertSession(tx, session);
  const sameSite = ctx.config.SVC_SESSION_COOKIE_SAMESITE === 'strict' ? 'Strict' : 'Lax';
  return {
    session,
    token,
    cookies: (secure) => [
      // Only a persistent cookie for "keep me signed in"; otherwise the browser drops it at exit.
      cookieHeader({ name: SESSION_COOKIE, value: token, maxAgeSeconds: lifetime, httpOnly: true, sameSite }, secure),
      cookieHeader({ name: CSRF_COOKIE, value: session.csrf_token, maxAgeSeconds: lifetime, httpOnly: false, sameSite: 'Strict' }, secure),
    ],
  };
}

export async function revokeSession(ex: Executor, id: string, reason: string): Promise<void> {
  await updateSession(ex, id, { revoked_at: nowIso(), revocation_reason: reason });
}

/** Ends every live session of a user (but `exceptId`); returns how many. */
export const revokeUserSessions = (ex: Executor, userId: string, reason: string, exceptId?: string): Promise<number> =>
  revokeSessionsOf(ex, userId, reason, nowIso(), exceptId);

export const liveSessions = (ex: Executor, userId: string): Promise<SessionRow[]> => liveSessionsOf(ex, userId, nowIso());

export const markMfaVerified = (ex: Executor, sessionId: string): Promise<void> => updateSession(ex, sessionId, { mfa_verified_at: nowIso() });

/** The live session and user behind a cookie token, or null. Ends sessions
 * found expired, idle, or belonging to an inactive user. */
export async function resolveSession(ctx: AppContext, token: string): Promise<{ session: SessionRow; user: UserRow } | null> {
  const session = await sessionByHashes(ctx.db, tokenHashes(mastersOf(ctx.config), 'session', token));
  if (!session || session.revoked_at) return null;
  const now = nowMicros();
  if (parseIsoMicros(session.expires_at)! <= now) return null;
  const end = (reason: string) => ctx.db.tx((tx) => revokeSession(tx, session.id, reason)).then(() => null);
  if (!session.remember && parseIsoMicros(session.last_seen_at)! + ctx.config.SVC_SESSION_IDLE_TIMEOUT_SECONDS * 1_000_000 <= now) {
    return end('idle');
  }
  const user = await userById(ctx.db, session.user_id);
  if (!user || !user.is_active) return end('user_inactive');
  if (session.issued_at < user.password_changed_at) return end('password_changed');
  if (now - parseIsoMicros(session.last_seen_at)! > TOUCH_EVERY_MICROS) {
    await ctx.db.tx((tx) => updateSession(tx, session.id, { last_seen_at: isoMicros(now) }));
  }
  return { session, user };
}
