// Bulk retry jobs in the pages that start them (the task list's selection, a failure group) and on the Bulk jobs
// page: starting one (POST /bulk-jobs under an Idempotency-Key), its progress as a bar and in words, watched
// until it has finished, aborting it, and the tasks whose retry failed.
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import type { BulkFilter, BulkItemPage, BulkJob, Project } from '../../api/types.ts';
import { idempotent } from '../../lib/idempotency.ts';
import { plural, thousands } from '../../lib/format.ts';
import { useLive } from '../../lib/live.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Badge, ConfirmButton, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { projectPath } from './requests.ts';
import { taskHref } from './task-link.ts';

const WATCH_MS = 1000;

export const startRetryJob = (slug: string, filter: BulkFilter, key: string): Promise<BulkJob> =>
  api.post<BulkJob>(`${projectPath(slug)}/bulk-jobs`, { kind: 'retry', filter }, idempotent(key));

const STATUS_TONE = { running: 'info', completed: 'ok', aborted: 'warn', failed: 'bad' } as const;

export const JobStatus = (props: { job: BulkJob }) => Badge({ tone: STATUS_TONE[props.job.status as keyof typeof STATUS_TONE] ?? 'muted', children: props.job.status });

/** The bar and the counts in words. */
export function JobProgress(props: { job: BulkJob }) {
  const p = props.job.progress;
  const done = p.succeeded + p.failed + p.skipped;
  const parts = [
    `${thousands(p.succeeded)} succeeded`,
    p.failed > 0 && `${thousands(p.failed)} failed`,
    p.in_flight > 0 && `${thousands(p.in_flight)} in flight`,
    p.queued > 0 && `${thousands(p.queued)} waiting`,
    p.skipped > 0 && `${thousands(p.skipped)} skipped`,
  ].filter(Boolean);
  return (
    <div class="job-progress">
      <progress max={Math.max(p.total, 1)} value={done} aria-label={`Retried ${done} of ${p.total}`} />
      <span class="small" data-testid="bulk-progress">
        {`${thousands(done)} of ${plural(p.total, 'task')} done: ${parts.join(', ')}.`}
      </span>
    </div>
  );
}

/** What a filter froze, in a few words (the task list's q is its search). */
export function filterText(filter: Record<string, unknown>): string {
  const ids = Array.isArray(filter.task_ids) ? filter.task_ids.length : 0;
  const rest = Object.entries(filter)
    .filter(([k]) => k !== 'task_ids')
    .map(([k, v]) => (k === 'q' ? `search “${String(v)}”` : `${k.replace(/_/g, ' ')} ${String(v)}`));
  return [ids > 0 ? plural(ids, 'chosen task') : '', ...rest].filter(Boolean).join(', ') || 'every task';
}

/** The tasks whose retry failed, once the job has finished. */
function FailedItems(props: { slug: string; job: BulkJob }) {
  const items = useResource(
    () => api.get<BulkItemPage>(`${projectPath(props.slug)}/bulk-jobs/${props.job.id}/items`, { status: 'failed', limit: 20 }),
    [props.slug, props.job.id],
  );
  if (items.error) return <ErrorNotice error={items.error} title="Why retries failed could not be read" />;
  if (!items.data || items.data.items.length === 0) return null;
  return (
    <details class="job-failed">
      <summary>{`Why ${plural(props.job.progress.failed, 'retry', 'retries')} failed`}</summary>
      <ul class="plain small">
        {items.data.items.map((i) => (
          <li key={i.seq}>
            <a href={taskHref(props.slug, i)}>{i.task_name ?? i.task_id}</a> <span class="text-bad">{i.error ?? 'failed'}</span>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** A job just started (or listed), watched until it has finished. */
export function BulkJobPanel(props: { project: Project; job: BulkJob; title?: string; onDismiss?: () => void }) {
  const { project } = props;
  const [job, setJob] = useState(props.job);
  // The last refresh's failure: the bar would stand still without a word otherwise.
  const [stale, setStale] = useState<ApiError | null>(null);
  const running = job.status === 'running';
  const refresh = async () => {
    try {
      setJob(await api.get<BulkJob>(`${projectPath(project.slug)}/bulk-jobs/${job.id}`));
      setStale(null);
    } catch (e) {
      setStale(asApiError(e));
    }
  };
  // Each retry is a command: their notices say the job moved; the poll covers a quiet stream.
  useLive(project.slug, ['command'], () => running && refresh(), { fallbackMs: 0 });
  usePoll(refresh, WATCH_MS, running);
  const operator = project.role !== 'viewer';
  return (
    <div class="bulk-job notice info" role="region" aria-label={props.title ?? 'Bulk retry'}>
      <p>
        <strong>{props.title ?? 'Bulk retry'}</strong> <JobStatus job={job} />{' '}
        <span class="muted small">
          started <Time iso={job.created_at} />
          {job.truncated && ' · more tasks matched than one job takes'}
        </span>
      </p>
      <JobProgress job={job} />
      {stale && running && <p class="small text-bad" role="status">{`The progress could not be refreshed (${stale.message}); trying again.`}</p>}
      {job.note && running && <p class="small muted">{job.note}</p>}
      {job.error && <p class="small text-bad">{job.error}</p>}
      {!running && job.progress.failed > 0 && <FailedItems slug={project.slug} job={job} />}
      <div class="actions">
        {operator && running && (
          <ConfirmButton
            label="Abort"
            small
            title="Abort this bulk retry?"
            confirm="Abort job"
            danger
            onConfirm={async () => setJob(await api.post<BulkJob>(`${projectPath(project.slug)}/bulk-jobs/${job.id}/abort`))}
          >
            <p>Tasks not retried yet are skipped; retries already sent still record their answers.</p>
          </ConfirmButton>
        )}
        <a class="small" href={`/projects/${project.slug}/bulk-jobs`}>
          All bulk jobs
        </a>
        {!running && props.onDismiss && (
          <button type="button" class="link small" onClick={props.onDismiss}>
            Dismiss
          </button>
        )}
      </div>
    </div>
  );
}
