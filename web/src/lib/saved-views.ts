// Saved views of the task list: a name and the list's query string (filters, search and sort), kept per user
// and project in this browser's localStorage. svc has no endpoint for them, so they do not follow the user to
// another browser; a view is only a link, so one can also be bookmarked or shared as its address.
import { signal } from '@preact/signals';

export interface SavedView {
  name: string;
  /** The query string of the task list, without `?`. */
  query: string;
}

const MAX_VIEWS = 30;
const keyOf = (userId: string, project: string) => `svc.views.${userId}.${project}`;

/** Bumped on every change, so every list of views re-reads. */
const version = signal(0);

export function savedViews(userId: string, project: string): SavedView[] {
  void version.value;
  try {
    const raw = JSON.parse(localStorage.getItem(keyOf(userId, project)) ?? '[]') as unknown;
    return Array.isArray(raw)
      ? raw.filter((v): v is SavedView => typeof v?.name === 'string' && typeof v?.query === 'string').slice(0, MAX_VIEWS)
      : [];
  } catch {
    return [];
  }
}

function store(userId: string, project: string, views: SavedView[]): void {
  localStorage.setItem(keyOf(userId, project), JSON.stringify(views.slice(0, MAX_VIEWS)));
  version.value++;
}

/** Saves (or replaces, by name) a view. */
export function saveView(userId: string, project: string, view: SavedView): void {
  const rest = savedViews(userId, project).filter((v) => v.name !== view.name);
  store(userId, project, [...rest, view].sort((a, b) => (a.name < b.name ? -1 : 1)));
}

export function deleteView(userId: string, project: string, name: string): void {
  store(
    userId,
    project,
    savedViews(userId, project).filter((v) => v.name !== name),
  );
}
