// /projects/:slug/workers and /queues: the task workers and queues the agents report (worker details and
// queue depths come with heartbeats; queues also from task events). A worker leads to its page (its actions),
// a queue to its tasks; project admins purge a queue in two steps: svc hands out a short-lived confirm token
// with the depth it last saw, the dialog shows it, and the purge is sent with that token.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import type { Command, Project, PurgeConfirmation, Queue, Worker } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { idempotent, newIdempotencyKey } from '../../lib/idempotency.ts';
import { useResource, type Resource } from '../../lib/use-resource.ts';
import { Badge, ConfirmDialog, Empty, Section, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { ListTable } from '../../ui/table.tsx';
import { IssuedCommands, useIssuedCommands } from './issued-commands.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath, reportedGet } from './requests.ts';
import { useAgents } from './use-agents.ts';

const tasksOf = (slug: string, filter: 'worker' | 'queue', name: string) =>
  `/projects/${slug}/tasks?${new URLSearchParams({ [filter]: name })}`;
const count = (n: number | null) => (n === null ? <span class="muted">-</span> : n);

/** One reported list (GET /<what>): a section titled after it, and an empty state saying where rows come from. */
function Reported<T>(props: {
  project: Project;
  what: 'workers' | 'queues';
  title: string;
  columns: string[];
  whence: string;
  row: (item: T) => ComponentChildren;
  list: Resource<T[]>;
  children?: ComponentChildren;
}) {
  const { project, what } = props;
  return (
    <Section title={props.title}>
      {props.children}
      <ListTable
        resource={props.list}
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

export function ProjectWorkers({ project }: ProjectPageProps) {
  const list = useResource(() => api.get<Worker[]>(...reportedGet(project.slug, 'workers')), [project.slug]);
  return (
    <Reported<Worker>
      project={project}
      list={list}
      what="workers"
      title="Workers"
      columns={['Name', 'Engine', 'State', 'Concurrency', 'Active tasks', 'Queues', 'Last heartbeat', 'Tasks']}
      whence="Workers appear when an agent reports them: z4j-celery sends worker details with its heartbeats."
      row={(w) => (
        <tr key={w.id}>
          <td>
            <a href={`/projects/${project.slug}/workers/${w.id}`}>{w.name}</a>
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
          <td>
            <a class="small" href={tasksOf(project.slug, 'worker', w.name)} aria-label={`Tasks of ${w.name}`}>
              Tasks
            </a>
          </td>
        </tr>
      )}
    />
  );
}

/** The purge's second step: what the token binds, shown before anything is purged. */
function PurgeDialog(props: { project: Project; confirmation: PurgeConfirmation | null; onClose: () => void; onIssued: (c: Command) => void }) {
  const c = props.confirmation;
  const [force, setForce] = useState(false);
  const [key] = useState(newIdempotencyKey);
  return (
    <ConfirmDialog
      open={c !== null}
      title={c ? `Purge queue ${c.queue}?` : 'Purge queue?'}
      confirm={c?.depth !== null && c?.depth !== undefined ? `Purge ${plural(c.depth, 'task')}` : 'Purge queue'}
      danger
      onConfirm={async () => {
        if (!c) return;
        if (c.requires_force && !force) throw new Error('Tick the box to purge a queue whose depth svc does not know.');
        const cmd = await api.post<Command>(
          `${projectPath(props.project.slug)}/commands/purge-queue`,
          { queue: c.queue, confirm_token: c.confirm_token, ...(c.requires_force ? { force: true } : {}) },
          idempotent(`${key}-${c.confirm_token.slice(0, 16)}`),
        );
        props.onIssued(cmd);
      }}
      onClose={() => {
        setForce(false);
        props.onClose();
      }}
    >
      {c && (
        <>
          <p>
            {c.depth !== null ? (
              <>
                svc last saw <strong data-testid="purge-depth">{plural(c.depth, 'task')}</strong> waiting in <code>{c.queue}</code> ({c.engine}).
                They are deleted from the broker and never run. The agent purges only if the queue still holds exactly that many;
                if it changed, nothing is purged and you ask again.
              </>
            ) : (
              <>
                svc knows no depth for <code>{c.queue}</code> ({c.engine}), so the agent cannot check that the queue is what you
                expect: every task waiting in it is deleted and never runs.
              </>
            )}
          </p>
          {c.requires_force && (
            <label class="inline">
              <input type="checkbox" checked={force} onChange={(e) => setForce((e.currentTarget as HTMLInputElement).checked)} /> Purge
              although the depth is unknown
            </label>
          )}
          <p class="muted small">
            This confirmation is valid until <Time iso={c.expires_at} /> and only for you.
          </p>
        </>
      )}
    </ConfirmDialog>
  );
}

export function ProjectQueues({ project }: ProjectPageProps) {
  const list = useResource(() => api.get<Queue[]>(...reportedGet(project.slug, 'queues')), [project.slug]);
  const admin = project.role === 'admin';
  const [confirmation, setConfirmation] = useState<PurgeConfirmation | null>(null);
  const [asking, setAsking] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const issued = useIssuedCommands(project.slug);
  const agents = useAgents(project.slug);
  // Step one: the confirm token (project admins; the server refuses anyone else).
  const askPurge = async (q: Queue) => {
    setAsking(q.id);
    setError(null);
    try {
      setConfirmation(await api.post<PurgeConfirmation>(`${projectPath(project.slug)}/commands/purge-queue/confirm-token`, { queue: q.name, engine: q.engine }));
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setAsking(null);
    }
  };
  return (
    <>
      <Reported<Queue>
        project={project}
        what="queues"
        title="Queues"
        list={list}
        columns={['Name', 'Engine', 'Waiting', 'Consumers', 'Broker', 'Last seen', ...(admin ? [''] : [])]}
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
            {admin && (
              <td>
                <button type="button" class="danger small" aria-label={`Purge ${q.name}`} disabled={asking === q.id} onClick={() => void askPurge(q)}>
                  {asking === q.id ? 'Asking…' : 'Purge…'}
                </button>
              </td>
            )}
          </tr>
        )}
      >
        <ErrorNotice error={error} title="The purge cannot start" />
        <IssuedCommands slug={project.slug} issued={issued} nameOf={agents.nameOf} />
      </Reported>
      <PurgeDialog
        project={project}
        confirmation={confirmation}
        onClose={() => setConfirmation(null)}
        onIssued={(c) => {
          issued.add(c);
          void list.reload();
        }}
      />
    </>
  );
}
