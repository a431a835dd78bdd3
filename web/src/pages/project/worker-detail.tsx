// /projects/:slug/workers/:worker: one worker as the agents reported it (GET /workers/{id}): its facts, the queues it
// consumes with their depth, its tasks by state over a window, the engine's inspect data; and for operators the
// worker actions, each behind a dialog that says what will happen: restart, pool resize, add or cancel a
// consumer, a rate limit. Each sends a command (with an Idempotency-Key) whose outcome is watched below.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Command, Project, Queue, WorkerDetail as Detail } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { idempotent, useIdempotencyKey } from '../../lib/idempotency.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, BackLink, Facts, Loaded, RefreshButton, Section, Time } from '../../ui/bits.tsx';
import { SelectField, TextField, type Values } from '../../ui/form.tsx';
import { FormDialog } from '../../ui/form-dialog.tsx';
import { JsonBlock } from '../../ui/json.tsx';
import { Table } from '../../ui/table.tsx';
import { IssuedCommands, useIssuedCommands } from './issued-commands.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath, reportedGet } from './requests.ts';
import { useAgents } from './use-agents.ts';

const WINDOWS = [
  { value: '3600', label: 'last hour' },
  { value: '86400', label: 'last 24 hours' },
  { value: '604800', label: 'last 7 days' },
];

const tasksOf = (slug: string, q: Record<string, string>) => `/projects/${slug}/tasks?${new URLSearchParams(q)}`;

function WorkerActions(props: { project: Project; w: Detail; onIssued: (c: Command) => void; knownQueues: string[] }) {
  const { project, w } = props;
  // One key per intent: it changes once a command has been issued, so a repeated submit replays the answer.
  const [issuedCount, setIssuedCount] = useState(0);
  const key = useIdempotencyKey(issuedCount);
  const issue = async (action: string, body: Record<string, unknown>) => {
    const c = await api.post<Command>(`${projectPath(project.slug)}/commands/${action}`, { worker_name: w.name, engine: w.engine, ...body }, idempotent(key));
    props.onIssued(c);
    setIssuedCount((n) => n + 1);
  };
  const resize = (v: Values) => {
    const n = Number(v.n);
    return issue('pool-resize', v.mode === 'size' ? { size: n } : { delta: v.mode === 'shrink' ? -n : n });
  };
  return (
    <div class="actions worker-actions">
      <FormDialog button="Restart…" title={`Restart ${w.name}?`} submit="Restart worker" onSubmit={() => issue('restart-worker', {})}>
        <p>
          The agent asks {w.engine} to restart this worker: z4j-celery restarts its pool, other engines exit under their
          supervisor and come back. Tasks running on it may be interrupted.
        </p>
      </FormDialog>
      <FormDialog button="Resize pool…" title={`Resize the pool of ${w.name}`} submit="Resize pool" onSubmit={resize}>
        <SelectField
          label="Change"
          name="mode"
          options={[
            { value: 'grow', label: 'Grow by' },
            { value: 'shrink', label: 'Shrink by' },
            { value: 'size', label: 'Set the size to' },
          ]}
          hint={w.concurrency === null ? 'The worker reported no pool size: grow or shrink it.' : `The worker last reported ${plural(w.concurrency, 'process', 'processes')}.`}
        />
        <TextField label="Processes" name="n" type="number" required min={1} max={1000} defaultValue="1" inputMode="numeric" />
      </FormDialog>
      <FormDialog button="Add consumer…" title={`Make ${w.name} consume a queue`} submit="Add consumer" onSubmit={(v) => issue('add-consumer', { queue: v.queue?.trim() })}>
        <TextField label="Queue" name="queue" required maxLength={200} autoFocus list="worker-known-queues" hint={`It consumes ${w.queues.join(', ') || 'no queue it reported'} now.`} />
        <datalist id="worker-known-queues">{props.knownQueues.map((q) => <option key={q} value={q} />)}</datalist>
      </FormDialog>
      {w.queues.length > 0 && (
        <FormDialog button="Cancel consumer…" title={`Make ${w.name} stop consuming a queue`} submit="Cancel consumer" onSubmit={(v) => issue('cancel-consumer', { queue: v.queue })}>
          <SelectField label="Queue" name="queue" options={w.queues} hint="Tasks waiting in it stay there for the other workers." />
        </FormDialog>
      )}
      <FormDialog
        button="Rate limit…"
        title={`Set a rate limit on ${w.name}`}
        submit="Set rate limit"
        onSubmit={(v) => issue('rate-limit', { task_name: v.task_name?.trim(), rate: v.rate?.trim() })}
      >
        <TextField label="Task name" name="task_name" required maxLength={500} autoFocus placeholder="app.tasks.send_invoice" />
        <TextField label="Rate" name="rate" required maxLength={20} placeholder="10/m" hint="Tasks per second, minute or hour on this worker: 5/s, 10/m, 100/h; 0 removes the limit." />
      </FormDialog>
    </div>
  );
}

function WorkerFacts(props: { slug: string; w: Detail }) {
  const { w } = props;
  return (
    <Facts
      items={[
        ['State', <Badge tone={w.state === 'online' ? 'ok' : 'warn'}>{w.state}</Badge>, 'worker-state'],
        ['Engine', w.engine],
        ['Host', w.hostname ?? '-'],
        w.pid !== null && ['Process id', w.pid],
        ['Pool size', w.concurrency ?? '-', 'worker-concurrency'],
        ['Active tasks', w.active_tasks ?? '-'],
        ['Queues', w.queues.length ? w.queues.join(', ') : '-'],
        w.load_average !== null && ['Load average', w.load_average.map((n) => n.toFixed(2)).join(' ')],
        ['Last heartbeat', <Time iso={w.last_heartbeat} />],
        ['First reported', <Time iso={w.created_at} />],
        ['Tasks', <a href={tasksOf(props.slug, { worker: w.name })}>{`Tasks run by ${w.name}`}</a>],
      ]}
    />
  );
}

export function WorkerDetail({ project, params }: ProjectPageProps) {
  const [windowSeconds, setWindowSeconds] = useState('3600');
  const path = `${projectPath(project.slug)}/workers/${encodeURIComponent(params.worker ?? '')}`;
  const worker = useResource(() => api.get<Detail>(path, { window_seconds: windowSeconds }), [path, windowSeconds]);
  const queues = useResource(() => api.get<Queue[]>(...reportedGet(project.slug, 'queues')), [project.slug]);
  const agents = useAgents(project.slug);
  const issued = useIssuedCommands(project.slug);
  const operator = project.role !== 'viewer';
  return (
    <div class="stack">
      <BackLink href={`/projects/${project.slug}/workers`}>All workers</BackLink>
      <Loaded resource={worker}>
        {(w) => (
          <>
            <Section title={w.name} actions={<RefreshButton onRefresh={worker.reload} busy={worker.loading} />}>
              <WorkerFacts slug={project.slug} w={w} />
              {operator ? (
                <>
                  <h3>Actions</h3>
                  <WorkerActions project={project} w={w} onIssued={issued.add} knownQueues={[...new Set((queues.data ?? []).map((q) => q.name))]} />
                  <IssuedCommands slug={project.slug} issued={issued} nameOf={agents.nameOf} />
                </>
              ) : (
                <p class="muted">Operators and admins of the project can restart this worker, resize its pool and change its queues.</p>
              )}
            </Section>
            <Section title="Queues it consumes">
              {w.queue_details.length === 0 ? (
                <p class="muted">No depth was reported for its queues.</p>
              ) : (
                <Table columns={['Queue', 'Waiting', 'Consumers', 'Broker', 'Last seen']}>
                  {w.queue_details.map((q) => (
                    <tr key={q.id}>
                      <td>
                        <a href={tasksOf(project.slug, { queue: q.name })}>{q.name}</a>
                      </td>
                      <td>{q.pending_count ?? '-'}</td>
                      <td>{q.consumer_count ?? '-'}</td>
                      <td>{q.broker_type ?? '-'}</td>
                      <td>{Time({ iso: q.last_seen_at })}</td>
                    </tr>
                  ))}
                </Table>
              )}
            </Section>
            <Section
              title="Its tasks by state"
              actions={
                <select aria-label="Tasks first seen in the" onChange={(e) => setWindowSeconds((e.currentTarget as HTMLSelectElement).value)}>
                  {WINDOWS.map((o) => (
                    <option key={o.value} value={o.value} selected={o.value === windowSeconds}>
                      {o.label}
                    </option>
                  ))}
                </select>
              }
            >
              {w.task_counts.total === 0 ? (
                <p class="muted">No task of this worker was first seen in this window.</p>
              ) : (
                <ul class="plain counts" data-testid="worker-task-counts">
                  {Object.entries(w.task_counts.by_state).map(([state, n]) => (
                    <li key={state}>
                      <a href={tasksOf(project.slug, { worker: w.name, state })}>{state}</a> {n}
                    </li>
                  ))}
                </ul>
              )}
              {!w.task_counts.complete && <p class="muted small">Counted over the project's newest tasks of the window only.</p>}
            </Section>
            <Section title="Inspect data">
              <JsonBlock value={Object.keys(w.metadata).length ? w.metadata : null} label="Inspect data" empty="The engine reported no inspect data." />
            </Section>
          </>
        )}
      </Loaded>
    </div>
  );
}
