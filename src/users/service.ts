// Users: creation, profile and role changes, password resets, deletion.
// Every change writes its audit row in the same transaction.
import { Type, type Static } from '@sinclair/typebox';
import { sql } from 'drizzle-orm';
import { Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import type { Executor, Tx } from '../db/connect.ts';
import { conflict, notFound, validationFailed } from '../http/errors.ts';
import { nowIso } from '../lib/clock.ts';
import { canonicalEmail, isTimeZone } from '../lib/validate.ts';
import type { AppContext } from '../server/context.ts';
import type { Actor } from '../auth/actor.ts';
import { checkPasswordPolicy, hashPassword } from '../auth/passwords.ts';
import { revokeUserSessions } from '../auth/sessions.ts';
import { revokeUserDevices } from '../auth/mfa.ts';
import { activeAdminIds, countUsers, deleteUser, insertUser, listUsers, updateUser, userByEmail, userById, type UserRow } from './store.ts';

export type { UserRow };

export const UserPublic = Answer(
  {
    id: Uuid,
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    display_name: Type.String(),
    is_admin: Type.Boolean(),
    is_active: Type.Boolean(),
    timezone: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_login_at: Nullable(Timestamp),
  },
  'UserPublic',
);
export type UserPublic = Static<typeof UserPublic>;

/** display_name falls back to "first last", then to the e-mail's local part. */
export function toUserPublic(u: UserRow): UserPublic {
  const full = `${u.first_name} ${u.last_name}`.trim();
  return {
    id: u.id,
    email: u.email,
    first_name: u.first_name,
    last_name: u.last_name,
    display_name: u.display_name || full || u.email.split('@')[0]!,
    is_admin: u.is_admin,
    is_active: u.is_active,
    timezone: u.timezone,
    created_at: u.created_at,
    updated_at: u.updated_at,
    last_login_at: u.last_login_at,
  };
}

const field = (path: string, message: string, code?: string) => ({ location: 'body', path, message, ...(code ? { code } : {}) });

/** Checks a new password against the policy; 422 naming the field. */
export function assertPasswordPolicy(ctx: AppContext, password: string, path = '/password'): void {
  const v = checkPasswordPolicy(password, ctx.config.SVC_PASSWORD_MIN_LENGTH);
  if (v) throw validationFailed([field(path, v.message, v.code)]);
}

export function assertEmail(raw: string, path = '/email'): string {
  const email = canonicalEmail(raw);
  if (!email) throw validationFailed([field(path, 'must be an e-mail address')]);
  return email;
}

export function assertTimeZone(zone: string): void {
  if (!isTimeZone(zone)) throw validationFailed([field('/timezone', 'must be an IANA time zone such as Europe/Berlin or UTC')]);
}

/** PostgreSQL: serialises changes to the set of active admins (SQLite's write lock already does). */
async function lockAdmins(ex: Executor): Promise<void> {
  if (ex.dialect === 'postgres') await ex.run(sql`SELECT pg_advisory_xact_lock(${0x73766341})`);
}

export interface NewUserInput {
  email: string;
  password: string;
  first_name?: string;
  last_name?: string;
  display_name?: string;
  is_admin?: boolean;
  timezone?: string;
}

/** Validates and hashes (outside any transaction), then inserts within `tx`. */
export async function prepareUser(ctx: AppContext, input: NewUserInput): Promise<UserRow> {
  const email = assertEmail(input.email);
  assertPasswordPolicy(ctx, input.password);
  const timezone = input.timezone ?? 'UTC';
  assertTimeZone(timezone);
  const now = nowIso();
  return {
    id: crypto.randomUUID(),
    email,
    first_name: input.first_name?.trim() ?? '',
    last_name: input.last_name?.trim() ?? '',
    display_name: input.display_name?.trim() ?? '',
    password_hash: await hashPassword(input.password, ctx.config),
    is_admin: input.is_admin ?? false,
    is_active: true,
    timezone,
    created_at: now,
    updated_at: now,
    last_login_at: null,
    password_changed_at: now,
    failed_login_count: 0,
    locked_until: null,
    mfa_secret: null,
    mfa_enrolled_at: null,
  };
}

export async function insertPreparedUser(tx: Tx, ctx: AppContext, user: UserRow, actor: Actor, action = 'user.created'): Promise<UserPublic> {
  if (await userByEmail(tx, user.email)) throw conflict('a user with this e-mail address exists', {}, 'email_taken');
  await insertUser(tx, user);
  await ctx.audit.append(tx, {
    ...actor,
    action,
    target_type: 'user',
    target_id: user.id,
    metadata: { email: user.email, is_admin: user.is_admin },
  });
  return toUserPublic(user);
}

export async function createUser(ctx: AppContext, input: NewUserInput, actor: Actor): Promise<UserPublic> {
  const user = await prepareUser(ctx, input);
  return ctx.db.tx((tx) => insertPreparedUser(tx, ctx, user, actor));
}

export const listUsersPublic = async (ctx: AppContext, limit: number, offset: number): Promise<UserPublic[]> =>
  (await listUsers(ctx.db, limit, offset)).map(toUserPublic);

export async function getUser(ex: Executor, id: string): Promise<UserRow> {
  const user = await userById(ex, id);
  if (!user) throw notFound('user');
  return user;
}

export const findUserByEmail = (ex: Executor, email: string): Promise<UserRow | null> => userByEmail(ex, email);

export const isActiveUser = async (ex: Executor, id: string): Promise<boolean> => Boolean((await userById(ex, id))?.is_active);

export const usersExist = async (ex: Executor): Promise<boolean> => (await countUsers(ex)) > 0;

export interface UserPatch {
  first_name?: string;
  last_name?: string;
  display_name?: string;
  is_admin?: boolean;
  is_active?: boolean;
  timezone?: string;
}

export async function patchUser(ctx: AppContext, id: string, patch: UserPatch, callerId: string, actor: Actor): Promise<UserPublic> {
  if (patch.timezone !== undefined) assertTimeZone(patch.timezone);
  return ctx.db.tx(async (tx) => {
    await lockAdmins(tx);
    const user = await getUser(tx, id);
    const demotes = patch.is_admin === false && user.is_admin;
    const deactivates = patch.is_active === false && user.is_active;
    if (id === callerId && demotes) throw conflict('you cannot remove your own administrator role', {}, 'self_demotion');
    if (id === callerId && deactivates) throw conflict('you cannot deactivate your own account', {}, 'self_deactivation');
    if ((demotes || deactivates) && user.is_admin && user.is_active) {
      const admins = await activeAdminIds(tx);
      if (admins.length <= 1) throw conflict('this is the last active administrator', {}, 'last_admin');
    }
    const changes: Partial<UserRow> = {};
    for (const key of ['first_name', 'last_name', 'display_name', 'is_admin', 'is_active', 'timezone'] as const) {
      const value = patch[key];
      if (value !== undefined && value !== user[key]) (changes as Record<string, unknown>)[key] = typeof value === 'string' ? value.trim() : value;
    }
    const changed = Object.keys(changes);
    if (changed.length === 0) return toUserPublic(user);
    const now = nowIso();
    await updateUser(tx, id, { ...changes, updated_at: now });
    if (deactivates) await revokeUserSessions(tx, id, 'deactivated');
    await ctx.audit.append(tx, {
      ...actor,
      action: 'user.updated',
      target_type: 'user',
      target_id: id,
      metadata: {
        changed,
        ...(changes.is_admin !== undefined ? { is_admin: { from: user.is_admin, to: changes.is_admin } } : {}),
        ...(changes.is_active !== undefined ? { is_active: { from: user.is_active, to: changes.is_active } } : {}),
      },
    });
    return toUserPublic({ ...user, ...changes, updated_at: now });
  });
}

/** Sets a new password: every session and remembered device of the user ends. */
export async function setPassword(ctx: AppContext, id: string, password: string, actor: Actor, action: string, path = '/new_password'): Promise<void> {
  assertPasswordPolicy(ctx, password, path);
  const hash = await hashPassword(password, ctx.config);
  await ctx.db.tx(async (tx) => {
    await getUser(tx, id);
    const now = nowIso();
    await updateUser(tx, id, { password_hash: hash, password_changed_at: now, updated_at: now, failed_login_count: 0, locked_until: null });
    const sessions = await revokeUserSessions(tx, id, 'password_reset');
    const devices = await revokeUserDevices(tx, id);
    await ctx.audit.append(tx, { ...actor, action, target_type: 'user', target_id: id, metadata: { sessions_revoked: sessions, devices_revoked: devices } });
  });
}

export async function removeUser(ctx: AppContext, id: string, callerId: string | null, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    await lockAdmins(tx);
    const user = await getUser(tx, id);
    if (id === callerId) throw conflict('you cannot delete your own account', {}, 'self_delete');
    if (user.is_admin && user.is_active && (await activeAdminIds(tx)).length <= 1) {
      throw conflict('this is the last active administrator', {}, 'last_admin');
    }
    // The actor of surviving audit rows is anonymised; the chain covers a
    // keyed digest of it instead, so the rows still verify.
    await tx.run(sql`UPDATE audit_log SET user_id = NULL WHERE user_id = ${id}`);
    await deleteUser(tx, id);
    await ctx.audit.append(tx, { ...actor, action: 'user.deleted', target_type: 'user', target_id: id, metadata: { email: user.email } });
  });
}
