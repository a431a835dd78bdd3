// Saved views of the task list: a name and the list's query string (filters, search and sort), kept by svc per
// user and project (/projects/{slug}/saved-views), so they follow the user to every browser. A view is also its
// address, so it can be bookmarked or shared as a link.
//
// Earlier dashboards kept them in this browser's localStorage (`svc.views.<user id>.<project slug>`). The first
// load of a project's views here uploads those once and then removes them from the browser: a name the server
// already has keeps the server's view, and a view svc refuses (a name it cannot take, past the cap) is dropped.
// If svc cannot be reached, they stay in the browser for the next load.
import { signal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { ApiError, api, asApiError } from '../api/client.ts';
import type { SavedView } from '../api/types.ts';

export type { SavedView };
export type SavedViewPage = SavedView['page'];

export interface ViewsState {
  views: SavedView[];
  /** True once the first answer arrived. */
  loaded: boolean;
  error: ApiError | null;
}

const EMPTY: ViewsState = { views: [], loaded: false, error: null };
const legacyKey = (userId: string, project: string) => `svc.views.${userId}.${project}`;
const keyOf = (userId: string, project: string, page: SavedViewPage) => `${userId}|${project}|${page}`;
const pathOf = (project: string) => `/projects/${encodeURIComponent(project)}/saved-views`;

/** Every list loaded in this tab, by user, project and page. */
const lists = signal<Record<string, ViewsState>>({});

function put(key: string, change: Partial<ViewsState>): void {
  const cur = lists.value[key] ?? EMPTY;
  const next = { ...cur, ...change };
  next.views = [...next.views].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  lists.value = { ...lists.value, [key]: next };
}

/** Views this browser kept before svc stored them (only the task list had them). */
function legacyViews(userId: string, project: string): { name: string; query: string }[] | null {
  try {
    const raw = localStorage.getItem(legacyKey(userId, project));
    if (raw === null) return null;
    const parsed = JSON.parse(raw) as unknown;
    return Array.isArray(parsed) ? parsed.filter((v): v is { name: string; query: string } => typeof v?.name === 'string' && typeof v?.query === 'string') : [];
  } catch {
    return [];
  }
}

/** Uploads the browser's old views once and removes them from it; answers the views created. */
async function uploadLegacy(userId: string, project: string, have: SavedView[]): Promise<SavedView[]> {
  const old = legacyViews(userId, project);
  if (old === null) return [];
  const added: SavedView[] = [];
  const names = new Set(have.map((v) => v.name));
  for (const v of old) {
    const name = v.name.trim().slice(0, 60) || 'Untitled view';
    if (names.has(name)) continue;
    try {
      added.push(await api.post<SavedView>(pathOf(project), { page: 'tasks', name, query: v.query.replace(/^\?/, '') }));
      names.add(name);
    } catch (e) {
      // svc answered and refused this one (its name is taken, the cap is reached, it is malformed): nothing more
      // can be done for it. Anything else (svc unreachable, failing): keep them all for the next load.
      if (!(e instanceof ApiError) || (e.status !== 409 && e.status !== 422)) throw e;
    }
  }
  localStorage.removeItem(legacyKey(userId, project));
  return added;
}

const loading = new Set<string>();

async function load(userId: string, project: string, page: SavedViewPage): Promise<void> {
  const key = keyOf(userId, project, page);
  if (loading.has(key)) return;
  loading.add(key);
  try {
    const views = await api.get<SavedView[]>(pathOf(project), { page });
    put(key, { views, loaded: true, error: null });
    if (page === 'tasks') {
      const added = await uploadLegacy(userId, project, views).catch(() => []);
      if (added.length) put(key, { views: [...(lists.value[key]?.views ?? views), ...added] });
    }
  } catch (e) {
    put(key, { loaded: true, error: asApiError(e) });
  } finally {
    loading.delete(key);
  }
}

/** The user's views of a page in a project, read from svc when the component mounts (again on every mount, so a
 * view saved in another browser shows up) and kept in step with the changes made here. */
export function useSavedViews(userId: string, project: string, page: SavedViewPage = 'tasks'): ViewsState {
  useEffect(() => {
    void load(userId, project, page);
  }, [userId, project, page]);
  return lists.value[keyOf(userId, project, page)] ?? EMPTY;
}

/** Saves a view; one with the same name is replaced (its query). Throws the ApiError for the form to show. */
export async function saveView(userId: string, project: string, view: { name: string; query: string }, page: SavedViewPage = 'tasks'): Promise<void> {
  const key = keyOf(userId, project, page);
  const known = () => (lists.value[key]?.views ?? []).find((v) => v.name === view.name);
  let saved: SavedView;
  try {
    const same = known();
    saved = same
      ? await api.patch<SavedView>(`${pathOf(project)}/${same.id}`, { query: view.query })
      : await api.post<SavedView>(pathOf(project), { page, ...view });
  } catch (e) {
    // Saved under that name from another browser meanwhile: read the list again and replace that one.
    if (!(e instanceof ApiError) || e.code !== 'name_taken') throw e;
    put(key, { views: await api.get<SavedView[]>(pathOf(project), { page }) });
    const same = known();
    if (!same) throw e;
    saved = await api.patch<SavedView>(`${pathOf(project)}/${same.id}`, { query: view.query });
  }
  put(key, { views: [...(lists.value[key]?.views ?? []).filter((v) => v.id !== saved.id), saved], error: null });
}

export async function deleteView(userId: string, project: string, id: string, page: SavedViewPage = 'tasks'): Promise<void> {
  const key = keyOf(userId, project, page);
  try {
    await api.del(`${pathOf(project)}/${id}`);
  } catch (e) {
    // Already gone (deleted from another browser) is what was asked for.
    if (!(e instanceof ApiError) || e.status !== 404) {
      put(key, { error: asApiError(e) });
      return;
    }
  }
  put(key, { views: (lists.value[key]?.views ?? []).filter((v) => v.id !== id), error: null });
}
