// The Ctrl-K (⌘K) palette: type to jump to any page, project, agent, worker or task. Pages and projects come from
// what the app knows; as you type, GET /lookup finds tasks by id and agents and workers by name in every project
// you see, and the task list's search (GET /tasks?q=…: names, arguments, exceptions) runs in the current project
// and a few others (a request per project and word typed). A combobox with a listbox: arrows move, Enter opens,
// Escape closes. Fetched as a chunk of its own the first time it opens (shell.tsx).
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, asApiError, type ApiError } from '../api/client.ts';
import type { LookupAnswer, Project, TaskPage } from '../api/types.ts';
import { LAST_PROJECT } from '../pages/project/layout.tsx';
import { projectPath } from '../pages/project/requests.ts';
import { PROJECT_SECTIONS, roleAtLeast } from '../pages/project/sections.ts';
import { taskHref } from '../pages/project/task-link.ts';
import { me, projects } from '../session.ts';
import { ACCOUNT_PAGES, ADMIN_PAGES, SERVICE_PAGES } from '../shell.tsx';
import { Dialog } from './dialog.tsx';

type Kind = 'page' | 'project' | 'agent' | 'worker' | 'task';

export interface PaletteItem {
  kind: Kind;
  label: string;
  detail?: string;
  href: string;
}

const SEARCH_DELAY_MS = 150;
const SHOWN = 40;
/** Projects whose tasks are searched by words (the current one first); ids and names are looked up in all. */
const SEARCHED_PROJECTS = 5;
const TASKS_EACH = 5;

/** Every project, the one in the address (or the last one opened) first. */
function orderedProjects(path: string): Project[] {
  const list = projects.value;
  const fromUrl = /^\/projects\/([^/]+)/.exec(path)?.[1];
  const wanted = fromUrl ? decodeURIComponent(fromUrl) : localStorage.getItem(LAST_PROJECT);
  const current = list.find((p) => p.slug === wanted);
  return current ? [current, ...list.filter((p) => p !== current)] : list;
}

/** The pages of every project, the service's pages, and the projects themselves. */
function staticItems(ordered: Project[]): PaletteItem[] {
  const items: PaletteItem[] = [];
  for (const p of ordered) {
    items.push({ kind: 'project', label: p.name, detail: p.slug, href: `/projects/${p.slug}` });
    for (const s of PROJECT_SECTIONS) {
      if (!s.label || !s.path || !roleAtLeast(p.role, s.minRole ?? 'viewer')) continue;
      items.push({ kind: 'page', label: s.label, detail: p.name, href: `/projects/${p.slug}/${s.path}` });
    }
  }
  const user = me.value;
  const service = [...SERVICE_PAGES, ...(user?.is_admin ? ADMIN_PAGES : []), ...ACCOUNT_PAGES];
  for (const s of service) items.push({ kind: 'page', label: s.label, detail: s.href.startsWith('/account') ? 'Account' : 'svc', href: s.href });
  return items;
}

/** Every word of the text somewhere in the item; a label that starts with the text first. */
function rank(items: PaletteItem[], text: string): PaletteItem[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return items;
  const scored: [number, PaletteItem][] = [];
  for (const item of items) {
    const hay = `${item.label} ${item.detail ?? ''} ${item.kind}`.toLowerCase();
    if (!words.every((w) => hay.includes(w))) continue;
    const label = item.label.toLowerCase();
    scored.push([label.startsWith(text.toLowerCase()) ? 0 : label.includes(words[0]!) ? 1 : 2, item]);
  }
  return scored.sort((a, b) => a[0] - b[0]).map(([, i]) => i);
}

/** The tasks whose id, name, arguments or exception match in `searched`; none for text search refuses. */
function useTaskMatches(text: string, searched: Project[]): PaletteItem[] {
  const [found, setFound] = useState<PaletteItem[]>([]);
  useEffect(() => {
    const q = text.trim();
    // The search language wants a letter or digit, a prefix of three before `*`, at most 200 characters.
    if (q.length < 2 || !/[\p{L}\p{N}]/u.test(q) || q.length > 200 || q.includes('"')) {
      setFound([]);
      return;
    }
    let stale = false;
    const timer = setTimeout(async () => {
      const pages = await Promise.all(
        searched.map((p) =>
          api
            .get<TaskPage>(`${projectPath(p.slug)}/tasks`, { q: q.replace(/[*]/g, ' ').trim() || q, limit: TASKS_EACH })
            .then((page) => page.items.map((t) => ({ t, p })))
            .catch(() => []),
        ),
      );
      if (stale) return;
      const items = pages.flat().map(({ t, p }) => ({
        kind: 'task' as const,
        label: t.name ?? 'unnamed task',
        detail: `${t.task_id} · ${t.state}${searched.length > 1 ? ` · ${p.name}` : ''}`,
        href: taskHref(p.slug, t),
        exact: t.task_id === q ? 0 : t.task_id.startsWith(q) ? 1 : 2,
      }));
      setFound(items.sort((a, b) => a.exact - b.exact).map(({ exact: _, ...i }) => i));
    }, SEARCH_DELAY_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [text, searched]);
  return found;
}

/** Tasks by id and agents and workers by name in every project the caller sees (GET /lookup), as you type. */
function useLookup(text: string): { items: PaletteItem[]; error: ApiError | null } {
  const [found, setFound] = useState<{ items: PaletteItem[]; error: ApiError | null }>({ items: [], error: null });
  useEffect(() => {
    const q = text.trim();
    if (q.length < 2 || q.length > 200) {
      setFound({ items: [], error: null });
      return;
    }
    let stale = false;
    const timer = setTimeout(async () => {
      try {
        const r = await api.get<LookupAnswer>('/lookup', { q });
        if (stale) return;
        const items = r.items.map((i): PaletteItem => {
          const base = `/projects/${i.project_slug}`;
          if (i.kind === 'task') return { kind: 'task', label: i.name ?? 'unnamed task', detail: `${i.task_id} · ${i.state} · ${i.project_name}`, href: taskHref(i.project_slug, { engine: i.engine!, task_id: i.task_id! }) };
          const detail = [i.engine, i.state, i.project_name].filter(Boolean).join(' · ');
          return { kind: i.kind, label: i.name ?? i.id, detail, href: `${base}/${i.kind}s/${i.id}` };
        });
        setFound({ items, error: null });
      } catch (e) {
        if (!stale) setFound({ items: [], error: asApiError(e) });
      }
    }, SEARCH_DELAY_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [text]);
  return found;
}

export function Palette(props: { open: boolean; onClose: () => void }) {
  const { path, route } = useLocation();
  const [text, setText] = useState('');
  const [active, setActive] = useState(0);
  const ordered = useMemo(() => orderedProjects(path), [path, projects.value]);
  // A stable list while the palette stays open on one page: the reads below run again only when it changes.
  const searched = useMemo(() => (props.open ? ordered.slice(0, SEARCHED_PROJECTS) : []), [ordered, props.open]);
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const fixed = useMemo(() => staticItems(ordered), [ordered, me.value]);
  const looked = useLookup(props.open ? text : '');
  const words = useTaskMatches(text, searched);
  // Tasks found by id lead those found by words (a task found both ways once); agents and workers rank with the pages.
  const byId = looked.items.filter((i) => i.kind === 'task');
  const tasks = [...byId, ...words.filter((w) => !byId.some((i) => i.href === w.href))];
  // An id-like text (no spaces, a digit) puts the tasks first: that is what a pasted task id wants.
  const idLike = /^\S{4,}$/.test(text.trim()) && /\d/.test(text);
  const ranked = rank([...fixed, ...looked.items.filter((i) => i.kind !== 'task')], text.trim());
  const items = (idLike ? [...tasks, ...ranked] : [...ranked, ...tasks]).slice(0, SHOWN);
  useEffect(() => setActive(0), [text, tasks.length]);
  useEffect(() => {
    if (props.open) {
      setText('');
      requestAnimationFrame(() => input.current?.focus());
    }
  }, [props.open]);
  useEffect(() => {
    document.getElementById(`${id}-${active}`)?.scrollIntoView({ block: 'nearest' });
  }, [active]);
  const go = (item: PaletteItem | undefined) => {
    if (!item) return;
    props.onClose();
    route(item.href);
  };
  const onKey = (e: KeyboardEvent) => {
    const last = items.length - 1;
    if (e.key === 'ArrowDown') setActive((a) => (a >= last ? 0 : a + 1));
    else if (e.key === 'ArrowUp') setActive((a) => (a <= 0 ? last : a - 1));
    else if (e.key === 'Home') setActive(0);
    else if (e.key === 'End') setActive(last);
    else if (e.key === 'Enter') go(items[active]);
    else return;
    e.preventDefault();
  };
  return (
    <Dialog open={props.open} title="Jump to" onClose={props.onClose} wide>
      <div class="palette">
        <input
          ref={input}
          type="text"
          role="combobox"
          aria-label="Jump to a project, page, agent, worker or task"
          aria-expanded="true"
          aria-controls={`${id}-list`}
          aria-autocomplete="list"
          aria-activedescendant={items.length ? `${id}-${active}` : undefined}
          placeholder="A page, project, agent, worker, or a task id, name or word"
          value={text}
          onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
          onKeyDown={onKey}
          autoComplete="off"
          spellcheck={false}
        />
        <ul id={`${id}-list`} role="listbox" aria-label="Results" class="palette-list">
          {items.map((item, n) => (
            <li
              key={`${item.kind}-${item.href}`}
              id={`${id}-${n}`}
              role="option"
              aria-selected={n === active}
              class={n === active ? 'active' : undefined}
              onMouseMove={() => n !== active && setActive(n)}
              onClick={() => go(item)}
            >
              <span class={`palette-kind ${item.kind}`}>{item.kind}</span>
              <span class="palette-label">{item.label}</span>
              {item.detail && <span class="palette-detail">{item.detail}</span>}
            </li>
          ))}
        </ul>
        {looked.error && (
          <p class="small text-bad" role="status">{`Tasks, agents and workers could not be looked up (${looked.error.message}); pages and projects still are.`}</p>
        )}
        {items.length === 0 && !looked.error && (
          <p class="muted small" role="status">
            {text.trim() ? 'Nothing matches. Tasks are found by id, name, arguments or exception words.' : 'Type to search.'}
          </p>
        )}
        <p class="muted small palette-keys">
          <kbd>↑</kbd> <kbd>↓</kbd> to move, <kbd>Enter</kbd> to open, <kbd>Esc</kbd> to close
        </p>
      </div>
    </Dialog>
  );
}
