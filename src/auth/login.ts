// Password login. Every answer takes at least SVC_LOGIN_MIN_DURATION_MS and
// every failure looks the same (401 invalid_credentials), whether the
// address is unknown, the password wrong, the account inactive or locked, so
// neither content nor timing tells which accounts exist. Per-address
// throttling and per-account lockout slow guessing; every attempt is audited.
import { tooManyRequests, unauthorized } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros, sleep } from '../lib/clock.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import { canonicalEmail } from '../lib/validate.ts';
import type { AppContext } from '../server/context.ts';
import { findUserByEmail, setAuthFields, type UserRow } from '../users/service.ts';
import type { Actor } from './actor.ts';
import { touchTrustedDevice, trustedDeviceMatches } from './mfa.ts';
import { verifyPassword } from './passwords.ts';
import { createSession, type NewSession } from './sessions.ts';


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
  const device = u.mfa_enrolled_at ? await trustedDeviceMatches(ctx, u.id, trustToken) : null;
  const mfaRequired = u.mfa_enrolled_at !== null && !device;
  const loginAt = nowIso();
  const session = await ctx.db.tx(async (tx) => {
    await setAuthFields(tx, u.id, { failed_login_count: 0, locked_until: null, last_login_at: loginAt });
    const created = await createSession(tx, ctx, u, {
      remember: Boolean(input.remember_me),
      ip: actor.source_ip ?? null,
      userAgent: actor.user_agent ?? null,
      mfaVerified: device !== null,
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
      metadata: { mfa_required: mfaRequired, remember_me: Boolean(input.remember_me) },
    });
    return created;
  });
  return { user: { ...u, last_login_at: loginAt }, mfaRequired, session };
}

