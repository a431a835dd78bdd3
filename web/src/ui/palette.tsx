// The Ctrl-K (⌘K) palette: type to jump to any page, project, agent, worker or task. Pages and projects come from
// what the app knows; the agents and workers of the current project and a few others are read when the palette
// opens; tasks are searched as you type (GET /tasks?q=…, whose answers lead with tasks whose id is the text or
// starts with it) in the same projects. A few, not all: each project is two requests more per opening and per
// word typed, and the current one comes first. A combobox with a listbox: arrows move, Enter opens, Escape closes.
// Fetched as a chunk of its own the first time it opens (shell.tsx).
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../api/client.ts';
import type { Agent, Project, TaskPage, Worker } from '../api/types.ts';
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
/** Projects whose agents, workers and tasks are read (the current one first). */
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

/** The agents and workers of `searched`, read while the palette is open (none while it is closed). */
function useInventoryItems(searched: Project[]): PaletteItem[] {
  const [items, setItems] = useState<PaletteItem[]>([]);
  useEffect(() => {
    let stale = false;
    const inventory = (p: Project) => {
      const base = projectPath(p.slug);
      return Promise.all([api.get<Agent[]>(`${base}/agents`).catch(() => []), api.get<Worker[]>(`${base}/workers`).catch(() => [])]).then(
        ([agents, workers]) => [
          ...agents.map((a) => ({ kind: 'agent' as const, label: a.name, detail: `${a.state} · ${p.name}`, href: `/projects/${p.slug}/agents/${a.id}` })),
          ...workers.map((w) => ({ kind: 'worker' as const, label: w.name, detail: `${w.engine} · ${w.state} · ${p.name}`, href: `/projects/${p.slug}/workers/${w.id}` })),
        ],
      );
    };
    void Promise.all(searched.map(inventory)).then((lists) => !stale && setItems(lists.flat()));
    return () => {
      stale = true;
    };
  }, [searched]);
  return items;
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
  const live = useInventoryItems(searched);
  const tasks = useTaskMatches(text, searched);
  // An id-like text (no spaces, a digit) puts the tasks first: that is what a pasted task id wants.
  const idLike = /^\S{4,}$/.test(text.trim()) && /\d/.test(text);
  const ranked = rank([...fixed, ...live], text.trim());
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
        {items.length === 0 && (
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
