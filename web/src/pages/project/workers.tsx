// /projects/:slug/workers and /queues: the task workers and queues the agents report (worker details and
// queue depths come with heartbeats; queues also from task events). Each links to its tasks.
import type { ComponentChildren } from 'preact';
import { api } from '../../api/client.ts';
import type { Project, Queue, Worker } from '../../api/types.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, Empty, Section, Time } from '../../ui/bits.tsx';
import { ListTable } from '../../ui/table.tsx';
import type { ProjectPageProps } from './sections.ts';
import { reportedGet } from './requests.ts';

const tasksOf = (slug: string, filter: 'worker' | 'queue', name: string) =>
  `/projects/${slug}/tasks?${new URLSearchParams({ [filter]: name })}`;
const count = (n: number | null) => (n === null ? <span class="muted">-</span> : n);

/** One reported list: GET /<what>, a section titled after it, and an empty state saying where rows come from. */
function Reported<T>(props: {
  project: Project;
  what: 'workers' | 'queues';
  title: string;
  columns: string[];
  whence: string;
  row: (item: T) => ComponentChildren;
}) {
  const { project, what } = props;
  const list = useResource(() => api.get<T[]>(...reportedGet(project.slug, what)), [project.slug, what]);
  return (
    <Section title={props.title}>
      <ListTable
        resource={list}
        columns={props.columns}
        empty={
          <Empty title={`No ${what} reported yet`}>
            <p>
              {props.whence} If no agent runs yet, <a href={`/projects/${project.slug}/agents`}>connect one</a>.
            </p>
          </Empty>
        }
        row={props.row}
      />
    </Section>
  );
}

export const ProjectWorkers = ({ project }: ProjectPageProps) => (
  <Reported<Worker>
    project={project}
    what="workers"
    title="Workers"
    columns={['Name', 'Engine', 'State', 'Concurrency', 'Active tasks', 'Queues', 'Last heartbeat']}
    whence="Workers appear when an agent reports them: z4j-celery sends worker details with its heartbeats."
    row={(w) => (
      <tr key={w.id}>
        <td>
          <a href={tasksOf(project.slug, 'worker', w.name)}>{w.name}</a>
        </td>
        <td>{w.engine}</td>
        <td>
          <Badge tone={w.state === 'online' ? 'ok' : 'warn'}>{w.state}</Badge>
        </td>
        <td>{count(w.concurrency)}</td>
        <td>{count(w.active_tasks)}</td>
        <td>{w.queues.join(', ') || <span class="muted">-</span>}</td>
        <td>
          <Time iso={w.last_heartbeat} />
        </td>
      </tr>
    )}
  />
);

export const ProjectQueues = ({ project }: ProjectPageProps) => (
  <Reported<Queue>
    project={project}
    what="queues"
    title="Queues"
    columns={['Name', 'Engine', 'Waiting', 'Consumers', 'Broker', 'Last seen']}
    whence="Queues appear with the first task events that name them, and with the queue depths agents report."
    row={(q) => (
      <tr key={q.id}>
        <td>
          <a href={tasksOf(project.slug, 'queue', q.name)}>{q.name}</a>
        </td>
        <td>{q.engine}</td>
        <td>{count(q.pending_count)}</td>
        <td>{count(q.consumer_count)}</td>
        <td>{q.broker_type ?? <span class="muted">-</span>}</td>
        <td>
          <Time iso={q.last_seen_at} />
        </td>
      </tr>
    )}
  />
);
