// /home: every project the user can open at a glance, over a picked window (GET /home): totals as key figures,
// what needs attention across projects (critical first), the projects with their health and figures, and
// throughput, failure rate and run time charts summed from the busiest projects' trends.
import { api } from '../api/client.ts';
import type { HomeProject, HomeSummary, StatsWindow, TrendPoint, Trends } from '../api/types.ts';
import { decimal, duration, percent, thousands } from '../lib/format.ts';
import { useLive } from '../lib/live.ts';
import { useResource } from '../lib/use-resource.ts';
import { projects } from '../session.ts';
import { Empty, Loaded, PageHeader, Section, Time } from '../ui/bits.tsx';
import type { Series } from '../ui/charts.tsx';
import { KpiCards } from '../ui/kpi.tsx';
import { Table } from '../ui/table.tsx';
import { KeptNote, useWindow, WINDOW_LABEL, WindowPicker } from '../ui/window-picker.tsx';
import { AttentionList, HealthBadge } from './project/overview.tsx';
import { projectPath } from './project/requests.ts';
import { TrendCharts } from './project/trend-charts.tsx';

/** Charts read the trends of this many projects at most (the busiest). */
const CHART_PROJECTS = 12;
/** Run time lines, one per project. */
const RUNTIME_LINES = 4;
const LINE_TONES = ['warn', 'accent', 'ok', 'bad'] as const;

function Totals(props: { h: HomeSummary }) {
  const t = props.h.totals;
  return (
    <KpiCards
      label="Totals across projects"
      items={[
        { label: 'Projects', value: thousands(t.projects), testId: 'home-projects' },
        {
          label: 'Tasks finished',
          value: thousands(t.finished),
          detail: `${decimal(t.throughput_per_minute)} a minute · ${thousands(t.succeeded)} succeeded`,
          testId: 'home-finished',
        },
        {
          label: 'Failure rate',
          value: percent(t.failure_rate),
          detail: `${thousands(t.failed)} failed`,
          tone: (t.failure_rate ?? 0) > 0.2 ? 'bad' : (t.failure_rate ?? 0) > 0.05 ? 'warn' : undefined,
          testId: 'home-failure-rate',
        },
        {
          label: 'Agents online',
          value: `${t.agents_online} of ${t.agents_total}`,
          tone: t.agents_total > 0 && t.agents_online < t.agents_total ? 'warn' : undefined,
          testId: 'home-agents',
        },
        { label: 'Workers online', value: `${t.workers_online} of ${t.workers_total}`, testId: 'home-workers' },
        { label: 'Stuck commands', value: thousands(t.stuck_commands), tone: t.stuck_commands > 0 ? 'bad' : undefined, testId: 'home-stuck' },
      ]}
    />
  );
}

function projectRow(p: HomeProject, window: StatsWindow) {
  const base = `/projects/${p.slug}`;
  return (
    <tr key={p.id}>
      <td>
        <a href={`${base}?window=${window}`}>{p.name}</a>
        <div class="muted small">
          <code>{p.slug}</code> · {p.role}
        </div>
      </td>
      <td>{HealthBadge({ health: p.health })}</td>
      <td>{thousands(p.finished)}</td>
      <td>{p.failed > 0 ? <a href={`${base}/failures?window=${window}`}>{thousands(p.failed)}</a> : '0'}</td>
      <td>{percent(p.failure_rate)}</td>
      <td>{duration(p.runtime_p95_ms)}</td>
      <td>{`${p.agents_online} / ${p.agents_total}`}</td>
      <td>{`${p.workers_online} / ${p.workers_total}`}</td>
      <td>{p.stuck_commands || ''}</td>
      <td>
        {p.attention_critical > 0 && <span class="text-bad">{`${p.attention_critical} critical `}</span>}
        {p.attention_warning > 0 && <span>{`${p.attention_warning} warning`}</span>}
      </td>
      <td>{Time({ iso: p.last_activity_at, empty: 'none' })}</td>
    </tr>
  );
}

/** The busiest projects' trends, summed bucket by bucket (their buckets are the same: one window, auto width),
 * with a run-time line per project (percentiles do not add up). */
function HomeCharts(props: { h: HomeSummary; window: StatsWindow }) {
  const busiest = [...props.h.projects].sort((a, b) => b.finished - a.finished).slice(0, CHART_PROJECTS);
  const key = busiest.map((p) => p.slug).join(',');
  const trends = useResource(
    () => Promise.all(busiest.map((p) => api.get<Trends>(`${projectPath(p.slug)}/trends`, { window: props.window }).then((t) => ({ p, t })))),
    // Read again with every new summary (the live stream reloads it), or the charts stood still under the figures.
    [key, props.window, props.h],
  );
  return (
    <Loaded resource={trends}>
      {(list) => {
        const first = list[0]?.t;
        if (!first) return null;
        const sum = (f: (x: TrendPoint) => number) => first.points.map((_, i) => list.reduce((n, { t }) => n + (t.points[i] ? f(t.points[i]!) : 0), 0));
        const runtime: Series[] = list
          .filter(({ t }) => t.points.some((x) => x.runtime_p95_ms !== null))
          .slice(0, RUNTIME_LINES)
          .map(({ p, t }, n) => ({ label: p.name, tone: LINE_TONES[n % LINE_TONES.length]!, values: t.points.map((x) => x.runtime_p95_ms) }));
        return (
          <>
            <TrendCharts
              data={{
                times: first.points.map((x) => x.t),
                bucketSeconds: first.bucket_seconds,
                finished: sum((x) => x.finished),
                failed: sum((x) => x.failed),
                succeeded: sum((x) => x.succeeded),
                runtime,
                // Every project's statistics are kept alike.
                kept: { partial: first.partial, kept_since: first.kept_since },
              }}
              scope=", all projects"
              runtimeTitle="Run time p95 by project"
              testIds="home-"
            />
            {props.h.projects.length > CHART_PROJECTS && (
              <p class="muted small">{`The charts sum the ${CHART_PROJECTS} projects that finished the most tasks.`}</p>
            )}
          </>
        );
      }}
    </Loaded>
  );
}

export function HomePage() {
  const window = useWindow();
  const home = useResource(() => api.get<HomeSummary>('/home', { window }), [window]);
  useLive('*', ['task', 'agent', 'command'], () => home.reload(), { throttleMs: 5000 });
  return (
    <>
      <PageHeader title="Home" lead={`Every project you can open, over the ${WINDOW_LABEL[window]}.`} actions={<WindowPicker value={window} />} />
      <Loaded resource={home}>
        {(h) =>
          h.projects.length === 0 ? (
            <Section title="Projects">
              <Empty title="No projects yet">
                <p>
                  {projects.value.length === 0 ? 'Ask a project admin to invite you, or ' : ''}
                  see the <a href="/projects">projects</a>.
                </p>
              </Empty>
            </Section>
          ) : (
            <div class="stack">
              <Section title="At a glance">
                <Totals h={h} />
                <KeptNote kept={h} testId="home-partial" />
              </Section>
              <Section title="Needs attention">
                <AttentionList items={h.attention} showProject empty="Nothing needs attention" />
              </Section>
              <Section title="Projects">
                <Table
                  columns={['Project', 'Health', 'Finished', 'Failed', 'Failure rate', 'p95', 'Agents', 'Workers', 'Stuck', 'Attention', 'Last activity']}
                >
                  {h.projects.map((p) => projectRow(p, window))}
                </Table>
              </Section>
              <Section title="Trends">
                <HomeCharts h={h} window={window} />
              </Section>
            </div>
          )
        }
      </Loaded>
    </>
  );
}
