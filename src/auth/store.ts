// Queries of sessions, MFA material, trusted devices and API keys.
import { and, desc, eq, gt, inArray, isNull, ne } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import type { apiKeys, mfaRecoveryCodes, sessions, trustedDevices } from './tables.ts';

export type SessionRow = typeof sessions.sqlite.$inferSelect;
export type ApiKeyRow = typeof apiKeys.sqlite.$inferSelect;
export type TrustedDeviceRow = typeof trustedDevices.sqlite.$inferSelect;
export type RecoveryCodeRow = typeof mfaRecoveryCodes.sqlite.$inferSelect;

// --- sessions ---
export async function insertSession(ex: Executor, row: SessionRow): Promise<void> {
  await ex.q.insert(ex.t.sessions).values(row);
}

export async function sessionByHashes(ex: Executor, hashes: string[]): Promise<SessionRow | null> {
  const t = ex.t.sessions;
  return (await ex.q.select().from(t).where(inArray(t.token_hash, hashes)))[0] ?? null;
}

export async function updateSession(ex: Executor, id: string, changes: Partial<SessionRow>): Promise<void> {
  await ex.q.update(ex.t.sessions).set(changes).where(eq(ex.t.sessions.id, id));
}

export async function liveSessionsOf(ex: Executor, userId: string, now: string): Promise<SessionRow[]> {
  const t = ex.t.sessions;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.user_id, userId), isNull(t.revoked_at), gt(t.expires_at, now)))
    .orderBy(desc(t.issued_at));
}

/** Revokes every live session of a user (optionally all but one); returns how many. */
export async function revokeSessionsOf(ex: Executor, userId: string, reason: string, now: string, exceptId?: string): Promise<number> {
  const t = ex.t.sessions;
  const rows = await ex.q
    .update(t)
    .set({ revoked_at: now, revocation_reason: reason })
    .where(and(eq(t.user_id, userId), isNull(t.revoked_at), exceptId ? ne(t.id, exceptId) : undefined))
    .returning({ id: t.id });
  return rows.length;
}

// --- MFA ---
export async function insertRecoveryCodes(ex: Executor, rows: RecoveryCodeRow[]): Promise<void> {
  if (rows.length > 0) await ex.q.insert(ex.t.mfaRecoveryCodes).values(rows);
}

export async function unusedRecoveryCodes(ex: Executor, userId: string): Promise<RecoveryCodeRow[]> {
  const t = ex.t.mfaRecoveryCodes;
  return ex.q.select().from(t).where(and(eq(t.user_id, userId), isNull(t.consumed_at)));
}

/** Marks a code used if it still is unused; true when this call consumed it. */
export async function consumeRecoveryCode(ex: Executor, id: string, now: string): Promise<boolean> {
  const t = ex.t.mfaRecoveryCodes;
  return (await ex.q.update(t).set({ consumed_at: now }).where(and(eq(t.id, id), isNull(t.consumed_at))).returning({ id: t.id })).length === 1;
}

export async function deleteRecoveryCodes(ex: Executor, userId: string): Promise<number> {
  const t = ex.t.mfaRecoveryCodes;
  return (await ex.q.delete(t).where(eq(t.user_id, userId)).returning({ id: t.id })).length;
}

export async function insertTrustedDevice(ex: Executor, row: TrustedDeviceRow): Promise<void> {
  await ex.q.insert(ex.t.trustedDevices).values(row);
}

export async function trustedDeviceByHashes(ex: Executor, userId: string, hashes: string[]): Promise<TrustedDeviceRow | null> {
  const t = ex.t.trustedDevices;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), inArray(t.token_hash, hashes))))[0] ?? null;
}

export async function trustedDevicesOf(ex: Executor, userId: string): Promise<TrustedDeviceRow[]> {
  const t = ex.t.trustedDevices;
  return ex.q.select().from(t).where(eq(t.user_id, userId)).orderBy(desc(t.created_at));
}

export async function updateTrustedDevice(ex: Executor, id: string, changes: Partial<TrustedDeviceRow>): Promise<void> {
  await ex.q.update(ex.t.trustedDevices).set(changes).where(eq(ex.t.trustedDevices.id, id));
}

/** Revokes every live remembered device of a user; returns how many. */
export async function revokeTrustedDevicesOf(ex: Executor, userId: string, now: string): Promise<number> {
  const t = ex.t.trustedDevices;
  return (await ex.q.update(t).set({ revoked_at: now }).where(and(eq(t.user_id, userId), isNull(t.revoked_at))).returning({ id: t.id })).length;
}

// --- API keys ---
export async function insertApiKey(ex: Executor, row: ApiKeyRow): Promise<void> {
  await ex.q.insert(ex.t.apiKeys).values(row);
}

export async function apiKeyByHashes(ex: Executor, hashes: string[]): Promise<ApiKeyRow | null> {
  const t = ex.t.apiKeys;
  return (await ex.q.select().from(t).where(inArray(t.token_hash, hashes)))[0] ?? null;
}

export async function apiKeysOf(ex: Executor, userId: string): Promise<ApiKeyRow[]> {
  const t = ex.t.apiKeys;
  return ex.q.select().from(t).where(eq(t.user_id, userId)).orderBy(desc(t.created_at));
}

export async function updateApiKey(ex: Executor, id: string, changes: Partial<ApiKeyRow>): Promise<void> {
  await ex.q.update(ex.t.apiKeys).set(changes).where(eq(ex.t.apiKeys.id, id));
}
