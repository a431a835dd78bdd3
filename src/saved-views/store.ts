// Queries of the saved_views table, for both dialects. Every read and write names the owner, so one user's
// request never reaches another's row.
import { and, asc, count, eq } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { viewsTable, type SavedViewRow } from './tables.ts';

export type { SavedViewRow };

export interface Owner {
  userId: string;
  projectId: string;
}

/** The owner's views in a project (of one page, or of all), by page, name and id. */
export async function viewsOf(ex: Executor, owner: Owner, page?: string): Promise<SavedViewRow[]> {
  const v = viewsTable(ex);
  const conds = [eq(v.user_id, owner.userId), eq(v.project_id, owner.projectId)];
  if (page) conds.push(eq(v.page, page));
  return ex.q
    .select()
    .from(v)
    .where(and(...conds))
    .orderBy(asc(v.page), asc(v.name), asc(v.id));
}

export async function viewOf(ex: Executor, owner: Owner, id: string): Promise<SavedViewRow | null> {
  const v = viewsTable(ex);
  return (await ex.q.select().from(v).where(and(eq(v.id, id), eq(v.user_id, owner.userId), eq(v.project_id, owner.projectId))))[0] ?? null;
}

export async function viewNamed(ex: Executor, owner: Owner, page: string, name: string): Promise<SavedViewRow | null> {
  const v = viewsTable(ex);
  const where = and(eq(v.user_id, owner.userId), eq(v.project_id, owner.projectId), eq(v.page, page), eq(v.name, name));
  return (await ex.q.select().from(v).where(where))[0] ?? null;
}

export async function countViews(ex: Executor, owner: Owner): Promise<number> {
  const v = viewsTable(ex);
  const [row] = await ex.q.select({ n: count() }).from(v).where(and(eq(v.user_id, owner.userId), eq(v.project_id, owner.projectId)));
  return Number(row?.n ?? 0);
}

export async function insertView(ex: Executor, row: SavedViewRow): Promise<void> {
  await ex.q.insert(viewsTable(ex)).values(row);
}

export async function updateView(ex: Executor, id: string, changes: Partial<Pick<SavedViewRow, 'name' | 'query' | 'updated_at'>>): Promise<void> {
  const v = viewsTable(ex);
  await ex.q.update(v).set(changes).where(eq(v.id, id));
}

export async function deleteView(ex: Executor, id: string): Promise<void> {
  const v = viewsTable(ex);
  await ex.q.delete(v).where(eq(v.id, id));
}
