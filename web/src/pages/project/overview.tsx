// /projects/:slug: what the project is and how it is doing over a picked window (?window=1h..30d): its agents at
// a glance (or how to connect the first one), key figures, what needs attention, the failing tasks, throughput,
// failure rate and run time charts, state changes, the latest tasks; then what to do next and (for its admins)
// its settings.
// Every figure comes from GET /stats and /trends (aggregates kept at ingest, docs/tasks-stats.md); the page reads
// them again when the live stream says tasks, commands or agents changed.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import type { AttentionItem, FailingTask, MintedAgent, Project, ProjectStats, StatsWindow, TaskPage, Trends } from '../../api/types.ts';
import { decimal, duration, percent, plural, thousands } from '../../lib/format.ts';
import { useLive } from '../../lib/live.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useResource } from '../../lib/use-resource.ts';
import { me } from '../../session.ts';
import { Badge, ConfirmButton, Empty, Loaded, Section, Time } from '../../ui/bits.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import { Form, TextField } from '../../ui/form.tsx';
import { KpiCards } from '../../ui/kpi.tsx';
import { Table } from '../../ui/table.tsx';
import { LAZY_FAILED, useLazy } from '../../ui/use-lazy.ts';
import { KeptNote, useWindow, WINDOW_LABEL, WindowPicker } from '../../ui/window-picker.tsx';
import { archiveProject } from '../projects.tsx';
import { MintedAgentPanel } from './agent-connect.tsx';
import { NoAgents } from './agents.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath, statsGet, trendsGet } from './requests.ts';
import { taskHref } from './task-link.ts';
import { useAgents } from './use-agents.ts';

const WATCH_MS = 3000;
const loadCharts = () => import('./trend-charts.tsx');
/** Figures are read again at most this often while tasks keep arriving. */
const FIGURES_THROTTLE_MS = 5000;

/** The agents at a glance; with none yet, how to connect the first (and the secrets once minted here). */
function AgentsSummary(props: { project: Project }) {
  const { project } = props;
  const agents = useAgents(project.slug);
  const [minted, setMinted] = useState<MintedAgent | null>(null);
  const mintedState = minted ? (agents.data?.find((a) => a.id === minted.agent.id)?.state ?? minted.agent.state) : null;
  useLive(project.slug, ['agent'], () => agents.reload());
  usePoll(agents.reload, WATCH_MS, mintedState !== null && mintedState !== 'online');
  const base = `/projects/${project.slug}`;
  if (minted) return <MintedAgentPanel project={project} minted={minted} state={mintedState!} onDone={() => setMinted(null)} />;
  return (
    <Section title="Agents and tasks">
      <Loaded resource={agents}>
        {(list) =>
          list.length === 0 ? (
            <NoAgents
              project={project}
              onMinted={(m) => {
                setMinted(m);
                void agents.reload();
              }}
            />
          ) : (
            <p data-testid="agents-summary">
              {`${list.filter((a) => a.state === 'online').length} of ${plural(list.length, 'agent')} online. `}
              See the <a href={`${base}/agents`}>agents</a>, <a href={`${base}/tasks`}>tasks</a>,{' '}
              <a href={`${base}/failures`}>failure groups</a>, <a href={`${base}/workers`}>workers</a>,{' '}
              <a href={`${base}/queues`}>queues</a> and <a href={`${base}/commands`}>commands</a>.
            </p>
          )
        }
      </Loaded>
    </Section>
  );
}

const tasksHref = (slug: string, q: Record<string, string>) => `/projects/${slug}/tasks?${new URLSearchParams(q)}`;

const HEALTH_TONE = { healthy: 'ok', idle: 'muted', degraded: 'warn', offline: 'bad' } as const;

export function HealthBadge(props: { health: ProjectStats['health'] }) {
  return (
    <span data-testid="project-health" title="From agents online, the failure rate and stuck commands (docs/tasks-stats.md)">
      {Badge({ tone: HEALTH_TONE[props.health], children: props.health })}
    </span>
  );
}

function StatsKpis(props: { slug: string; s: ProjectStats }) {
  const { slug, s } = props;
  const base = `/projects/${slug}`;
  const decided = s.counts.succeeded + s.counts.failed;
  const rate = s.failure_rate ?? 0;
  return (
    <KpiCards
      label="Key figures"
      items={[
        {
          label: 'Tasks finished',
          value: thousands(s.finished),
          detail: `${decimal(s.throughput_per_minute)} a minute · ${thousands(s.counts.succeeded)} succeeded`,
          href: `${base}/tasks`,
          testId: 'kpi-finished',
        },
        {
          label: 'Failure rate',
          value: percent(s.failure_rate),
          detail: `${thousands(s.counts.failed)} failed of ${thousands(decided)}`,
          tone: s.counts.failed === 0 ? undefined : rate > 0.2 ? 'bad' : rate > 0.05 ? 'warn' : undefined,
          href: tasksHref(slug, { state: 'failure' }),
          testId: 'kpi-failure-rate',
        },
        {
          label: 'Run time p95',
          value: duration(s.runtime_ms.p95),
          detail: `p50 ${duration(s.runtime_ms.p50)} · ${thousands(s.runtime_ms.count)} timed`,
          testId: 'kpi-p95',
        },
        {
          label: 'Agents online',
          value: `${s.agents.online} of ${s.agents.total}`,
          detail: s.agents.offline > 0 ? `${s.agents.offline} offline` : s.agents.unknown > 0 ? `${s.agents.unknown} never connected` : 'all connected',
          tone: s.agents.total > 0 && s.agents.online === 0 ? 'bad' : s.agents.offline > 0 ? 'warn' : undefined,
          href: `${base}/agents`,
          testId: 'kpi-agents',
        },
        {
          label: 'Workers online',
          value: `${s.workers.online} of ${s.workers.total}`,
          detail: 'heard from in the last 5 minutes',
          href: `${base}/workers`,
          testId: 'kpi-workers',
        },
        {
          label: 'Stuck commands',
          value: thousands(s.commands.stuck),
          detail: `${thousands(s.commands.pending + s.commands.dispatched)} open now`,
          tone: s.commands.stuck > 0 ? 'bad' : undefined,
          href: `${base}/commands`,
          testId: 'kpi-stuck',
        },
      ]}
    />
  );
}

/** Where an attention item leads. */
function attentionHref(a: AttentionItem, fallbackSlug?: string): string | null {
  const slug = a.project_slug ?? fallbackSlug;
  if (!slug) return a.kind === 'background_job_failing' ? '/health' : null;
  const base = `/projects/${slug}`;
  switch (a.kind) {
    case 'failing_task':
      return a.task_name ? tasksHref(slug, { name: a.task_name, state: 'failure' }) : `${base}/failures`;
    case 'high_failure_rate':
      return `${base}/failures`;
    case 'agent_offline':
      return a.agent_id && (a.count ?? 1) <= 1 ? `${base}/agents/${a.agent_id}` : `${base}/agents`;
    case 'agent_never_connected':
      return `${base}/agents`;
    case 'stuck_commands':
      return `${base}/commands?status=dispatched`;
    default:
      return '/health';
  }
}

const TREND_TEXT = { rising: '↑ rising', falling: '↓ falling', steady: '→ steady' } as const;
const TrendBadge = (props: { trend: FailingTask['trend'] }) =>
  props.trend ? Badge({ tone: props.trend === 'rising' ? 'bad' : props.trend === 'falling' ? 'ok' : 'muted', children: TREND_TEXT[props.trend] }) : null;

/** What needs someone, critical first (the server's order). */
export function AttentionList(props: { items: AttentionItem[]; slug?: string; showProject?: boolean; empty: string }) {
  if (props.items.length === 0)
    return (
      <Empty title={props.empty}>
        <p>No agent is offline, no task fails often and no command is stuck.</p>
      </Empty>
    );
  return (
    <ul class="attention" aria-label="Needs attention">
      {props.items.map((a, n) => {
        const href = attentionHref(a, props.slug);
        return (
          <li key={n} class={a.severity}>
            {Badge({ tone: a.severity === 'critical' ? 'bad' : 'warn', children: a.severity })}{' '}
            {props.showProject && a.project_name && <strong>{a.project_name}: </strong>}
            {href ? <a href={href}>{a.message}</a> : a.message} {a.trend && TrendBadge({ trend: a.trend })}
          </li>
        );
      })}
    </ul>
  );
}

function FailingTasks(props: { slug: string; items: FailingTask[]; window: StatsWindow }) {
  if (props.items.length === 0)
    return (
      <Empty title="No task is failing often">
        <p>{`Task names with at least 3 failures and a failure rate of 5 % or more in the ${WINDOW_LABEL[props.window]} appear here.`}</p>
      </Empty>
    );
  return (
    <Table columns={['Task', 'Failed', 'Finished', 'Failure rate', 'Trend', '']}>
      {props.items.map((f) => (
        <tr key={f.task_name}>
          <td>
            <a href={tasksHref(props.slug, { name: f.task_name, state: 'failure' })}>{f.task_name}</a>
          </td>
          <td>{thousands(f.failed)}</td>
          <td>{thousands(f.finished)}</td>
          <td>{percent(f.failure_rate)}</td>
          <td>{TrendBadge({ trend: f.trend })}</td>
          <td>
            <a class="small" href={`/projects/${props.slug}/failures?${new URLSearchParams({ window: props.window, task_name: f.task_name })}`}>
              Why: failure groups
            </a>
          </td>
        </tr>
      ))}
    </Table>
  );
}

const STATE_OF_COUNT: [keyof ProjectStats['counts'], string][] = [
  ['received', 'received'],
  ['started', 'started'],
  ['succeeded', 'success'],
  ['failed', 'failure'],
  ['retried', 'retry'],
  ['revoked', 'revoked'],
  ['rejected', 'rejected'],
];

/** Reports of each state in the window (a task that started and succeeded counts in both); each links to the
 * tasks in that state now, which the note under the bars says. */
function StateCounts(props: { slug: string; s: ProjectStats }) {
  const top = Math.max(1, ...STATE_OF_COUNT.map(([k]) => props.s.counts[k]));
  return (
    <ul class="bars" aria-label="State changes in the window">
      {STATE_OF_COUNT.map(([k, state]) => (
        <li key={k}>
          <a href={tasksHref(props.slug, { state })}>{k}</a>
          <span class={`bar ${k}`} style={{ width: `${(props.s.counts[k] / top) * 100}%` }} />
          <span class="bar-value">{thousands(props.s.counts[k])}</span>
        </li>
      ))}
    </ul>
  );
}

function Figures(props: { project: Project }) {
  const slug = props.project.slug;
  const window = useWindow();
  const stats = useResource(() => api.get<ProjectStats>(...statsGet(slug, window)), [slug, window]);
  const trends = useResource(() => api.get<Trends>(...trendsGet(slug, window)), [slug, window]);
  useLive(slug, ['task', 'command', 'agent'], () => Promise.all([stats.reload(), trends.reload()]), { throttleMs: FIGURES_THROTTLE_MS });
  // The charts' code is a chunk of its own, fetched while the figures are asked for (ui/use-lazy.ts).
  const charts = useLazy(loadCharts);
  return (
    <>
      <Section
        title="At a glance"
        actions={
          <div class="page-actions">
            {stats.data && <HealthBadge health={stats.data.health} />}
            <WindowPicker value={window} />
          </div>
        }
      >
        <Loaded resource={stats}>
          {(s) => (
            <>
              <StatsKpis slug={slug} s={s} />
              <p class="muted small">
                {`Over the ${WINDOW_LABEL[window]}. `}
                {s.last_activity_at ? (
                  <>
                    Last task event <Time iso={s.last_activity_at} />.
                  </>
                ) : (
                  'No task events yet.'
                )}
              </p>
              <KeptNote kept={s} testId="stats-partial" />
            </>
          )}
        </Loaded>
      </Section>
      {stats.data && (
        <>
          <Section title="Needs attention">
            <AttentionList items={stats.data.attention} slug={slug} empty="Nothing needs attention" />
          </Section>
          <Section title="Failing tasks">
            <FailingTasks slug={slug} items={stats.data.failing_tasks} window={window} />
          </Section>
        </>
      )}
      <Section title="Trends">
        <Loaded resource={trends}>
          {(t) =>
            charts.value ? (
              <charts.value.TrendCharts data={charts.value.chartDataOf(t)} />
            ) : charts.failed ? (
              <p class="notice error">{LAZY_FAILED}</p>
            ) : (
              <p class="muted">Loading…</p>
            )
          }
        </Loaded>
      </Section>
      {stats.data && (
        <Section title={`State changes in the ${WINDOW_LABEL[window]}`}>
          <StateCounts slug={slug} s={stats.data} />
          <p class="muted small">Tasks reported in each state over the window; a name lists the tasks in that state now.</p>
        </Section>
      )}
      <RecentTasks slug={slug} />
    </>
  );
}

const RECENT = 10;

/** The latest tasks svc heard of, newest first, kept current by the live stream. */
function RecentTasks(props: { slug: string }) {
  const { slug } = props;
  const recent = useResource(() => api.get<TaskPage>(`${projectPath(slug)}/tasks`, { limit: RECENT }), [slug]);
  useLive(slug, ['task'], () => recent.reload(), { throttleMs: FIGURES_THROTTLE_MS });
  return (
    <Section title="Recent tasks" actions={<a href={`/projects/${slug}/tasks`}>All tasks</a>}>
      <Loaded resource={recent}>
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No tasks yet">
              <p>Tasks appear here as the project's agents report them.</p>
            </Empty>
          ) : (
            <div data-testid="recent-tasks">
              <Table columns={['Task', 'State', 'Queue', 'Worker', 'Received', 'Run time']}>
                {page.items.map((t) => (
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
                  </tr>
                ))}
              </Table>
            </div>
          )
        }
      </Loaded>
    </Section>
  );
}

export function ProjectOverview({ project, reloadProject }: ProjectPageProps) {
  const { route } = useLocation();
  const isAdmin = project.role === 'admin';
  return (
    <div class="stack">
      {project.description && <p>{project.description}</p>}
      <AgentsSummary project={project} />
      <Figures project={project} />
      <Section title="Next steps">
        <ul class="steps">
          {isAdmin && (
            <li>
              <a href={`/projects/${project.slug}/members`}>Invite your team</a> and give each person a role: viewers read,
              operators also issue commands, admins manage members and agents.
            </li>
          )}
          <li>
            <a href="/account/api-keys">Create an API key</a> for scripts that read this project.
          </li>
          <li>
            Follow what happens in the <a href={`/activity?project=${project.slug}`}>activity feed</a>.
          </li>
          <li>
            Press <kbd>Ctrl</kbd> <kbd>K</kbd> to jump to any project, task, agent, worker or page.
          </li>
        </ul>
        <dl class="facts">
          <dt>Created</dt>
          <dd>
            <Time iso={project.created_at} />
          </dd>
          <dt>Last changed</dt>
          <dd>
            <Time iso={project.updated_at} />
          </dd>
        </dl>
      </Section>
      {isAdmin && (
        <Section title="Settings">
          <Form
            submit="Save"
            busyText="Saving…"
            onSubmit={async (v) => {
              await api.patch(`/projects/${project.slug}`, { name: v.name?.trim(), description: v.description ?? '' });
              await reloadProject();
            }}
          >
            <TextField label="Name" name="name" defaultValue={project.name} required maxLength={200} />
            <TextField label="Description" name="description" defaultValue={project.description} maxLength={2000} />
          </Form>
        </Section>
      )}
      {me.value?.is_admin && (
        <Section title="Archive">
          <p>Archiving refuses the project's agents and hides it from every list. It cannot be undone from the dashboard.</p>
          <ConfirmButton
            label="Archive this project"
            title={`Archive ${project.name}?`}
            confirm="Archive project"
            danger
            onConfirm={async () => {
              await archiveProject(project.slug);
              route('/projects', true);
            }}
          >
            <p>Its agents are refused from then on. Its history stays in the audit log.</p>
          </ConfirmButton>
        </Section>
      )}
    </div>
  );
}
