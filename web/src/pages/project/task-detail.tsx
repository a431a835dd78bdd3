// /projects/:slug/tasks/:engine/:task_id: one task as the agents reported it: state and timings, the tree of
// its chain, group or chord, arguments, result or exception with its traceback, the event timeline, its raw
// events, and the commands aimed at it.
import { api } from '../../api/client.ts';
import type { TaskDetail as Detail } from '../../api/types.ts';
import { duration } from '../../lib/format.ts';
import { concerns, useLive } from '../../lib/live.ts';
import { useResource } from '../../lib/use-resource.ts';
import { BackLink, Facts, Loaded, RefreshButton, Section, Time } from '../../ui/bits.tsx';
import { JsonBlock } from '../../ui/json.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import type { ProjectPageProps } from './sections.ts';
import { TaskCommands } from './task-commands.tsx';
import { LAZY_FAILED, useLazy } from '../../ui/use-lazy.ts';
import { taskGet } from './requests.ts';
import { taskHref } from './task-link.ts';
import { useAgents } from './use-agents.ts';

/** The tree and the raw events: a chunk fetched while the task is asked for (ui/use-lazy.ts). */
const loadTree = () => import('./task-tree.tsx');

function TaskFacts(props: { slug: string; task: Detail }) {
  const t = props.task;
  const related = (id: string | null) =>
    id && id !== t.task_id ? <a href={taskHref(props.slug, { engine: t.engine, task_id: id })}>{id}</a> : '-';
  return (
    <Facts
      items={[
        ['State', <TaskStateBadge state={t.state} />, 'task-state'],
        [
          'Task id',
          <>
            <code>{t.task_id}</code> <span class="muted">({t.engine})</span>
          </>,
        ],
        ['Queue', t.queue ?? '-'],
        ['Worker', t.worker_name ?? '-'],
        t.priority !== null && ['Priority', t.priority],
        ['Retries', t.retry_count],
        t.eta !== null && ['ETA', t.eta],
        ['First seen', <Time iso={t.created_at} />],
        ['Received', <Time iso={t.received_at} empty="-" />],
        ['Started', <Time iso={t.started_at} empty="-" />],
        ['Finished', <Time iso={t.finished_at} empty="-" />],
        ['Run time', duration(t.runtime_ms)],
        ['Parent task', related(t.parent_task_id)],
        ['Root task', related(t.root_task_id)],
        t.tags.length > 0 && ['Tags', t.tags.join(', ')],
      ]}
    />
  );
}

function Timeline(props: { task: Detail; nameOf: (id: string | null) => string }) {
  return (
    <ol class="timeline" aria-label="Events, oldest first">
      {props.task.events.map((e) => (
        <li key={e.id}>
          <div class="feed-main">
            <code class="feed-action">{e.kind}</code>
            <span class="muted">
              <Time iso={e.occurred_at} /> · from {props.nameOf(e.agent_id)}
            </span>
          </div>
          <details>
            <summary>Event data</summary>
            <JsonBlock value={e.payload} label={`Data of ${e.kind}`} />
          </details>
        </li>
      ))}
    </ol>
  );
}

export function TaskDetail({ project, params }: ProjectPageProps) {
  const path = taskGet(project.slug, { engine: params.engine ?? '', task_id: params.task_id ?? '' });
  const task = useResource(() => api.get<Detail>(path), [path]);
  useLive(project.slug, ['task'], (e) => concerns(e, params.task_id) && task.reload());
  const agents = useAgents(project.slug);
  const tree = useLazy(loadTree);
  return (
    <div class="stack">
      <BackLink href={`/projects/${project.slug}/tasks`}>All tasks</BackLink>
      <Loaded resource={task}>
        {(t) => (
          <>
            <Section
              title={t.name ?? 'Unnamed task'}
              actions={<RefreshButton onRefresh={task.reload} busy={task.loading} />}
            >
              <TaskFacts slug={project.slug} task={t} />
            </Section>
            {tree.value && <tree.value.TaskTreeSection slug={project.slug} engine={t.engine} taskId={t.task_id} path={path} />}
            {tree.failed && <p class="notice error">{LAZY_FAILED}</p>}
            {agents.data && <TaskCommands project={project} task={t} agents={agents.data} nameOf={agents.nameOf} />}
            {(t.exception || t.traceback) && (
              <Section title="Exception">
                {t.exception && (
                  <p class="text-bad" data-testid="task-exception">
                    {t.exception}
                  </p>
                )}
                {t.traceback && <pre class="code-block" tabIndex={0} aria-label="Traceback">{t.traceback}</pre>}
              </Section>
            )}
            <Section title="Arguments">
              <h3>Positional (args)</h3>
              <JsonBlock
                value={t.args}
                label="Positional arguments"
                empty="Not reported (agents send them with task.received or task.started)."
              />
              <h3>Keyword (kwargs)</h3>
              <JsonBlock value={t.kwargs} label="Keyword arguments" empty="Not reported." />
            </Section>
            {t.state === 'success' && (
              <Section title="Result">
                <JsonBlock value={t.result} label="Result" empty="The task returned nothing (or its result was not reported)." />
              </Section>
            )}
            <Section title={`Events (${t.events.length}${t.events_truncated ? '+' : ''})`}>
              <Timeline task={t} nameOf={agents.nameOf} />
              {t.events_truncated && (
                <p class="muted small" data-testid="events-truncated">{`The first ${t.events.length} events are shown here; Raw events below pages through all of them.`}</p>
              )}
            </Section>
            {tree.value && <tree.value.RawEvents path={path} count={t.events.length} more={t.events_truncated} nameOf={agents.nameOf} />}
          </>
        )}
      </Loaded>
    </div>
  );
}
