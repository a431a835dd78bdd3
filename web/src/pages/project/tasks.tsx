// /projects/:slug/tasks: what the agents reported about tasks, newest first (by when svc first heard of them)
// unless a column header sorts it otherwise; full-text search (`q`, matches highlighted from the answer's
// offsets, as text), filters by state, priority, engine, name, queue, worker and time. The filters and the sort
// live in the URL, so a view can be linked, saved (saved views, kept by svc per user) and exported (CSV, NDJSON: the
// export routes with the same query). Pages of 50 arrive by keyset paging ("Load more" follows next_cursor).
// Operators select rows for a bulk retry (a durable job whose progress shows here) and project admins may
// delete the selected tasks from svc.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import {
  PRIORITIES,
  TASK_STATES,
  type Queue,
  type TaskListItem,
  type TaskDetail,
  type TaskPage,
  type TaskSort,
  type Worker,
} from '../../api/types.ts';
import { apiUrl } from '../../api/url.ts';
import { apiTimeOf, localInputOf } from '../../lib/api-time.ts';
import { duration } from '../../lib/format.ts';
import { useLivePaged } from '../../lib/live.ts';
import { deleteView, saveView, useSavedViews } from '../../lib/saved-views.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { useResource } from '../../lib/use-resource.ts';
import { me } from '../../session.ts';
import { Badge, Empty, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { TextField } from '../../ui/form.tsx';
import { FormDialog } from '../../ui/form-dialog.tsx';
import { marked } from '../../ui/highlight.tsx';
import { LiveBadge } from '../../ui/live-badge.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import { LAZY_FAILED, useLazy } from '../../ui/use-lazy.ts';
import type { ProjectPageProps } from './sections.ts';
import { projectPath, reportedGet, TASK_FILTERS, TASK_QUERY, taskFilters, taskGet, tasksGet } from './requests.ts';
import { taskHref } from './task-link.ts';

/** The export's bound (src/tasks/export.ts EXPORT_MAX_ROWS), said on its links. */
type ExportFormat = 'csv' | 'ndjson';
const EXPORT_NOTE = 'The rows the filters, search and sort select, 100,000 at most: narrow with a time range for more';

const loadBulk = () => import('./tasks-bulk.tsx');

/** The queue, worker and engine inputs' suggestions, asked for when one of those inputs is first focused: the
 * list itself comes first (the server answers in order), and a component of their own re-renders only them. */
function Suggestions(props: { slug: string; wanted: boolean }) {
  const names = useResource(async () => {
    if (!props.wanted) return { queues: [], workers: [], engines: [] };
    const [queues, workers] = await Promise.all([
      api.get<Queue[]>(...reportedGet(props.slug, 'queues')),
      api.get<Worker[]>(...reportedGet(props.slug, 'workers')),
    ]);
    return {
      queues: [...new Set(queues.map((q) => q.name))],
      workers: [...new Set(workers.map((w) => w.name))],
      engines: [...new Set([...queues, ...workers].map((x) => x.engine))],
    };
  }, [props.slug, props.wanted]);
  return (
    <>
      <datalist id="task-queues">{names.data?.queues.map((n) => <option key={n} value={n} />)}</datalist>
      <datalist id="task-workers">{names.data?.workers.map((n) => <option key={n} value={n} />)}</datalist>
      <datalist id="task-engines">{names.data?.engines.map((n) => <option key={n} value={n} />)}</datalist>
    </>
  );
}

const FIELD_LABEL: Record<string, string> = { exception: 'exception', args: 'args', kwargs: 'kwargs', result: 'result', name: 'name', task_id: 'id' };
const PRIORITY_TONE = { critical: 'bad', high: 'warn', normal: 'muted', low: 'muted' } as const;

interface RowOptions {
  slug: string;
  selectable: boolean;
  selected: boolean;
  toggle: (t: TaskListItem) => void;
}

/** A row of a page of 50; its cells call small components as functions (see the agents list). Search matches
 * are rendered from the answer's plain text and offsets (ui/highlight.tsx): text nodes and <mark>, never HTML. */
function taskRow(t: TaskListItem, o: RowOptions) {
  const hl = t.highlights ?? [];
  const nameHl = hl.find((h) => h.field === 'name');
  const idHl = hl.find((h) => h.field === 'task_id');
  const others = hl.filter((h) => h.field !== 'name' && h.field !== 'task_id');
  const label = t.name ?? 'unnamed task';
  return (
    <tr key={t.id} class={o.selected ? 'selected' : undefined}>
      {o.selectable && (
        <td class="select">
          <input type="checkbox" checked={o.selected} aria-label={`Select ${label} ${t.task_id}`} onChange={() => o.toggle(t)} />
        </td>
      )}
      <td>
        <a href={taskHref(o.slug, t)}>{nameHl ? marked(nameHl.text, nameHl.ranges) : label}</a>
        {t.priority && t.priority !== 'normal' && <> {Badge({ tone: PRIORITY_TONE[t.priority as keyof typeof PRIORITY_TONE] ?? 'muted', children: t.priority })}</>}
        <div class="muted small">
          <code>{idHl ? marked(idHl.text, idHl.ranges) : t.task_id}</code>
        </div>
        {others.map((h) => (
          <div key={h.field} class="hl small" data-testid="search-match">
            <span class="muted">{FIELD_LABEL[h.field] ?? h.field}: </span>
            <span class="hl-text">{marked(h.text, h.ranges)}</span>
          </div>
        ))}
      </td>
      <td>{TaskStateBadge({ state: t.state })}</td>
      <td>{t.queue ?? '-'}</td>
      <td>{t.worker_name ?? '-'}</td>
      <td>{Time({ iso: t.created_at })}</td>
      <td>{Time({ iso: t.finished_at, empty: '-' })}</td>
      <td>{duration(t.runtime_ms)}</td>
      <td>{t.retry_count || ''}</td>
    </tr>
  );
}

const COLUMNS: [label: string, sort: TaskSort | null][] = [
  ['Task', 'name'],
  ['State', 'state'],
  ['Queue', null],
  ['Worker', null],
  ['First seen', 'created_at'],
  ['Finished', 'finished_at'],
  ['Run time', 'runtime_ms'],
  ['Retries', null],
];
const SORT_NAME: Record<TaskSort, string> = {
  created_at: 'first seen',
  received_at: 'received',
  started_at: 'started',
  finished_at: 'finished',
  runtime_ms: 'run time',
  name: 'name',
  state: 'state',
};

/** The column headers: the sortable ones are buttons (aria-sort says the current order). */
function Head(props: {
  sort: TaskSort;
  order: 'asc' | 'desc';
  onSort: (s: TaskSort) => void;
  selection?: { all: boolean; some: boolean; toggleAll: () => void };
}) {
  const box = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (box.current) box.current.indeterminate = !!props.selection && props.selection.some && !props.selection.all;
  });
  return (
    <>
      {props.selection && (
        <th scope="col" class="select">
          <input ref={box} type="checkbox" aria-label="Select every task shown" checked={props.selection.all} onChange={props.selection.toggleAll} />
        </th>
      )}
      {COLUMNS.map(([label, sort]) => {
        const on = sort !== null && sort === props.sort;
        return (
          <th key={label} scope="col" aria-sort={on ? (props.order === 'asc' ? 'ascending' : 'descending') : undefined}>
            {sort ? (
              <button type="button" class="sort" onClick={() => props.onSort(sort)} title={`Sort by ${SORT_NAME[sort]}`}>
                {label}
                <span aria-hidden="true" class="sort-mark">
                  {on ? (props.order === 'asc' ? ' ▲' : ' ▼') : ''}
                </span>
              </button>
            ) : (
              label
            )}
          </th>
        );
      })}
    </>
  );
}

function Filters(props: { query: Record<string, string>; onSuggest: () => void }) {
  const { route, path } = useLocation();
  const q = props.query;
  const apply = (e: Event) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget as HTMLFormElement);
    const next = new URLSearchParams();
    for (const key of TASK_FILTERS) {
      const raw = String(data.get(key) ?? '').trim();
      const value = key === 'since' || key === 'until' ? apiTimeOf(raw) : raw;
      if (value) next.set(key, value);
    }
    // The sort stays what the headers made it.
    for (const key of ['sort', 'order'] as const) if (q[key]) next.set(key, q[key]!);
    route(`${path}${next.size ? `?${next}` : ''}`, true);
  };
  const any = TASK_FILTERS.some((k) => q[k]);
  const [times, setTimes] = useState(Boolean(q.since || q.until));
  const since = useRef<HTMLInputElement>(null);
  const showTimes = () => {
    setTimes(true);
    // The button that had the focus is gone: the keyboard continues in the first new input.
    requestAnimationFrame(() => since.current?.focus());
  };
  return (
    <form class="filters" aria-label="Filter the tasks" onSubmit={apply}>
      <div class="field search">
        <label for="task-q">Search tasks</label>
        <input
          id="task-q"
          name="q"
          type="search"
          defaultValue={q.q ?? ''}
          maxLength={200}
          placeholder='Words in the name, id, arguments, result or exception; "a phrase", prefix*'
        />
      </div>
      <div class="field">
        <label for="task-state">State</label>
        <select id="task-state" name="state">
          <option value="">Any state</option>
          {TASK_STATES.map((s) => (
            <option key={s} value={s} selected={s === q.state}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="task-priority">Priority</label>
        <select id="task-priority" name="priority">
          <option value="">Any priority</option>
          {PRIORITIES.map((p) => (
            <option key={p} value={p} selected={p === q.priority}>
              {p}
            </option>
          ))}
          <option value="critical,high" selected={q.priority === 'critical,high'}>
            high and critical
          </option>
        </select>
      </div>
      <div class="field">
        <label for="task-engine">Engine</label>
        <input id="task-engine" name="engine" list="task-engines" defaultValue={q.engine ?? ''} onFocus={props.onSuggest} placeholder="any" />
      </div>
      <div class="field">
        <label for="task-name">Name contains</label>
        <input id="task-name" name="name" defaultValue={q.name ?? ''} placeholder="e.g. send_invoice" />
      </div>
      <div class="field">
        <label for="task-queue">Queue</label>
        <input id="task-queue" name="queue" list="task-queues" defaultValue={q.queue ?? ''} onFocus={props.onSuggest} />
      </div>
      <div class="field">
        <label for="task-worker">Worker</label>
        <input id="task-worker" name="worker" list="task-workers" defaultValue={q.worker ?? ''} onFocus={props.onSuggest} />
      </div>
      {times ? (
        <>
          <div class="field">
            <label for="task-since">First seen from</label>
            <input id="task-since" ref={since} name="since" type="datetime-local" defaultValue={localInputOf(q.since)} />
          </div>
          <div class="field">
            <label for="task-until">First seen before</label>
            <input id="task-until" name="until" type="datetime-local" defaultValue={localInputOf(q.until)} />
          </div>
        </>
      ) : (
        // The time inputs appear on request: Chromium takes about 20 ms to set up each date-time input, and
        // the list should not wait for inputs most visits never use.
        <div class="actions">
          <button type="button" class="secondary" aria-expanded="false" onClick={showTimes}>
            Time range…
          </button>
        </div>
      )}
      <div class="actions">
        <button type="submit" class="secondary">
          Apply
        </button>
        {any && (
          <button type="button" class="link" onClick={() => route(q.sort || q.order ? `${path}?${sortOnly(q)}` : path, true)}>
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}

const sortOnly = (q: Record<string, string>) =>
  new URLSearchParams(Object.entries({ sort: q.sort, order: q.order }).filter((e): e is [string, string] => !!e[1]));

/** The list's query as a string in a fixed order (saved views, exports, comparing views). */
function queryString(query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const k of TASK_QUERY) if (query[k]) params.set(k, query[k]!);
  return params.toString();
}

/** The user's saved views of this project (kept by svc, in every browser): links to a query, saved and deleted here. */
function SavedViews(props: { slug: string; current: string }) {
  const { path } = useLocation();
  const user = me.value?.id ?? 'anonymous';
  const { views, loaded, error } = useSavedViews(user, props.slug);
  return (
    <nav class="views" aria-label="Saved views">
      <span class="muted small">Saved views:</span>
      {loaded && views.length === 0 && !error && <span class="muted small">none yet</span>}
      {error && (
        <span class="muted small" role="alert">
          {error.message}
        </span>
      )}
      {views.map((v) => (
        <span key={v.id} class="view">
          <a href={v.query ? `${path}?${v.query}` : path} aria-current={v.query === props.current ? 'page' : undefined}>
            {v.name}
          </a>
          <button type="button" class="link small" aria-label={`Delete view ${v.name}`} title="Delete this view" onClick={() => void deleteView(user, props.slug, v.id)}>
            ×
          </button>
        </span>
      ))}
      <FormDialog
        button="Save view…"
        buttonClass="secondary small"
        title="Save this view"
        submit="Save view"
        onSubmit={async (v) => saveView(user, props.slug, { name: (v.name ?? '').trim() || 'Untitled view', query: props.current })}
      >
        <TextField
          label="View name"
          name="name"
          required
          maxLength={60}
          autoFocus
          hint="The filters, search and sort as they are now; kept for you in every browser you sign in to (a view with the same name is replaced)."
        />
      </FormDialog>
    </nav>
  );
}

export function ProjectTasks({ project }: ProjectPageProps) {
  const { query, route, path } = useLocation();
  const filters = taskFilters(query);
  const key = JSON.stringify(filters);
  const paged = usePaged(
    (cursor) => api.get<TaskPage>(...tasksGet(project.slug, filters, cursor)),
    [project.slug, key],
  );
  // New and changed tasks appear without a reload: the stream says which changed, the first page is read again,
  // and a task it names further down is read on its own (its search highlights kept).
  const tasks = useLivePaged(paged, project.slug, 'task', () => api.get<TaskPage>(...tasksGet(project.slug, filters, null)), (t) => t.id, {
    noticeIdOf: (t) => t.task_id,
    read: async (t) => {
      const { events: _events, events_truncated: _truncated, ...row } = await api.get<TaskDetail>(taskGet(project.slug, t));
      return t.highlights ? { ...row, highlights: t.highlights } : row;
    },
  });
  const filtered = TASK_FILTERS.some((k) => query[k]);
  const [suggest, setSuggest] = useState(false);
  const sort = (query.sort as TaskSort | undefined) ?? 'created_at';
  const order = query.order === 'asc' ? 'asc' : 'desc';
  const current = queryString(query);
  const operator = project.role !== 'viewer';
  // The bulk actions are operators' only: a chunk of their own, fetched for them (ui/use-lazy.ts).
  const bulk = useLazy(loadBulk, operator);

  // Row selection for the bulk actions (operators): the rows themselves, so a selection survives "Load more".
  const [selected, setSelected] = useState<Map<string, TaskListItem>>(new Map());
  useEffect(() => setSelected(new Map()), [project.slug, key]);
  const toggle = (t: TaskListItem) =>
    setSelected((cur) => {
      const next = new Map(cur);
      if (next.has(t.id)) next.delete(t.id);
      else next.set(t.id, t);
      return next;
    });
  const allShown = tasks.items.length > 0 && tasks.items.every((t) => selected.has(t.id));
  const toggleAll = () =>
    setSelected((cur) => {
      const next = new Map(cur);
      if (allShown) for (const t of tasks.items) next.delete(t.id);
      else for (const t of tasks.items) next.set(t.id, t);
      return next;
    });

  const onSort = (s: TaskSort) => {
    const nextOrder = s === sort ? (order === 'asc' ? 'desc' : 'asc') : s === 'name' ? 'asc' : 'desc';
    const next = new URLSearchParams(queryString({ ...query, sort: s, order: nextOrder }));
    if (s === 'created_at' && nextOrder === 'desc') {
      next.delete('sort');
      next.delete('order');
    }
    route(`${path}${next.size ? `?${next}` : ''}`, true);
  };
  const exportQuery = Object.fromEntries(TASK_QUERY.map((k) => [k, query[k]]));
  const exportPath = (format: ExportFormat) => `${projectPath(project.slug)}/tasks/export.${format}`;
  const exportHref = (format: ExportFormat) => apiUrl(exportPath(format), exportQuery);
  // A download that fails shows only as a failed download: one row is asked for first, so a refusal (too many
  // exports at once, a filter the list refuses) is said on the page; then the browser downloads the export.
  const [exportError, setExportError] = useState<ApiError | null>(null);
  useEffect(() => setExportError(null), [project.slug, key]);
  const startExport = async (e: Event, format: ExportFormat) => {
    e.preventDefault();
    setExportError(null);
    try {
      await api.get(exportPath(format), { ...exportQuery, limit: 1 });
    } catch (err) {
      setExportError(asApiError(err));
      return;
    }
    const link = document.createElement('a');
    link.href = exportHref(format);
    link.download = '';
    link.click();
  };
  return (
    <div class="stack">
      <SavedViews slug={project.slug} current={current} />
      {/* Keyed by the filters: the inputs show the URL's values after Clear or back/forward. */}
      <Filters key={key} query={query} onSuggest={() => setSuggest(true)} />
      <Suggestions slug={project.slug} wanted={suggest} />
      <ErrorNotice error={exportError} title="The export did not start" />
      <PagedSection
        title="Tasks"
        paged={tasks}
        actions={
          <>
            <a class="button secondary" href={exportHref('csv')} download title={EXPORT_NOTE} onClick={(e) => void startExport(e, 'csv')}>
              Export CSV
            </a>
            <a class="button secondary" href={exportHref('ndjson')} download title={EXPORT_NOTE} onClick={(e) => void startExport(e, 'ndjson')}>
              Export NDJSON
            </a>
            <LiveBadge state={tasks.live} />
          </>
        }
        before={
          bulk.value ? (
            <bulk.value.BulkActions
              project={project}
              selected={[...selected.values()]}
              clear={() => setSelected(new Map())}
              query={query}
              onDeleted={tasks.reload}
            />
          ) : (
            bulk.failed && <p class="notice error">{LAZY_FAILED}</p>
          )
        }
        what="task"
        orderNote={sort === 'created_at' && order === 'desc' ? 'newest first' : `by ${SORT_NAME[sort] ?? sort}, ${order === 'asc' ? 'ascending' : 'descending'}`}
        columns={COLUMNS.map(([c]) => c)}
        head={<Head sort={sort} order={order} onSort={onSort} selection={operator ? { all: allShown, some: selected.size > 0, toggleAll } : undefined} />}
        empty={
          query.q ? (
            <Empty title="No task matches this search">
              <p>
                Search finds whole words (<code>timeout</code>), prefixes with <code>*</code> (<code>charg*</code>) and
                "quoted phrases" in the name, id, arguments, result and exception. Try fewer words or clear the other filters.
              </p>
            </Empty>
          ) : filtered ? (
            <Empty title="No task matches these filters">
              <p>Try another state, a shorter name or a wider time range.</p>
            </Empty>
          ) : (
            <Empty title="No tasks yet">
              <p>
                Tasks appear here as soon as an agent reports them.{' '}
                <a href={`/projects/${project.slug}/agents`}>Connect an agent</a> to your workers if none is running.
              </p>
            </Empty>
          )
        }
        row={(t) => taskRow(t, { slug: project.slug, selectable: operator, selected: selected.has(t.id), toggle })}
      />
    </div>
  );
}
