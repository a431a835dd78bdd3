// Two-factor authentication: TOTP enrolment (secret sealed at rest),
// verification with a code or a one-use recovery code, remembered devices,
// and the admin reset the CLI offers (there is no REST surface for it).
import type { Executor, Tx } from '../db/connect.ts';
import { ApiError, badRequest, conflict, notFound, tooManyRequests } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { safeEqual } from '../lib/crypto.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import { seal, unseal } from '../lib/seal.ts';
import type { AppContext } from '../server/context.ts';
import { setAuthFields, userById, type UserRow } from '../users/store.ts';
import type { Actor } from './actor.ts';
import { TRUST_COOKIE, cookieHeader } from './cookies.ts';
import type { Principal } from './principal.ts';
import { markMfaVerified, revokeUserSessions } from './sessions.ts';
import {
  consumeRecoveryCode,
  deleteRecoveryCodes,
  insertRecoveryCodes,
  insertTrustedDevice,
  revokeTrustedDevicesOf,
  trustedDeviceByHashes,
  trustedDevicesOf,
  unusedRecoveryCodes,
  updateTrustedDevice,
  type TrustedDeviceRow,
} from './store.ts';
import { mastersOf, mintToken, tokenHash, tokenHashes } from './tokens.ts';
import { newRecoveryCode, newTotpKey, recoveryCodeHash, totpSecretText, totpUri, verifyTotp } from './totp.ts';
import { verifyPassword } from './passwords.ts';

const SEAL_PURPOSE = 'totp';
const sealOwner = (userId: string) => `user:${userId}`;
/** Code attempts per address per minute (per worker process). */
function throttle(ctx: AppContext, ip: string | null): void {
  const attempts = limiterFor(ctx, 'mfa-code', 10, 60_000);
  const key = ip ?? 'unknown';
  if (!attempts.take(key)) {
    throw tooManyRequests(attempts.retryAfterSeconds(key), 'too many authenticator code attempts; try again in a minute');
  }
}

function totpKeyOf(ctx: AppContext, user: UserRow): Uint8Array | null {
  if (!user.mfa_secret) return null;
  const m = mastersOf(ctx.config);
  const key = unseal(user.mfa_secret, [m.current, ...m.previous], SEAL_PURPOSE, sealOwner(user.id));
  return key ? new Uint8Array(key) : null;
}

async function freshUser(ex: Executor, id: string): Promise<UserRow> {
  const user = await userById(ex, id);
  if (!user) throw notFound('user');
  return user;
}

export async function mfaStatus(ctx: AppContext, userId: string) {
  const user = await freshUser(ctx.db, userId);
  return {
    enrolled: user.mfa_enrolled_at !== null,
    enrolled_at: user.mfa_enrolled_at,
    pending_enrolment: user.mfa_enrolled_at === null && user.mfa_secret !== null,
    remaining_recovery_codes: user.mfa_enrolled_at ? (await unusedRecoveryCodes(ctx.db, userId)).length : 0,
  };
}

export async function startEnrolment(ctx: AppContext, who: Principal, actor: Actor, issuerHost: string) {
  return ctx.db.tx(async (tx) => {
    const user = await freshUser(tx, who.user.id);
    if (user.mfa_enrolled_at) throw conflict('two-factor authentication is already on; disable it first to enrol a new authenticator', {}, 'already_enrolled');
    const key = newTotpKey();
    await setAuthFields(tx, user.id, { mfa_secret: seal(key, ctx.config.SVC_SECRET, SEAL_PURPOSE, sealOwner(user.id)), updated_at: nowIso() });
    await ctx.audit.append(tx, { ...actor, action: 'user.mfa_enroll_started', target_type: 'user', target_id: user.id });
    return { secret_base32: totpSecretText(key), provisioning_url: totpUri(`svc (${issuerHost})`, user.email, key) };
  });
}

async function issueRecoveryCodes(tx: Tx, ctx: AppContext, userId: string): Promise<string[]> {
  await deleteRecoveryCodes(tx, userId);
  const codes = Array.from({ length: ctx.config.SVC_MFA_RECOVERY_CODE_COUNT }, newRecoveryCode);
  const now = nowIso();
  await insertRecoveryCodes(
    tx,
    codes.map((c) => ({ id: crypto.randomUUID(), user_id: userId, code_hash: recoveryCodeHash(ctx.config.SVC_SECRET, c), created_at: now, consumed_at: null })),
  );
  return codes;
}

export async function completeEnrolment(ctx: AppContext, who: Principal, code: string, actor: Actor): Promise<{ recovery_codes: string[] }> {
  throttle(ctx, actor.source_ip ?? null);
  return ctx.db.tx(async (tx) => {
    const user = await freshUser(tx, who.user.id);
    if (user.mfa_enrolled_at) throw conflict('two-factor authentication is already on', {}, 'already_enrolled');
    const key = totpKeyOf(ctx, user);
    if (!key) throw conflict('start an enrolment first', {}, 'no_pending_enrolment');
    if (!verifyTotp(key, code.trim())) throw badRequest('wrong_code', 'that code is not right; check the time on your device and try again');
    await setAuthFields(tx, user.id, { mfa_enrolled_at: nowIso(), updated_at: nowIso() });
    const codes = await issueRecoveryCodes(tx, ctx, user.id);
    // Enrolling proves possession: this session counts as freshly verified.
    await markMfaVerified(tx, who.session!.id);
    await ctx.audit.append(tx, { ...actor, action: 'user.mfa_enrolled', target_type: 'user', target_id: user.id });
    return { recovery_codes: codes };
  });
}

export interface VerifyResult {
  ok: true;
  used_recovery_code: boolean;
  remaining_recovery_codes: number;
  trustCookie: ((secure: boolean) => string) | null;
}

/** Checks a TOTP or recovery code; marks the session verified. */
export async function verifySecondFactor(
  ctx: AppContext,
  who: Principal,
  input: { code: string; remember_device?: boolean },
  actor: Actor,
): Promise<VerifyResult> {
  throttle(ctx, actor.source_ip ?? null);
  const user = await freshUser(ctx.db, who.user.id);
  const key = user.mfa_enrolled_at ? totpKeyOf(ctx, user) : null;
  if (!key) throw conflict('two-factor authentication is not on for this account', {}, 'mfa_not_enrolled');
  const code = input.code.trim();
  return ctx.db.tx(async (tx) => {
    let usedRecovery = false;
    let ok = verifyTotp(key, code);
    if (!ok && !/^\d{6}$/.test(code)) {
      const wanted = recoveryCodeHash(ctx.config.SVC_SECRET, code);
      // Compare against every unused code (constant time each), consume the match atomically.
      let match: string | null = null;
      for (const row of await unusedRecoveryCodes(tx, user.id)) if (safeEqual(row.code_hash, wanted)) match = row.id;
      ok = match !== null && (await consumeRecoveryCode(tx, match, nowIso()));
      usedRecovery = ok;
    }
    if (!ok) {
      await ctx.audit.append(tx, { ...actor, action: 'user.mfa_verify_failed', result: 'failed', target_type: 'user', target_id: user.id });
      return null;
    }
    await markMfaVerified(tx, who.session!.id);
    await ctx.audit.append(tx, {
      ...actor,
      action: usedRecovery ? 'user.mfa_recovery_code_used' : 'user.mfa_verified',
      target_type: 'user',
      target_id: user.id,
    });
    const trustCookie = input.remember_device ? await rememberDevice(tx, ctx, user.id, actor) : null;
    return { ok: true as const, used_recovery_code: usedRecovery, remaining_recovery_codes: (await unusedRecoveryCodes(tx, user.id)).length, trustCookie };
  }).then((r) => {
    if (!r) throw badRequest('wrong_code', 'that code is not right');
    return r;
  });
}

async function rememberDevice(tx: Tx, ctx: AppContext, userId: string, actor: Actor): Promise<(secure: boolean) => string> {
  const token = mintToken();
  const days = ctx.config.SVC_MFA_REMEMBER_DEVICE_DAYS;
  const now = nowMicros();
  const row: TrustedDeviceRow = {
    id: crypto.randomUUID(),
    user_id: userId,
    token_hash: tokenHash(mastersOf(ctx.config), 'trusted-device', token),
    label: deviceLabel(actor.user_agent ?? null),
    created_at: isoMicros(now),
    last_seen_at: isoMicros(now),
    expires_at: isoMicros(now + days * 86_400_000_000),
    revoked_at: null,
  };
  await insertTrustedDevice(tx, row);
  await ctx.audit.append(tx, { ...actor, action: 'user.mfa_trusted_device_added', target_type: 'trusted_device', target_id: row.id, metadata: { label: row.label } });
  return (secure) => cookieHeader({ name: TRUST_COOKIE, value: token, maxAgeSeconds: days * 86400, httpOnly: true, sameSite: 'Strict' }, secure);
}

/** "Firefox on Linux", from a User-Agent; good enough to tell devices apart. */
export function deviceLabel(ua: string | null): string {
  if (!ua) return 'Unknown device';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const os = /Windows/.test(ua) ? 'Windows' : /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : 'unknown OS';
  return `${browser} on ${os}`;
}

/** At login: a live remembered-device cookie of this user skips the MFA step. */
export async function trustedDeviceMatches(ctx: AppContext, userId: string, token: string | null): Promise<TrustedDeviceRow | null> {
  if (!token) return null;
  const device = await trustedDeviceByHashes(ctx.db, userId, tokenHashes(mastersOf(ctx.config), 'trusted-device', token));
  if (!device || device.revoked_at || parseIsoMicros(device.expires_at)! <= nowMicros()) return null;
  return device;
}

export const touchTrustedDevice = (ex: Executor, id: string): Promise<void> => updateTrustedDevice(ex, id, { last_seen_at: nowIso() });

export async function listTrustedDevices(ctx: AppContext, userId: string) {
  const now = nowMicros();
  return (await trustedDevicesOf(ctx.db, userId)).map((d) => ({
    id: d.id,
    label: d.label,
    created_at: d.created_at,
    last_seen_at: d.last_seen_at,
    expires_at: d.expires_at,
    revoked_at: d.revoked_at,
    active: !d.revoked_at && parseIsoMicros(d.expires_at)! > now,
  }));
}

export async function revokeTrustedDevice(ctx: AppContext, userId: string, deviceId: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const device = (await trustedDevicesOf(tx, userId)).find((d) => d.id === deviceId);
    if (!device) throw notFound('device');
    if (!device.revoked_at) await updateTrustedDevice(tx, device.id, { revoked_at: nowIso() });
    await ctx.audit.append(tx, { ...actor, action: 'user.mfa_trusted_device_revoked', target_type: 'trusted_device', target_id: device.id });
  });
}

export const revokeUserDevices = (ex: Executor, userId: string): Promise<number> => revokeTrustedDevicesOf(ex, userId, nowIso());

export async function regenerateRecoveryCodes(ctx: AppContext, userId: string, actor: Actor): Promise<{ recovery_codes: string[] }> {
  return ctx.db.tx(async (tx) => {
    const user = await freshUser(tx, userId);
    if (!user.mfa_enrolled_at) throw conflict('two-factor authentication is not on for this account', {}, 'mfa_not_enrolled');
    const codes = await issueRecoveryCodes(tx, ctx, userId);
    await ctx.audit.append(tx, { ...actor, action: 'user.mfa_recovery_codes_regenerated', target_type: 'user', target_id: userId });
    return { recovery_codes: codes };
  });
}

/** Clears secret, recovery codes and remembered devices in one transaction. */
async function clearMfa(tx: Tx, userId: string): Promise<{ codes: number; devices: number }> {
  await setAuthFields(tx, userId, { mfa_secret: null, mfa_enrolled_at: null, updated_at: nowIso() });
  return { codes: await deleteRecoveryCodes(tx, userId), devices: await revokeUserDevices(tx, userId) };
}

export async function disableMfa(ctx: AppContext, who: Principal, input: { password: string; code: string }, actor: Actor): Promise<void> {
  throttle(ctx, actor.source_ip ?? null);
  const user = await freshUser(ctx.db, who.user.id);
  const key = user.mfa_enrolled_at ? totpKeyOf(ctx, user) : null;
  if (!key) throw conflict('two-factor authentication is not on for this account', {}, 'mfa_not_enrolled');
  const passwordOk = await verifyPassword(user.password_hash, input.password, ctx.config);
  if (!passwordOk || !verifyTotp(key, input.code.trim())) throw badRequest('wrong_credentials', 'password or code is not right');
  await ctx.db.tx(async (tx) => {
    const cleared = await clearMfa(tx, user.id);
    await ctx.audit.append(tx, { ...actor, action: 'user.mfa_disabled', target_type: 'user', target_id: user.id, metadata: cleared });
  });
}

/** `svc reset-mfa`: for an admin whose user lost the device. Ends the user's
 * sessions too, so no session keeps a verification it can no longer renew. */
export async function resetMfaByAdmin(ctx: AppContext, userId: string, actor: Actor): Promise<{ codes: number; devices: number }> {
  return ctx.db.tx(async (tx) => {
    const user = await freshUser(tx, userId);
    if (!user.mfa_secret) throw new ApiError(409, 'mfa_not_enrolled', 'two-factor authentication is not on for this account');
    const cleared = await clearMfa(tx, userId);
    const sessions = await revokeUserSessions(tx, userId, 'mfa_reset');
    await ctx.audit.append(tx, {
      ...actor,
      action: 'user.mfa_reset_by_admin',
      target_type: 'user',
      target_id: userId,
      metadata: { ...cleared, sessions_revoked: sessions, email: user.email },
    });
    return cleared;
  });
}
