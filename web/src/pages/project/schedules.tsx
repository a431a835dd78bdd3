// /projects/:slug/schedules: the project's schedules (svc's own and those its scheduler agents report), each
// with its next five runs in UTC and the project's time zone (a DST transition between runs flagged), run now
// and enable/disable for operators, and the misfires detected lately. The project's time zone is set here by
// project admins.
import { useEffect, useState } from 'preact/hooks';
import { api, asApiError, call, type ApiError } from '../../api/client.ts';
import type { ProjectScheduleTimezone, Schedule, ScheduleControl, ScheduleMisfireList, SchedulePage, ScheduleUpcoming } from '../../api/types.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, Empty, Loaded, Section, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';
import { Table } from '../../ui/table.tsx';
import { projectPath } from './requests.ts';
import { roleAtLeast, type ProjectPageProps } from './sections.ts';

export type UpcomingRuns = ScheduleUpcoming['schedules'][number]['runs'];

export const schedulesPath = (slug: string): string => `${projectPath(slug)}/schedules`;
export const scheduleHref = (slug: string, id: string): string => `/projects/${encodeURIComponent(slug)}/schedules/${id}`;

/** Enabled, paused by the circuit breaker, disabled; misfired when marked. */
export function ScheduleState(props: { s: Schedule }) {
  const s = props.s;
  return (
    <>
      {s.is_enabled ? <Badge tone="ok">enabled</Badge> : s.paused_by === 'circuit_breaker' ? <Badge tone="bad">paused by circuit breaker</Badge> : <Badge tone="muted">disabled</Badge>}
      {s.misfired_at && (
        <>
          {' '}
          <Badge tone="warn">misfired</Badge>
        </>
      )}
    </>
  );
}

/** The timing in a few words: `cron 0 9 * * * (Europe/Berlin)`, `every 30 s`, `once at …`, `sunrise at 52.5, 13.4`. */
export function timing(s: Pick<Schedule, 'kind' | 'expression' | 'timezone'>): string {
  if (s.kind === 'interval') return `every ${s.expression} s`;
  if (s.kind === 'clocked') return `once at ${s.expression}`;
  if (s.kind === 'solar') return `solar ${s.expression}`;
  return `cron ${s.expression}${s.timezone && s.timezone !== 'UTC' ? ` (${s.timezone})` : ''}`;
}

/** A run in UTC and the project's zone (to the minute; seconds when not zero); a DST change since the previous
 * run is flagged. */
export function RunTimes(props: { run: UpcomingRuns[number] }) {
  const [utc, project] = props.run.zones;
  const changes = props.run.zones.filter((z) => z.dst_change);
  const short = (local: string) => (local.endsWith(':00') ? local.slice(0, 16) : local);
  return (
    <span class="run-times" data-testid="upcoming-run" title={props.run.zones.map((z) => `${z.local} ${z.zone} (${z.offset})`).join('\n')}>
      <span>{utc ? `${short(utc.local)} UTC` : props.run.at}</span>
      {project && project.zone !== 'UTC' && (
        <span class="muted">
          {' · '}
          {short(project.local)} <span aria-label={project.zone}>{project.offset}</span>
        </span>
      )}
      {changes.length > 0 && (
        <>
          {' '}
          <Badge tone="warn">{`DST ${changes.map((z) => z.dst_change).join(', ')}`}</Badge>
        </>
      )}
    </span>
  );
}

function NextRuns(props: { runs: UpcomingRuns | undefined; enabled: boolean }) {
  if (!props.runs) return <span class="muted">…</span>;
  if (props.runs.length === 0) return <span class="muted">{props.enabled ? 'none known' : '-'}</span>;
  return (
    <ol class="next-runs small" aria-label="Next runs" style={{ margin: 0, paddingLeft: "1.2em" }}>
      {props.runs.map((r) => (
        <li key={r.at}>
          <RunTimes run={r} />
        </li>
      ))}
    </ol>
  );
}

/** Run now and enable/disable, for operators; `onDone` reloads what the caller shows. */
export function ScheduleControls(props: { slug: string; s: Schedule; onDone: (r: ScheduleControl) => void; small?: boolean }) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const act = async (what: 'trigger' | 'enable' | 'disable') => {
    setBusy(what);
    setError(null);
    setNote(null);
    try {
      const r = await api.post<ScheduleControl>(`${schedulesPath(props.slug)}/${props.s.id}/${what}`);
      setNote(what === 'trigger' ? `Fired now${r.fire ? ` (${r.fire.status})` : ''}.` : what === 'enable' ? 'Enabled.' : 'Disabled.');
      props.onDone(r);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(null);
    }
  };
  const cls = `secondary${props.small ? ' small' : ''}`;
  return (
    <div>
      <div class="page-actions">
        <button type="button" class={cls} disabled={busy !== null} aria-label={`Run ${props.s.name} now`} onClick={() => void act('trigger')}>
          {busy === 'trigger' ? 'Running…' : 'Run now'}
        </button>
        {props.s.is_enabled ? (
          <button type="button" class={cls} disabled={busy !== null} aria-label={`Disable ${props.s.name}`} onClick={() => void act('disable')}>
            {busy === 'disable' ? 'Disabling…' : 'Disable'}
          </button>
        ) : (
          <button type="button" class={cls} disabled={busy !== null} aria-label={`Enable ${props.s.name}`} onClick={() => void act('enable')}>
            {busy === 'enable' ? 'Enabling…' : 'Enable'}
          </button>
        )}
      </div>
      {note && (
        <span class="muted small" role="status">
          {note}
        </span>
      )}
      <ErrorNotice error={error} />
    </div>
  );
}

/** The project's time zone, and for project admins a way to change it. */
function ProjectZone(props: { slug: string; zone: string; canChange: boolean; onChanged: () => void }) {
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(props.zone);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => setValue(props.zone), [props.zone]);
  if (!editing) {
    return (
      <p>
        Runs are shown in UTC and in the project's time zone, <strong data-testid="project-zone">{props.zone}</strong>; a change of a zone's UTC offset
        between two runs (daylight saving time) is flagged.{' '}
        {props.canChange && (
          <button type="button" class="secondary small" onClick={() => setEditing(true)}>
            Change time zone
          </button>
        )}
      </p>
    );
  }
  return (
    <form
      class="filters"
      aria-label="Project time zone"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          await call<ProjectScheduleTimezone>('PUT', `${schedulesPath(props.slug)}/timezone`, { body: { timezone: value.trim() } });
          setEditing(false);
          props.onChanged();
        } catch (err) {
          setError(asApiError(err));
        }
      }}
    >
      <div class="field">
        <label for="project-zone">Project time zone (IANA name)</label>
        <input id="project-zone" value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} placeholder="Europe/Berlin" />
      </div>
      <div class="page-actions">
        <button type="submit" class="primary">
          Save
        </button>
        <button type="button" class="secondary" onClick={() => setEditing(false)}>
          Cancel
        </button>
      </div>
      <ErrorNotice error={error} />
    </form>
  );
}

export function Misfires(props: { slug: string; scheduleId?: string }) {
  const misfires = useResource(
    () => api.get<ScheduleMisfireList>(`${schedulesPath(props.slug)}/misfires`, { limit: '100', ...(props.scheduleId ? { schedule_id: props.scheduleId } : {}) }),
    [props.slug, props.scheduleId],
  );
  return (
    <Section title="Misfires" actions={<button type="button" class="secondary" onClick={() => void misfires.reload()}>Refresh</button>}>
      <Loaded resource={misfires}>
        {({ misfires: rows }) => {
          if (rows.length === 0) {
            return (
              <Empty title="No misfires">
                <p>A schedule whose run is later than the grace (SVC_SCHEDULER_MISFIRE_GRACE_SECONDS) without firing is listed here, and notifies schedule.misfired.</p>
              </Empty>
            );
          }
          return (
            <Table columns={['Detected', ...(props.scheduleId ? [] : ['Schedule']), 'Expected at', 'Lateness', 'Scheduler']}>
              {rows.map((m) => (
                <tr key={m.id}>
                  <td>
                    <Time iso={m.detected_at} />
                  </td>
                  {!props.scheduleId && (
                    <td>
                      <a href={scheduleHref(props.slug, m.schedule_id)}>{m.name}</a>
                    </td>
                  )}
                  <td>
                    <code>{m.expected_at}</code>
                  </td>
                  <td>{`${Math.round(m.lateness_seconds)} s (grace ${m.grace_seconds} s)`}</td>
                  <td>
                    <code>{m.scheduler}</code>
                  </td>
                </tr>
              ))}
            </Table>
          );
        }}
      </Loaded>
    </Section>
  );
}

export function ProjectSchedules({ project }: ProjectPageProps) {
  const slug = project.slug;
  const operator = roleAtLeast(project.role, 'operator');
  const paged = usePaged((cursor) => api.get<SchedulePage>(schedulesPath(slug), cursor ? { cursor } : {}), [slug]);
  const zone = useResource(() => api.get<ProjectScheduleTimezone>(`${schedulesPath(slug)}/timezone`), [slug]);
  const [upcoming, setUpcoming] = useState<Record<string, UpcomingRuns>>({});
  const ids = paged.items.map((s) => `${s.id}:${s.updated_at}:${s.next_run_at}`).join(',');
  const loadUpcoming = async () => {
    if (paged.items.length === 0) return;
    try {
      // At most 100 ids a request (the route's limit): a list grown by "Load more" asks in chunks.
      const chunks: string[][] = [];
      for (let i = 0; i < paged.items.length; i += 100) chunks.push(paged.items.slice(i, i + 100).map((s) => s.id));
      const answers = await Promise.all(chunks.map((c) => api.get<ScheduleUpcoming>(`${schedulesPath(slug)}/upcoming`, { count: '5', ids: c.join(',') })));
      setUpcoming(Object.fromEntries(answers.flatMap((r) => r.schedules.map((u) => [u.schedule_id, u.runs]))));
    } catch {
      setUpcoming({});
    }
  };
  useEffect(() => void loadUpcoming(), [ids, zone.data?.timezone]);
  const reload = async () => {
    await paged.reload();
  };
  return (
    <div class="stack">
      <Loaded resource={zone}>{(z) => <ProjectZone slug={slug} zone={z.timezone} canChange={roleAtLeast(project.role, 'admin')} onChanged={() => void zone.reload()} />}</Loaded>
      <PagedSection
        title="Schedules"
        paged={paged}
        what="schedule"
        orderNote="by name"
        columns={['Name and task', 'Timing and scheduler', 'State', `Next five runs (UTC · ${zone.data?.timezone ?? 'project zone'})`, 'Last run', ...(operator ? ['Actions'] : [])]}
        empty={
          <Empty title="No schedules yet">
            <p>
              Schedules appear here when a scheduler agent (Celery beat, rq-scheduler, APScheduler…) reports them, when they are imported, or when
              they are added for svc's own scheduler (<code>svc scheduler schedules add</code>).
            </p>
          </Empty>
        }
        row={(s: Schedule) => (
          <tr key={s.id} data-testid="schedule-row">
            <td>
              <a href={scheduleHref(slug, s.id)}>{s.name}</a>
              <div class="small">
                <code>{s.task_name}</code> <span class="muted">{s.engine}</span>
              </div>
            </td>
            <td>
              <code>{timing(s)}</code>
              <div class="small muted">{s.scheduler}</div>
            </td>
            <td>
              <ScheduleState s={s} />
            </td>
            <td>
              <NextRuns runs={upcoming[s.id]} enabled={s.is_enabled} />
            </td>
            <td>
              <Time iso={s.last_run_at} />
              <div class="small muted">{`${s.total_runs} run${s.total_runs === 1 ? '' : 's'}`}</div>
            </td>
            {operator && (
              <td>
                <ScheduleControls slug={slug} s={s} small onDone={() => void reload()} />
              </td>
            )}
          </tr>
        )}
      />
      <Misfires slug={slug} />
    </div>
  );
}
