// Queries of the users table.
import { and, asc, count, desc, eq } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import type { users } from './tables.ts';

export type UserRow = typeof users.sqlite.$inferSelect;
export type NewUser = typeof users.sqlite.$inferInsert;

export async function userById(ex: Executor, id: string): Promise<UserRow | null> {
  return (await ex.q.select().from(ex.t.users).where(eq(ex.t.users.id, id)))[0] ?? null;
}

export async function userByEmail(ex: Executor, email: string): Promise<UserRow | null> {
  return (await ex.q.select().from(ex.t.users).where(eq(ex.t.users.email, email)))[0] ?? null;
}

export async function insertUser(ex: Executor, row: NewUser): Promise<void> {
  await ex.q.insert(ex.t.users).values(row);
}

export async function updateUser(ex: Executor, id: string, changes: Partial<UserRow>): Promise<void> {
  await ex.q.update(ex.t.users).set(changes).where(eq(ex.t.users.id, id));
}

export async function deleteUser(ex: Executor, id: string): Promise<void> {
  await ex.q.delete(ex.t.users).where(eq(ex.t.users.id, id));
}

export async function countUsers(ex: Executor): Promise<number> {
  return (await ex.q.select({ n: count() }).from(ex.t.users))[0]!.n;
}

export async function activeAdminIds(ex: Executor): Promise<string[]> {
  const t = ex.t.users;
  return (await ex.q.select({ id: t.id }).from(t).where(and(eq(t.is_admin, true), eq(t.is_active, true)))).map((r) => r.id);
}

export async function listUsers(ex: Executor, limit: number, offset: number): Promise<UserRow[]> {
  const t = ex.t.users;
  return ex.q.select().from(t).orderBy(desc(t.created_at), asc(t.id)).limit(limit).offset(offset);
}

/** Login bookkeeping and MFA material, written by the auth area. */
export type AuthFields = Partial<Pick<UserRow, 'failed_login_count' | 'locked_until' | 'last_login_at' | 'mfa_secret' | 'mfa_enrolled_at' | 'updated_at'>>;
export const setAuthFields = (ex: Executor, id: string, fields: AuthFields): Promise<void> => updateUser(ex, id, fields);
