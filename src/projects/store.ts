// Queries of projects, memberships and invitations.
import { and, asc, count, eq, gt, isNull } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import type { invitations, memberships, projects } from './tables.ts';

export type ProjectRow = typeof projects.sqlite.$inferSelect;
export type MembershipRow = typeof memberships.sqlite.$inferSelect;
export type InvitationRow = typeof invitations.sqlite.$inferSelect;
export type Role = MembershipRow['role'];

export async function projectBySlug(ex: Executor, slug: string): Promise<ProjectRow | null> {
  const t = ex.t.projects;
  return (await ex.q.select().from(t).where(eq(t.slug, slug)))[0] ?? null;
}

export async function projectById(ex: Executor, id: string): Promise<ProjectRow | null> {
  const t = ex.t.projects;
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}

export async function allProjects(ex: Executor, includeArchived: boolean): Promise<ProjectRow[]> {
  const t = ex.t.projects;
  return ex.q.select().from(t).where(includeArchived ? undefined : eq(t.is_active, true)).orderBy(asc(t.slug));
}

export async function insertProject(ex: Executor, row: ProjectRow): Promise<void> {
  await ex.q.insert(ex.t.projects).values(row);
}

export async function updateProject(ex: Executor, id: string, changes: Partial<ProjectRow>): Promise<void> {
  await ex.q.update(ex.t.projects).set(changes).where(eq(ex.t.projects.id, id));
}

export async function countActiveProjects(ex: Executor): Promise<number> {
  return (await ex.q.select({ n: count() }).from(ex.t.projects).where(eq(ex.t.projects.is_active, true)))[0]!.n;
}

// --- memberships ---
export async function membershipOf(ex: Executor, userId: string, projectId: string): Promise<MembershipRow | null> {
  const t = ex.t.memberships;
  return (await ex.q.select().from(t).where(and(eq(t.user_id, userId), eq(t.project_id, projectId))))[0] ?? null;
}

export async function membershipById(ex: Executor, projectId: string, id: string): Promise<MembershipRow | null> {
  const t = ex.t.memberships;
  return (await ex.q.select().from(t).where(and(eq(t.id, id), eq(t.project_id, projectId))))[0] ?? null;
}

/** Projects the user is a member of, with the role, active ones only. */
export async function projectsOfUser(ex: Executor, userId: string): Promise<(ProjectRow & { role: Role })[]> {
  const p = ex.t.projects;
  const m = ex.t.memberships;
  const rows = await ex.q
    .select({ project: p, role: m.role })
    .from(m)
    .innerJoin(p, eq(p.id, m.project_id))
    .where(and(eq(m.user_id, userId), eq(p.is_active, true)))
    .orderBy(asc(p.slug));
  return rows.map((r) => ({ ...r.project, role: r.role }));
}

export async function membersOf(ex: Executor, projectId: string) {
  const m = ex.t.memberships;
  const u = ex.t.users;
  return ex.q
    .select({ membership: m, email: u.email, display_name: u.display_name, first_name: u.first_name, last_name: u.last_name })
    .from(m)
    .innerJoin(u, eq(u.id, m.user_id))
    .where(eq(m.project_id, projectId))
    .orderBy(asc(u.email));
}

export async function isMemberByEmail(ex: Executor, projectId: string, email: string): Promise<boolean> {
  const u = ex.t.users;
  const m = ex.t.memberships;
  const rows = await ex.q
    .select({ id: m.id })
    .from(m)
    .innerJoin(u, eq(u.id, m.user_id))
    .where(and(eq(m.project_id, projectId), eq(u.email, email)));
  return rows.length > 0;
}

export async function insertMembership(ex: Executor, row: MembershipRow): Promise<void> {
  await ex.q.insert(ex.t.memberships).values(row);
}

export async function updateMembership(ex: Executor, id: string, changes: Partial<MembershipRow>): Promise<void> {
  await ex.q.update(ex.t.memberships).set(changes).where(eq(ex.t.memberships.id, id));
}

export async function deleteMembership(ex: Executor, id: string): Promise<void> {
  await ex.q.delete(ex.t.memberships).where(eq(ex.t.memberships.id, id));
}

export async function adminCount(ex: Executor, projectId: string): Promise<number> {
  const t = ex.t.memberships;
  return (await ex.q.select({ n: count() }).from(t).where(and(eq(t.project_id, projectId), eq(t.role, 'admin'))))[0]!.n;
}

// --- invitations ---
export async function insertInvitation(ex: Executor, row: InvitationRow): Promise<void> {
  await ex.q.insert(ex.t.invitations).values(row);
}

export async function invitationByHash(ex: Executor, hashes: string[]): Promise<InvitationRow | null> {
  const t = ex.t.invitations;
  for (const h of hashes) {
    const row = (await ex.q.select().from(t).where(eq(t.token_hash, h)))[0];
    if (row) return row;
  }
  return null;
}

export async function invitationById(ex: Executor, projectId: string, id: string): Promise<InvitationRow | null> {
  const t = ex.t.invitations;
  return (await ex.q.select().from(t).where(and(eq(t.id, id), eq(t.project_id, projectId))))[0] ?? null;
}

export async function pendingInvitations(ex: Executor, projectId: string, now: string): Promise<InvitationRow[]> {
  const t = ex.t.invitations;
  return ex.q
    .select()
    .from(t)
    .where(and(eq(t.project_id, projectId), isNull(t.accepted_at), isNull(t.revoked_at), gt(t.expires_at, now)))
    .orderBy(asc(t.created_at));
}

export async function updateInvitation(ex: Executor, id: string, changes: Partial<InvitationRow>): Promise<void> {
  await ex.q.update(ex.t.invitations).set(changes).where(eq(ex.t.invitations.id, id));
}
