// /projects/:slug/schedules/:schedule_id: one schedule's definition and state, its next five runs in UTC, the
// project's time zone and the schedule's own (DST transitions flagged), run now and enable/disable for
// operators, the history of its fires (scheduled for, fired at, status, latency, error, the task it
// submitted) and its misfires. The page refreshes itself every few seconds while a fire is under way.
import { api } from '../../api/client.ts';
import type { Schedule, ScheduleFire, ScheduleUpcoming } from '../../api/types.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, BackLink, Empty, Facts, Loaded, Section, Time } from '../../ui/bits.tsx';
import { jsonLine } from '../../ui/json.tsx';
import { Table } from '../../ui/table.tsx';
import { Misfires, ScheduleControls, ScheduleState, scheduleHref, schedulesPath, timing } from './schedules.tsx';
import { roleAtLeast, type ProjectPageProps } from './sections.ts';
import { taskHref } from './task-link.ts';

const OPEN = new Set(['buffered', 'pending', 'dispatched']);
const TONE: Record<string, 'ok' | 'bad' | 'warn' | 'info' | 'muted'> = {
  succeeded: 'ok',
  failed: 'bad',
  timeout: 'bad',
  buffer_expired: 'warn',
  buffered: 'warn',
  pending: 'info',
  dispatched: 'info',
};

function FireRow(props: { slug: string; engine: string; f: ScheduleFire }) {
  const f = props.f;
  return (
    <tr key={f.id} data-testid="fire-row">
      <td>
        <code>{f.scheduled_for}</code>
      </td>
      <td>
        <Time iso={f.fired_at} />
      </td>
      <td>
        <code>{f.action === 'schedule.trigger_now' ? 'run now' : 'scheduled'}</code>
      </td>
      <td>
        <Badge tone={TONE[f.status] ?? 'muted'}>{f.status.replace('_', ' ')}</Badge>
      </td>
      <td>{f.latency_ms === null ? <span class="muted">-</span> : `${f.latency_ms} ms`}</td>
      <td>{f.task_id ? <a href={taskHref(props.slug, { engine: props.engine, task_id: f.task_id })}>{f.task_id}</a> : <span class="muted">-</span>}</td>
      <td>
        {f.error_code ? (
          <span class="text-bad">
            {f.error_code}
            {f.error_message ? `: ${f.error_message}` : ''}
          </span>
        ) : f.command_id ? (
          <a href={`/projects/${props.slug}/commands/${f.command_id}`}>command</a>
        ) : (
          '-'
        )}
      </td>
    </tr>
  );
}

function Upcoming(props: { data: ScheduleUpcoming; s: Schedule }) {
  const u = props.data.schedules[0];
  const project = props.data.project_timezone;
  const own = props.s.timezone;
  if (!u || u.runs.length === 0) {
    return (
      <Empty title="No next run known">
        <p>{props.s.kind === 'clocked' ? 'A clocked schedule runs once; its time has passed.' : 'Its timing cannot be computed here (the scheduler reports it).'}</p>
      </Empty>
    );
  }
  const zones = ['UTC', project, ...(own !== project && own !== 'UTC' ? [own] : [])];
  return (
    <Table columns={['#', ...zones.map((z) => (z === 'UTC' ? 'UTC' : z === project ? `${z} (project)` : `${z} (schedule)`)), 'DST']}>
      {u.runs.map((r, i) => (
        <tr key={r.at} data-testid="upcoming-row">
          <td>{i + 1}</td>
          {zones.map((z) => {
            const t = r.zones.find((x) => x.zone === z);
            return (
              <td key={z}>
                {t ? (
                  <>
                    <code style={{ whiteSpace: 'nowrap' }}>{t.local.endsWith(':00') ? t.local.slice(0, 16) : t.local}</code>{' '}
                    <span class="muted small">{t.offset}</span>
                  </>
                ) : (
                  '-'
                )}
              </td>
            );
          })}
          <td>
            {r.dst_transition ? (
              r.zones
                .filter((z) => z.dst_change)
                .map((z) => (
                  <div key={z.zone}>
                    <Badge tone="warn">{`DST: ${z.zone.split('/').pop()!.replaceAll('_', ' ')} ${z.dst_change}`}</Badge>
                  </div>
                ))
            ) : (
              <span class="muted">-</span>
            )}
          </td>
        </tr>
      ))}
    </Table>
  );
}

export function ScheduleDetail({ project, params }: ProjectPageProps) {
  const slug = project.slug;
  const id = params.schedule_id ?? '';
  const base = `${schedulesPath(slug)}/${encodeURIComponent(id)}`;
  const schedule = useResource(() => api.get<Schedule>(base), [base]);
  const fires = useResource(() => api.get<ScheduleFire[]>(`${base}/fires`, { limit: '50' }), [base]);
  const upcoming = useResource(() => api.get<ScheduleUpcoming>(`${base}/upcoming`, { count: '5' }), [base]);
  const reloadAll = async () => {
    await Promise.all([schedule.reload(), fires.reload(), upcoming.reload()]);
  };
  usePoll(fires.reload, 2000, (fires.data ?? []).some((f) => OPEN.has(f.status)));
  usePoll(reloadAll, 15_000, true);
  return (
    <div class="stack">
      <BackLink href={`/projects/${slug}/schedules`}>All schedules</BackLink>
      <Loaded resource={schedule}>
        {(s) => (
          <>
            <Section title={`Schedule ${s.name}`} actions={roleAtLeast(project.role, 'operator') ? <ScheduleControls slug={slug} s={s} onDone={() => void reloadAll()} /> : undefined}>
              <Facts
                items={[
                  ['State', <ScheduleState s={s} />, 'schedule-state'],
                  ['Task', <code>{s.task_name}</code>],
                  ['Engine', <code>{s.engine}</code>],
                  ['Scheduler', <code>{s.scheduler}</code>],
                  ['Timing', <code>{timing(s)}</code>],
                  ['Time zone', s.timezone],
                  s.queue !== null && ['Queue', <code>{s.queue}</code>],
                  ['Arguments', <code>{jsonLine(s.args)}</code>],
                  Object.keys(s.kwargs).length > 0 && ['Keyword arguments', <code>{jsonLine(s.kwargs)}</code>],
                  ['Missed runs', s.catch_up.replaceAll('_', ' ')],
                  ['Last run', <Time iso={s.last_run_at} />],
                  ['Next run', <Time iso={s.next_run_at} empty="-" />],
                  ['Runs', String(s.total_runs)],
                  s.consecutive_failures > 0 && ['Failed in a row', String(s.consecutive_failures)],
                  s.misfired_at !== null && ['Misfired', <Time iso={s.misfired_at} />],
                  ['Source', <code>{s.source}</code>],
                  ['Schedule id', <code>{s.id}</code>],
                ]}
              />
            </Section>
            <Section title="Next five runs">
              <Loaded resource={upcoming}>{(u) => <Upcoming data={u} s={s} />}</Loaded>
            </Section>
            <Section title="Fire history" actions={<button type="button" class="secondary" onClick={() => void fires.reload()}>Refresh</button>}>
              <Loaded resource={fires}>
                {(list) =>
                  list.length === 0 ? (
                    <Empty title="No fires yet">
                      <p>Each run svc fires and each "Run now" is listed here with its outcome, latency and error.</p>
                    </Empty>
                  ) : (
                    <Table columns={['Scheduled for', 'Fired', 'Kind', 'Status', 'Latency', 'Task', 'Error']}>
                      {list.map((f) => (
                        <FireRow key={f.id} slug={slug} engine={s.engine} f={f} />
                      ))}
                    </Table>
                  )
                }
              </Loaded>
            </Section>
            <Misfires slug={slug} scheduleId={s.id} />
          </>
        )}
      </Loaded>
    </div>
  );
}

export { scheduleHref };
