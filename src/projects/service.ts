// Projects, memberships (viewer < operator < admin) and invitations.
// Global administrators act as admin of every project. To anyone else a
// project they are not a member of does not exist (404), and archived
// projects are gone from every project route.
import type { Executor, Tx } from '../db/connect.ts';
import type { InvitationPublic, Member, ProjectPublic } from './schemas.ts';
import { conflict, forbidden, notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import type { Actor } from '../auth/actor.ts';
import type { Principal } from '../auth/principal.ts';
import { mastersOf, mintToken, tokenHash, tokenHashes } from '../auth/tokens.ts';
import { isActiveUser } from '../users/service.ts';
import {
  adminCount,
  allProjects,
  countActiveProjects,
  deleteMembership,
  insertInvitation,
  insertMembership,
  insertProject,
  isMemberByEmail,
  invitationByHash,
  invitationById,
  membersOf,
  membershipById,
  membershipOf,
  pendingInvitations,
  projectById,
  projectBySlug,
  projectsOfUser,
  updateInvitation,
  updateMembership,
  updateProject,
  type InvitationRow,
  type ProjectRow,
  type Role,
} from './store.ts';

export type { ProjectRow, Role };
export type { InvitationPublic, Member, ProjectPublic };

export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];
const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
export const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$/;

export const findProjectById = (ex: Executor, id: string): Promise<ProjectRow | null> => projectById(ex, id);
export const findProjectBySlug = (ex: Executor, slug: string): Promise<ProjectRow | null> => projectBySlug(ex, slug);


const toPublic = (p: ProjectRow, role: Role): ProjectPublic => ({
  id: p.id,
  slug: p.slug,
  name: p.name,
  description: p.description,
  is_active: p.is_active,
  created_at: p.created_at,
  updated_at: p.updated_at,
  archived_at: p.archived_at,
  role,
});

export interface ProjectAccess {
  project: ProjectRow;
  role: Role;
}

/** The project `slug` as `who` may see it with at least `need`; 404 when it
 * is unknown, archived, outside an API key's binding or not theirs, 403 when
 * their role is too low. */
export async function projectAccess(ex: Executor, who: Principal, slug: string, need: Role): Promise<ProjectAccess> {
  const project = await projectBySlug(ex, slug);
  if (!project || !project.is_active) throw notFound('project');
  if (who.apiKey?.project_id && who.apiKey.project_id !== project.id) throw notFound('project');
  const role: Role | null = who.user.is_admin ? 'admin' : ((await membershipOf(ex, who.user.id, project.id))?.role ?? null);
  if (!role) throw notFound('project');
  if (RANK[role] < RANK[need]) throw forbidden('insufficient_role', `this needs the ${need} role in the project`, { have: role, need });
  return { project, role };
}

/** Project ids a non-admin user belongs to (the activity feed's scope). */
export async function memberProjectIds(ex: Executor, userId: string): Promise<string[]> {
  return (await projectsOfUser(ex, userId)).map((p) => p.id);
}

export async function listProjects(ctx: AppContext, who: Principal, includeArchived: boolean): Promise<ProjectPublic[]> {
  const list = who.user.is_admin
    ? (await allProjects(ctx.db, includeArchived)).map((p) => toPublic(p, 'admin'))
    : (await projectsOfUser(ctx.db, who.user.id)).map((p) => toPublic(p, p.role));
  return who.apiKey?.project_id ? list.filter((p) => p.id === who.apiKey!.project_id) : list;
}

export async function getProject(ctx: AppContext, who: Principal, slug: string): Promise<ProjectPublic> {
  const { project, role } = await projectAccess(ctx.db, who, slug, 'viewer');
  return toPublic(project, role);
}

export interface NewProjectInput {
  slug: string;
  name: string;
  description?: string;
}

export async function insertNewProject(tx: Tx, ctx: AppContext, input: NewProjectInput, actor: Actor): Promise<ProjectRow> {
  const slug = input.slug.trim().toLowerCase();
  if (!SLUG_RE.test(slug)) {
    throw validationFailed([{ path: '/slug', message: '2 to 63 lowercase letters, digits and dashes, not starting or ending with a dash' }]);
  }
  if (await projectBySlug(tx, slug)) throw conflict(`a project with slug ${slug} exists`, {}, 'slug_taken');
  const now = nowIso();
  const row: ProjectRow = {
    id: crypto.randomUUID(),
    slug,
    name: input.name.trim(),
    description: input.description?.trim() ?? '',
    is_active: true,
    created_at: now,
    updated_at: now,
    archived_at: null,
  };
  await insertProject(tx, row);
  await ctx.reactions.projectCreated(tx, row.id);
  await ctx.audit.append(tx, { ...actor, action: 'project.created', target_type: 'project', target_id: row.id, project_id: row.id, metadata: { slug } });
  return row;
}

export const createProject = async (ctx: AppContext, input: NewProjectInput, actor: Actor): Promise<ProjectPublic> =>
  toPublic(await ctx.db.tx((tx) => insertNewProject(tx, ctx, input, actor)), 'admin');

export async function patchProject(ctx: AppContext, who: Principal, slug: string, patch: { name?: string; description?: string }, actor: Actor) {
  return ctx.db.tx(async (tx) => {
    const { project, role } = await projectAccess(tx, who, slug, 'admin');
    const changes: Partial<ProjectRow> = {};
    if (patch.name !== undefined && patch.name.trim() !== project.name) changes.name = patch.name.trim();
    if (patch.description !== undefined && patch.description.trim() !== project.description) changes.description = patch.description.trim();
    if (Object.keys(changes).length === 0) return toPublic(project, role);
    const now = nowIso();
    await updateProject(tx, project.id, { ...changes, updated_at: now });
    await ctx.audit.append(tx, { ...actor, action: 'project.updated', target_type: 'project', target_id: project.id, project_id: project.id, metadata: { changed: Object.keys(changes) } });
    return toPublic({ ...project, ...changes, updated_at: now }, role);
  });
}

/** Archiving is soft and final here; its agents are refused from then on. */
export async function archiveProject(ctx: AppContext, who: Principal, slug: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    if ((await countActiveProjects(tx)) <= 1) throw conflict('the last active project cannot be archived', {}, 'last_project');
    const now = nowIso();
    await updateProject(tx, project.id, { is_active: false, archived_at: now, updated_at: now });
    await ctx.audit.append(tx, { ...actor, action: 'project.archived', target_type: 'project', target_id: project.id, project_id: project.id, metadata: { slug } });
  });
}

// --- memberships ---

export async function listMembers(ctx: AppContext, who: Principal, slug: string): Promise<Member[]> {
  const { project } = await projectAccess(ctx.db, who, slug, 'admin');
  return (await membersOf(ctx.db, project.id)).map((r) => ({
    id: r.membership.id,
    user_id: r.membership.user_id,
    project_id: project.id,
    user_email: r.email,
    user_display_name: r.display_name || `${r.first_name} ${r.last_name}`.trim() || r.email.split('@')[0]!,
    role: r.membership.role,
    created_at: r.membership.created_at,
    updated_at: r.membership.updated_at,
  }));
}

export async function grantMembership(tx: Tx, ctx: AppContext, projectId: string, userId: string, role: Role, actor: Actor, action = 'membership.granted') {
  if (await membershipOf(tx, userId, projectId)) throw conflict('the user is already a member of this project', {}, 'already_member');
  const now = nowIso();
  const row = { id: crypto.randomUUID(), user_id: userId, project_id: projectId, role, created_at: now, updated_at: now };
  await insertMembership(tx, row);
  await ctx.reactions.memberJoined(tx, projectId, userId);
  await ctx.audit.append(tx, { ...actor, action, target_type: 'membership', target_id: row.id, project_id: projectId, metadata: { user_id: userId, role } });
  return row;
}

export async function addMember(ctx: AppContext, who: Principal, slug: string, input: { user_id: string; role: Role }, actor: Actor) {
  return ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    if (!(await isActiveUser(tx, input.user_id))) throw notFound('user');
    return grantMembership(tx, ctx, project.id, input.user_id, input.role, actor);
  });
}

export async function changeMemberRole(ctx: AppContext, who: Principal, slug: string, membershipId: string, role: Role, actor: Actor) {
  return ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    const m = await membershipById(tx, project.id, membershipId);
    if (!m) throw notFound('membership');
    if (m.role === role) return m;
    if (m.role === 'admin' && (await adminCount(tx, project.id)) <= 1) throw conflict('this is the last admin of the project', {}, 'last_project_admin');
    await updateMembership(tx, m.id, { role, updated_at: nowIso() });
    await ctx.audit.append(tx, {
      ...actor,
      action: 'membership.updated',
      target_type: 'membership',
      target_id: m.id,
      project_id: project.id,
      metadata: { user_id: m.user_id, role: { from: m.role, to: role } },
    });
    return { ...m, role };
  });
}

export async function removeMember(ctx: AppContext, who: Principal, slug: string, membershipId: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    const m = await membershipById(tx, project.id, membershipId);
    if (!m) throw notFound('membership');
    if (m.role === 'admin' && (await adminCount(tx, project.id)) <= 1) throw conflict('this is the last admin of the project', {}, 'last_project_admin');
    await deleteMembership(tx, m.id);
    await ctx.audit.append(tx, { ...actor, action: 'membership.revoked', target_type: 'membership', target_id: m.id, project_id: project.id, metadata: { user_id: m.user_id, role: m.role } });
  });
}

// --- invitations ---


const invitationPublic = (i: InvitationRow): InvitationPublic => ({
  id: i.id,
  project_id: i.project_id,
  email: i.email,
  role: i.role,
  invited_by: i.invited_by,
  created_at: i.created_at,
  expires_at: i.expires_at,
  accepted_at: i.accepted_at,
  revoked_at: i.revoked_at,
});

export async function invite(
  ctx: AppContext,
  who: Principal,
  slug: string,
  input: { email: string; role: Role; ttl_days: number },
  actor: Actor,
) {
  const token = mintToken();
  return ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    if (await isMemberByEmail(tx, project.id, input.email)) throw conflict('that person is already a member', {}, 'already_member');
    const now = nowMicros();
    const row: InvitationRow = {
      id: crypto.randomUUID(),
      project_id: project.id,
      email: input.email,
      role: input.role,
      invited_by: who.user.id,
      token_hash: tokenHash(mastersOf(ctx.config), 'invitation', token),
      created_at: isoMicros(now),
      expires_at: isoMicros(now + input.ttl_days * 86_400_000_000),
      accepted_at: null,
      accepted_by: null,
      revoked_at: null,
    };
    await insertInvitation(tx, row);
    await ctx.audit.append(tx, { ...actor, action: 'invitation.mint', target_type: 'invitation', target_id: row.id, project_id: project.id, metadata: { email: row.email, role: row.role } });
    return { invitation: invitationPublic(row), token, accept_url_path: `/invite#token=${token}` };
  });
}

export async function listInvitations(ctx: AppContext, who: Principal, slug: string): Promise<InvitationPublic[]> {
  const { project } = await projectAccess(ctx.db, who, slug, 'admin');
  return (await pendingInvitations(ctx.db, project.id, nowIso())).map(invitationPublic);
}

export async function revokeInvitation(ctx: AppContext, who: Principal, slug: string, id: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const { project } = await projectAccess(tx, who, slug, 'admin');
    const inv = await invitationById(tx, project.id, id);
    if (!inv) throw notFound('invitation');
    if (inv.accepted_at) throw conflict('the invitation was already accepted', {}, 'already_accepted');
    if (!inv.revoked_at) await updateInvitation(tx, inv.id, { revoked_at: nowIso() });
    await ctx.audit.append(tx, { ...actor, action: 'invitation.revoke', target_type: 'invitation', target_id: inv.id, project_id: project.id });
  });
}

/** A live invitation by its token (with its project), or 404 invalid_or_expired. */
export async function liveInvitation(ex: Executor, ctx: AppContext, token: string): Promise<{ invitation: InvitationRow; project: ProjectRow }> {
  const inv = await invitationByHash(ex, tokenHashes(mastersOf(ctx.config), 'invitation', token));
  const project = inv ? await projectById(ex, inv.project_id) : null;
  if (!inv || !project || !project.is_active || inv.accepted_at || inv.revoked_at || parseIsoMicros(inv.expires_at)! <= nowMicros()) {
    throw notFound('invitation', { reason: 'invalid_or_expired' });
  }
  return { invitation: inv, project };
}

export async function previewInvitation(ctx: AppContext, token: string) {
  const { invitation, project } = await liveInvitation(ctx.db, ctx, token);
  return { email: invitation.email, role: invitation.role, project_slug: project.slug, project_name: project.name, expires_at: invitation.expires_at };
}

/** Marks an invitation accepted by `userId` and grants its membership. */
export async function acceptInvitation(tx: Tx, ctx: AppContext, token: string, userId: string, actor: Actor) {
  const { invitation, project } = await liveInvitation(tx, ctx, token);
  await updateInvitation(tx, invitation.id, { accepted_at: nowIso(), accepted_by: userId });
  await grantMembership(tx, ctx, project.id, userId, invitation.role, actor, 'invitation.accept');
  return { invitation, project };
}
