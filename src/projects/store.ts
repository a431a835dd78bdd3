// Queries of projects, memberships and invitations.
import { eq } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';

export type ProjectRow = typeof import('./tables.ts').projects.sqlite.$inferSelect;

export async function projectBySlug(ex: Executor, slug: string): Promise<ProjectRow | null> {
  const t = ex.t.projects;
  return (await ex.q.select().from(t).where(eq(t.slug, slug)))[0] ?? null;
}

export async function projectById(ex: Executor, id: string): Promise<ProjectRow | null> {
  const t = ex.t.projects;
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}
