// /projects/:slug/tasks: what the agents reported about tasks, newest first (by when svc first heard of them),
// filtered by state, name, queue, worker and time; the filters live in the URL so a view can be linked. Pages
// of 50 arrive by keyset paging ("Load more" follows next_cursor), so a project with many thousands of tasks
// shows its first page as fast as one with ten.
import { useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import { TASK_STATES, type Queue, type Task, type TaskPage, type Worker } from '../../api/types.ts';
import { apiTimeOf, localInputOf } from '../../lib/api-time.ts';
import { duration } from '../../lib/format.ts';
import { useLivePaged } from '../../lib/live.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Empty, Time } from '../../ui/bits.tsx';
import { LiveBadge } from '../../ui/live-badge.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import type { ProjectPageProps } from './sections.ts';
import { reportedGet, TASK_FILTERS, taskFilters, tasksGet } from './requests.ts';

export const taskHref = (slug: string, t: { engine: string; task_id: string }): string =>
  `/projects/${slug}/tasks/${encodeURIComponent(t.engine)}/${encodeURIComponent(t.task_id)}`;

/** The queue and worker inputs' suggestions, asked for when one of those inputs is first focused: the list
 * itself comes first (the server answers in order), and a component of their own re-renders only them. */
function Suggestions(props: { slug: string; wanted: boolean }) {
  const names = useResource(async () => {
    if (!props.wanted) return { queues: [], workers: [] };
    const [queues, workers] = await Promise.all([
      api.get<Queue[]>(...reportedGet(props.slug, 'queues')),
      api.get<Worker[]>(...reportedGet(props.slug, 'workers')),
    ]);
    return { queues: [...new Set(queues.map((q) => q.name))], workers: [...new Set(workers.map((w) => w.name))] };
  }, [props.slug, props.wanted]);
  return (
    <>
      <datalist id="task-queues">{names.data?.queues.map((n) => <option key={n} value={n} />)}</datalist>
      <datalist id="task-workers">{names.data?.workers.map((n) => <option key={n} value={n} />)}</datalist>
    </>
  );
}

/** A row of a page of 50; its cells call small components as functions (see the agents list). */
function taskRow(slug: string, t: Task) {
  return (
    <tr key={t.id}>
      <td>
        <a href={taskHref(slug, t)}>{t.name ?? 'unnamed task'}</a>
        <div class="muted small">
          <code>{t.task_id}</code>
        </div>
      </td>
      <td>{TaskStateBadge({ state: t.state })}</td>
      <td>{t.queue ?? '-'}</td>
      <td>{t.worker_name ?? '-'}</td>
      <td>{Time({ iso: t.created_at })}</td>
      <td>{duration(t.runtime_ms)}</td>
      <td>{t.retry_count || ''}</td>
    </tr>
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
          <button type="button" class="link" onClick={() => route(path, true)}>
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}

export function ProjectTasks({ project }: ProjectPageProps) {
  const { query } = useLocation();
  const filters = taskFilters(query);
  const key = JSON.stringify(filters);
  const paged = usePaged(
    (cursor) => api.get<TaskPage>(...tasksGet(project.slug, filters, cursor)),
    [project.slug, key],
  );
  // New and changed tasks appear without a reload: the stream says which changed, the first page is read again.
  const tasks = useLivePaged(paged, project.slug, 'task', () => api.get<TaskPage>(...tasksGet(project.slug, filters, null)), (t) => t.id);
  const filtered = TASK_FILTERS.some((k) => query[k]);
  const [suggest, setSuggest] = useState(false);
  return (
    <div class="stack">
      {/* Keyed by the filters: the inputs show the URL's values after Clear or back/forward. */}
      <Filters key={key} query={query} onSuggest={() => setSuggest(true)} />
      <Suggestions slug={project.slug} wanted={suggest} />
      <PagedSection
        title="Tasks"
        paged={tasks}
        actions={<LiveBadge state={tasks.live} />}
        what="task"
        columns={['Task', 'State', 'Queue', 'Worker', 'First seen', 'Run time', 'Retries']}
        empty={
          filtered ? (
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
        row={(t) => taskRow(project.slug, t)}
      />
    </div>
  );
}
