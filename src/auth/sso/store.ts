// Queries of linked identities and pending logins, for both dialects.
import { and, asc, eq, isNull, lt } from 'drizzle-orm';
import type { Executor } from '../../db/connect.ts';
import { ssoIdentities, ssoLoginStates } from './tables.ts';

export type IdentityRow = typeof ssoIdentities.sqlite.$inferSelect;
export type LoginStateRow = typeof ssoLoginStates.sqlite.$inferSelect;

const identities = (ex: Executor) => (ex.dialect === 'sqlite' ? ssoIdentities.sqlite : ssoIdentities.pg);
const states = (ex: Executor) => (ex.dialect === 'sqlite' ? ssoLoginStates.sqlite : ssoLoginStates.pg);

export async function identityBySubject(ex: Executor, issuer: string, subject: string): Promise<IdentityRow | null> {
  const t = identities(ex);
  return (await ex.q.select().from(t).where(and(eq(t.issuer, issuer), eq(t.subject, subject))))[0] ?? null;
}

export async function identitiesOf(ex: Executor, userId: string): Promise<IdentityRow[]> {
  const t = identities(ex);
  return ex.q.select().from(t).where(eq(t.user_id, userId)).orderBy(asc(t.created_at));
}

export async function insertIdentity(ex: Executor, row: IdentityRow): Promise<void> {
  await ex.q.insert(identities(ex)).values(row);
}

export async function touchIdentity(ex: Executor, id: string, at: string): Promise<void> {
  const t = identities(ex);
  await ex.q.update(t).set({ last_login_at: at }).where(eq(t.id, id));
}

export async function deleteIdentity(ex: Executor, userId: string, id: string): Promise<boolean> {
  const t = identities(ex);
  return (await ex.q.delete(t).where(and(eq(t.id, id), eq(t.user_id, userId))).returning({ id: t.id })).length === 1;
}

export async function insertLoginState(ex: Executor, row: LoginStateRow): Promise<void> {
  await ex.q.insert(states(ex)).values(row);
}

export async function loginState(ex: Executor, id: string): Promise<LoginStateRow | null> {
  const t = states(ex);
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}

/** Marks a pending login used; true only for the one call that did (a replay gets false). */
export async function consumeLoginState(ex: Executor, id: string, at: string): Promise<boolean> {
  const t = states(ex);
  return (await ex.q.update(t).set({ consumed_at: at }).where(and(eq(t.id, id), isNull(t.consumed_at))).returning({ id: t.id })).length === 1;
}

/** Forgets pending logins that ended before `before` (used ones are kept that long to recognise replays). */
export async function pruneLoginStates(ex: Executor, before: string): Promise<void> {
  const t = states(ex);
  await ex.q.delete(t).where(lt(t.expires_at, before));
}
