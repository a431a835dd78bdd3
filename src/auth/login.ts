// Password login. Every answer takes at least SVC_LOGIN_MIN_DURATION_MS and
// every failure looks the same (401 invalid_credentials), whether the
// address is unknown, the password wrong, the account inactive or locked, so
// neither content nor timing tells which accounts exist. Per-address
// throttling and per-account lockout slow guessing; every attempt is audited.
import { forbidden, tooManyRequests, unauthorized } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros, sleep } from '../lib/clock.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import { canonicalEmail } from '../lib/validate.ts';
import type { AppContext } from '../server/context.ts';
import { findUserByEmail } from '../users/service.ts';
import { setAuthFields, type UserRow } from '../users/store.ts';
import type { Actor } from './actor.ts';
import { touchTrustedDevice, trustedDeviceMatches } from './mfa.ts';
import { verifyPassword } from './passwords.ts';
import { createSession, type NewSession } from './sessions.ts';
import { passwordLoginAllowed } from './sso/policy.ts';


export interface LoginInput {
  email: string;
  password: string;
  remember_me?: boolean;
}

export interface LoginResult {
  user: UserRow;
  mfaRequired: boolean;
  session: NewSession;
}

export async function login(ctx: AppContext, input: LoginInput, actor: Actor, trustToken: string | null): Promise<LoginResult> {
  // Login attempts per address per minute (per worker process).
  const perIp = limiterFor(ctx, 'login', 20, 60_000);
  const ipKey = actor.source_ip ?? 'unknown';
  if (!perIp.take(ipKey)) throw tooManyRequests(perIp.retryAfterSeconds(ipKey), 'too many login attempts; try again in a minute');
  const started = nowMicros();
  const finish = async () => {
    const left = ctx.config.SVC_LOGIN_MIN_DURATION_MS - (nowMicros() - started) / 1000;
    if (left > 0) await sleep(left);
  };
  try {
    return await attempt(ctx, input, actor, trustToken);
  } finally {
    await finish();
  }
}

async function attempt(ctx: AppContext, input: LoginInput, actor: Actor, trustToken: string | null): Promise<LoginResult> {
  const email = canonicalEmail(input.email);
  // Passwords turned off in favour of single sign-on: only the break-glass account may use one.
  if (!passwordLoginAllowed(ctx.config, input.email)) {
    await ctx.audit.record(ctx.db, { ...actor, action: 'auth.login', result: 'failed', target_type: 'user', target_id: '', metadata: { reason: 'password_login_disabled' } });
    throw forbidden('password_login_disabled', 'password sign-in is turned off here; use single sign-on');
  }
  const user = email ? await findUserByEmail(ctx.db, email) : null;
  const now = nowMicros();
  const locked = Boolean(user?.locked_until && parseIsoMicros(user.locked_until)! > now);
  // Always hash, also for unknown addresses (a fixed dummy hash).
  const passwordOk = await verifyPassword(user?.password_hash ?? null, input.password, ctx.config);
  const reason = !user ? 'unknown_user' : locked ? 'locked' : !passwordOk ? 'wrong_password' : !user.is_active ? 'inactive' : null;
  if (reason) {
    await ctx.db.tx(async (tx) => {
      const metadata: Record<string, unknown> = { reason };
      if (user && reason === 'wrong_password') {
        const failures = user.failed_login_count + 1;
        const lock = failures >= ctx.config.SVC_LOGIN_LOCKOUT_THRESHOLD;
        await setAuthFields(tx, user.id, {
          failed_login_count: lock ? 0 : failures,
          locked_until: lock ? isoMicros(now + ctx.config.SVC_LOGIN_LOCKOUT_DURATION_SECONDS * 1_000_000) : user.locked_until,
        });
        if (lock) metadata.locked_for_seconds = ctx.config.SVC_LOGIN_LOCKOUT_DURATION_SECONDS;
      }
      await ctx.audit.append(tx, { ...actor, user_id: user?.id ?? null, action: 'auth.login', result: 'failed', target_type: 'user', target_id: user?.id ?? '', metadata });
    });
    throw unauthorized('invalid_credentials', 'e-mail address or password is not right');
  }
  const u = user!;
  return completeSignIn(ctx, u, { remember: Boolean(input.remember_me), trustToken, mfaAsserted: false, metadata: {} }, actor);
}

/** The end of every successful sign-in, by password or single sign-on (auth/sso): failure counters
 * reset, last login, the session (MFA-verified when a remembered device or the identity provider
 * vouches for it), and the `auth.login` row with `metadata`. */
export async function completeSignIn(
  ctx: AppContext,
  u: UserRow,
  how: { remember: boolean; trustToken: string | null; mfaAsserted: boolean; metadata: Record<string, unknown> },
  actor: Actor,
): Promise<LoginResult> {
  const device = u.mfa_enrolled_at && !how.mfaAsserted ? await trustedDeviceMatches(ctx, u.id, how.trustToken) : null;
  const mfaRequired = u.mfa_enrolled_at !== null && !how.mfaAsserted && !device;
  const loginAt = nowIso();
  const session = await ctx.db.tx(async (tx) => {
    await setAuthFields(tx, u.id, { failed_login_count: 0, locked_until: null, last_login_at: loginAt });
    const created = await createSession(tx, ctx, u, {
      remember: how.remember,
      ip: actor.source_ip ?? null,
      userAgent: actor.user_agent ?? null,
      mfaVerified: how.mfaAsserted || device !== null,
      ...(how.mfaAsserted ? { mfaVia: 'idp' as const } : {}),
    });
    if (device) {
      await touchTrustedDevice(tx, device.id);
      await ctx.audit.append(tx, { ...actor, user_id: u.id, action: 'user.mfa_trusted_device_used', target_type: 'trusted_device', target_id: device.id });
    }
    await ctx.audit.append(tx, {
      ...actor,
      user_id: u.id,
      action: 'auth.login',
      target_type: 'user',
      target_id: u.id,
      metadata: { ...how.metadata, mfa_required: mfaRequired, remember_me: how.remember },
    });
    return created;
  });
  return { user: { ...u, last_login_at: loginAt }, mfaRequired, session };
}

