// The rules of saved views: a user's named queries of a dashboard page, per project. Each user sees and
// changes only their own (another user's view id is not found); names are unique per user, project and page;
// at most MAX_VIEWS_PER_PROJECT views per user and project.
//
// Not audited. The audit log holds control-plane actions (the spec's "successful control-plane actions");
// a saved view changes nothing svc does or sends: it is a bookmark of the caller's own, like the inbox's read
// marks (notifications/service.ts markOneRead, markAllRead), the nearest existing per-user preference, which
// write no audit row either. Subscriptions are audited because they change what svc delivers, and the spec
// names their actions (`subscription.*`); it names nothing for views.
import type { Db } from '../db/connect.ts';
import { conflict, notFound } from '../http/errors.ts';
import { isUniqueViolation } from '../lib/errors.ts';
import { nowIso } from '../lib/clock.ts';
import { MAX_VIEWS_PER_PROJECT, type NewSavedView, type SavedViewPatch, type SavedViewPublic } from './schemas.ts';
import { countViews, deleteView, insertView, updateView, viewNamed, viewOf, viewsOf, type Owner, type SavedViewRow } from './store.ts';

export type { Owner };

const publicOf = (r: SavedViewRow): SavedViewPublic => ({
  id: r.id,
  page: r.page as SavedViewPublic['page'],
  name: r.name,
  query: r.query,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const nameTaken = (page: string, name: string) =>
  conflict('you have a saved view with that name on this page already; rename or replace that one', { page, name }, 'name_taken');

export async function listViews(db: Db, owner: Owner, page?: string): Promise<SavedViewPublic[]> {
  return (await viewsOf(db, owner, page)).map(publicOf);
}

/** 201 with the view; 409 `name_taken` on a duplicate name, 409 `saved_view_limit` past the cap. Under
 * concurrent creates on PostgreSQL the cap may be passed by the few racing in (a guard against runaway
 * clients, not an exact quota); the name stays unique either way (the table's constraint). */
export async function createView(db: Db, owner: Owner, input: NewSavedView): Promise<SavedViewPublic> {
  const now = nowIso();
  const row: SavedViewRow = { id: crypto.randomUUID(), user_id: owner.userId, project_id: owner.projectId, page: input.page, name: input.name, query: input.query, created_at: now, updated_at: now };
  try {
    await db.tx(async (tx) => {
      if (await viewNamed(tx, owner, input.page, input.name)) throw nameTaken(input.page, input.name);
      if ((await countViews(tx, owner)) >= MAX_VIEWS_PER_PROJECT) {
        throw conflict(
          `you have ${MAX_VIEWS_PER_PROJECT} saved views in this project, the most one person may keep; delete one first`,
          { limit: MAX_VIEWS_PER_PROJECT },
          'saved_view_limit',
        );
      }
      await insertView(tx, row);
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw nameTaken(input.page, input.name);
    throw e;
  }
  return publicOf(row);
}

/** Renames a view or replaces its query; 404 for a view that is not the caller's, 409 `name_taken`. */
export async function patchView(db: Db, owner: Owner, id: string, patch: SavedViewPatch): Promise<SavedViewPublic> {
  let page = '';
  try {
    return await db.tx(async (tx) => {
      const stored = await viewOf(tx, owner, id);
      if (!stored) throw notFound('saved view');
      page = stored.page;
      if (patch.name !== undefined && patch.name !== stored.name && (await viewNamed(tx, owner, stored.page, patch.name))) throw nameTaken(stored.page, patch.name);
      const changes = { ...patch, updated_at: nowIso() };
      await updateView(tx, id, changes);
      return publicOf({ ...stored, ...changes });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw nameTaken(page, patch.name ?? '');
    throw e;
  }
}

export async function removeView(db: Db, owner: Owner, id: string): Promise<void> {
  await db.tx(async (tx) => {
    if (!(await viewOf(tx, owner, id))) throw notFound('saved view');
    await deleteView(tx, id);
  });
}
