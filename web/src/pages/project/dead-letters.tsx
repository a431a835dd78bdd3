// /projects/:slug/dead-letters: an engine's dead letters (operators). Listing them is itself a command
// (list-dead-letters, wire action dlq.list): the agent answers the page as the command's result, so the page
// issues it, watches it until the agent has answered, and shows the entries; each can be requeued (another
// command, behind a confirmation). z4j-rq and z4j-dramatiq list dead letters; z4j-celery does not, and the
// command then fails saying so.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Command, Project } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { idempotent, newIdempotencyKey } from '../../lib/idempotency.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, ConfirmDialog, Empty, Section, Time } from '../../ui/bits.tsx';
import { Form, SelectField, TextField } from '../../ui/form.tsx';
import { COMMAND_ENDED, CommandStatusBadge } from '../../ui/status.tsx';
import { Table } from '../../ui/table.tsx';
import { IssuedCommands, useIssuedCommands } from './issued-commands.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath, reportedGet } from './requests.ts';
import { taskHref } from './task-link.ts';
import { useAgents } from './use-agents.ts';

/** One entry of a dlq.list result (agent protocol 7.2). */
interface DeadLetter {
  task_id: string;
  task_name?: string | null;
  queue?: string | null;
  failed_at?: string | null;
  error_excerpt?: string | null;
  attempts?: number | null;
}

interface DlqResult {
  entries?: DeadLetter[];
  next_cursor?: string | null;
  total?: number | null;
  engine?: string;
}

const LIST_DEFAULT = 50;

function Entries(props: { project: Project; engine: string; result: DlqResult; onRequeue: (d: DeadLetter) => void; onNext: (cursor: string) => void }) {
  const entries = props.result.entries ?? [];
  if (entries.length === 0)
    return (
      <Empty title="No dead letters">
        <p>The agent found no dead-lettered task{props.result.engine ? ` in ${props.result.engine}` : ''}. Good news.</p>
      </Empty>
    );
  return (
    <>
      <p class="muted small">
        {`${plural(entries.length, 'dead letter')} shown`}
        {typeof props.result.total === 'number' ? ` of ${props.result.total}` : ''}.
      </p>
      <Table columns={['Task', 'Queue', 'Failed', 'Attempts', 'Error', '']}>
        {entries.map((d) => (
          <tr key={d.task_id}>
            <td>
              <a href={taskHref(props.project.slug, { engine: props.engine, task_id: d.task_id })}>{d.task_name ?? d.task_id}</a>
              <div class="muted small">
                <code>{d.task_id}</code>
              </div>
            </td>
            <td>{d.queue ?? '-'}</td>
            <td>{d.failed_at ? Time({ iso: d.failed_at }) : '-'}</td>
            <td>{d.attempts ?? '-'}</td>
            <td class="small">
              <code class="wrap">{d.error_excerpt ?? '-'}</code>
            </td>
            <td>
              <button type="button" class="secondary small" aria-label={`Requeue ${d.task_name ?? d.task_id}`} onClick={() => props.onRequeue(d)}>
                Requeue…
              </button>
            </td>
          </tr>
        ))}
      </Table>
      {props.result.next_cursor && (
        <div class="actions">
          <button type="button" class="secondary" onClick={() => props.onNext(props.result.next_cursor!)}>
            Next page
          </button>
        </div>
      )}
    </>
  );
}

export function ProjectDeadLetters({ project }: ProjectPageProps) {
  const agents = useAgents(project.slug);
  const reported = useResource(
    async () => {
      const [workers, queues] = await Promise.all([
        api.get<{ engine: string }[]>(...reportedGet(project.slug, 'workers')),
        api.get<{ engine: string; name: string }[]>(...reportedGet(project.slug, 'queues')),
      ]);
      return { engines: [...workers, ...queues].map((x) => x.engine), queues: [...new Set(queues.map((q) => q.name))] };
    },
    [project.slug],
  );
  const engines = [...new Set([...(agents.data ?? []).flatMap((a) => a.engine_adapters), ...(reported.data?.engines ?? [])])].sort();
  const issued = useIssuedCommands(project.slug);
  const [listing, setListing] = useState<{ command: Command; engine: string; queue?: string; limit: number } | null>(null);
  const [requeue, setRequeue] = useState<DeadLetter | null>(null);
  const [key, setKey] = useState('');
  // The listing command is watched like the others; its latest copy is in `issued`.
  const list = listing ? (issued.list.find((c) => c.id === listing.command.id) ?? listing.command) : null;
  const operator = project.role !== 'viewer';
  const ask = async (engine: string, queue: string | undefined, limit: number, cursor?: string) => {
    const c = await api.post<Command>(
      `${projectPath(project.slug)}/commands/list-dead-letters`,
      { engine, limit, ...(queue ? { queue } : {}), ...(cursor ? { cursor } : {}) },
      idempotent(newIdempotencyKey()),
    );
    issued.add(c);
    setListing({ command: c, engine, queue, limit });
  };
  if (!operator)
    return (
      <Section title="Dead letters">
        <p class="muted">Listing dead letters asks an agent (a command): operators and admins of the project can do it.</p>
      </Section>
    );
  return (
    <div class="stack">
      <Section title="Dead letters">
        <p class="muted">
          Tasks an engine gave up on and parked (RQ's failed job registry, Dramatiq's dead-letter queue). The agent lists them
          when asked; z4j-celery does not support it.
        </p>
        <Form
          class="inline-form"
          label="List dead letters"
          submit="List dead letters"
          busyText="Asking the agent…"
          onSubmit={async (v) => ask(v.engine ?? '', v.queue?.trim() || undefined, Number(v.limit) || LIST_DEFAULT)}
        >
          {engines.length > 0 ? (
            <SelectField label="Engine" name="engine" options={engines} value={listing?.engine} />
          ) : (
            <TextField label="Engine" name="engine" required maxLength={40} placeholder="rq" />
          )}
          <TextField label="Queue (optional)" name="queue" maxLength={200} list="dlq-queues" />
          <TextField label="At most" name="limit" type="number" min={1} max={200} defaultValue={String(LIST_DEFAULT)} />
          <datalist id="dlq-queues">{reported.data?.queues.map((q) => <option key={q} value={q} />)}</datalist>
        </Form>
      </Section>
      {list && listing && (
        <Section title={`Dead letters of ${listing.engine}${listing.queue ? `, queue ${listing.queue}` : ''}`}>
          <p class="small" data-testid="dlq-status">
            <a href={`/projects/${project.slug}/commands/${list.id}`}>Listing command</a> {CommandStatusBadge({ status: list.status })}{' '}
            {!COMMAND_ENDED.has(list.status) && <span class="muted">waiting for the agent's answer…</span>}
          </p>
          {list.status === 'completed' && (
            <Entries
              project={project}
              engine={listing.engine}
              result={(list.result ?? {}) as DlqResult}
              onRequeue={(d) => {
                setKey(newIdempotencyKey());
                setRequeue(d);
              }}
              onNext={(cursor) => void ask(listing.engine, listing.queue, listing.limit, cursor)}
            />
          )}
          {COMMAND_ENDED.has(list.status) && list.status !== 'completed' && (
            <div class="notice error" role="alert">
              <p>{list.error ?? `The listing ended ${list.status.replace('_', ' ')}.`}</p>
            </div>
          )}
        </Section>
      )}
      <IssuedCommands slug={project.slug} issued={issued} nameOf={agents.nameOf} title="Commands sent from this page" />
      <ConfirmDialog
        open={requeue !== null}
        title={`Requeue ${requeue?.task_name ?? requeue?.task_id ?? ''}?`}
        confirm="Requeue task"
        onConfirm={async () => {
          const d = requeue!;
          const c = await api.post<Command>(
            `${projectPath(project.slug)}/commands/requeue-dead-letter`,
            { engine: listing!.engine, task_id: d.task_id, ...(d.task_name ? { task_name: d.task_name } : {}) },
            idempotent(key),
          );
          issued.add(c);
        }}
        onClose={() => setRequeue(null)}
      >
        <p>
          The agent puts the task back on its queue with its original arguments {requeue?.queue ? <>(<code>{requeue.queue}</code>)</> : null}; a worker
          runs it again. {Badge({ tone: 'info', children: listing?.engine ?? '' })}
        </p>
      </ConfirmDialog>
    </div>
  );
}
