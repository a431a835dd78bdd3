// The task list's bulk actions (operators; a chunk of its own, see tasks.tsx): the bar over the selected rows
// (retry them as a bulk job, delete them from svc for project admins), "retry every task matching the filters"
// when a job's filter can say them, the confirmations, and the jobs started here with their progress.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { BulkDeleteResult, BulkFilter, BulkJob, Project, TaskListItem } from '../../api/types.ts';
import { plural, thousands } from '../../lib/format.ts';
import { idempotent, newIdempotencyKey } from '../../lib/idempotency.ts';
import { ConfirmDialog } from '../../ui/bits.tsx';
import { BulkJobPanel, startRetryJob } from './bulk-job.tsx';
import { projectPath } from './requests.ts';

/** A bulk retry or delete by selection takes at most this many task ids (the filter's task_ids). */
const MAX_SELECTED = 1000;
/** The filter fields a bulk job's filter has too (src/bulk/filter.ts): no search, no priority. */
const BULK_FIELDS = ['state', 'engine', 'name', 'queue', 'worker', 'since', 'until'] as const;

/** The bulk-job filter of a selection: the task ids, with the engine when they share one. */
function selectionFilter(rows: TaskListItem[]): BulkFilter {
  const engines = new Set(rows.map((r) => r.engine));
  return { task_ids: rows.map((r) => r.task_id), ...(engines.size === 1 ? { engine: rows[0]!.engine } : {}) };
}

/** The bulk-job filter of the list's filter, when a job can express it (no search, no priority). */
function listFilter(query: Record<string, string>): BulkFilter | null {
  if (query.q || query.priority) return null;
  const f = Object.fromEntries(BULK_FIELDS.filter((k) => query[k]).map((k) => [k, query[k]!]));
  return Object.keys(f).length > 0 ? (f as BulkFilter) : null;
}

type Pending = { kind: 'retry'; rows: TaskListItem[] } | { kind: 'delete'; rows: TaskListItem[] } | { kind: 'retry-all'; filter: BulkFilter };

/** The selection's actions, the confirmations they open, and the jobs they started. */
export function BulkActions(props: {
  project: Project;
  selected: TaskListItem[];
  clear: () => void;
  /** The list's query (the address's), for "retry every task matching". */
  query: Record<string, string>;
  onDeleted: () => Promise<void>;
}) {
  const { project, selected } = props;
  const matching = listFilter(props.query);
  // A search or a priority filter has no bulk-job form: said, where the button would be.
  const unmatchable = !matching && Boolean(props.query.q || props.query.priority);
  const [pending, setPending] = useState<Pending | null>(null);
  const [key, setKey] = useState('');
  const [jobs, setJobs] = useState<BulkJob[]>([]);
  const [deleted, setDeleted] = useState<BulkDeleteResult | null>(null);
  const admin = project.role === 'admin';
  const open = (p: Pending) => {
    setKey(newIdempotencyKey());
    setPending(p);
  };
  const tooMany = selected.length > MAX_SELECTED;
  const confirm = async () => {
    if (!pending) return;
    if (pending.kind === 'delete') {
      const r = await api.post<BulkDeleteResult>(`${projectPath(project.slug)}/tasks/bulk-delete`, { filter: selectionFilter(pending.rows) }, idempotent(key));
      setDeleted(r);
      props.clear();
      await props.onDeleted();
      return;
    }
    const job = await startRetryJob(project.slug, pending.kind === 'retry' ? selectionFilter(pending.rows) : pending.filter, key);
    setJobs((j) => [job, ...j.filter((x) => x.id !== job.id)]);
    if (pending.kind === 'retry') props.clear();
  };
  const count = pending && pending.kind !== 'retry-all' ? plural(pending.rows.length, 'task') : '';
  return (
    <>
      {(selected.length > 0 || matching || unmatchable) && (
        <div class="bulk-bar" role="region" aria-label="Bulk actions">
          {selected.length > 0 ? (
            <>
              <strong role="status">{`${plural(selected.length, 'task')} selected`}</strong>
              <button type="button" class="primary small" disabled={tooMany} onClick={() => open({ kind: 'retry', rows: selected })}>
                Retry selected
              </button>
              {admin && (
                <button type="button" class="danger small" disabled={tooMany} onClick={() => open({ kind: 'delete', rows: selected })}>
                  Delete selected…
                </button>
              )}
              <button type="button" class="link small" onClick={props.clear}>
                Clear selection
              </button>
              {tooMany && <span class="small text-bad">{`At most ${thousands(MAX_SELECTED)} at a time.`}</span>}
            </>
          ) : matching ? (
            <>
              <span class="muted small">Select rows for bulk actions, or</span>
              <button type="button" class="secondary small" onClick={() => open({ kind: 'retry-all', filter: matching })}>
                Retry every task matching the filters…
              </button>
            </>
          ) : (
            <span class="muted small" data-testid="bulk-unmatchable">
              Select rows for bulk actions. A search or a priority filter cannot be retried as a whole: select its rows, or filter by state, name, queue, worker or time.
            </span>
          )}
        </div>
      )}
      {deleted && (
        <div class="notice ok" role="status">
          <p>
            {`Deleted ${plural(deleted.deleted_count, 'task')} and ${plural(deleted.events_deleted, 'event')} from svc.`}
            {deleted.truncated && ' More matched than one request deletes: select the rest and delete again.'}{' '}
            <button type="button" class="link small" onClick={() => setDeleted(null)}>
              Dismiss
            </button>
          </p>
        </div>
      )}
      {jobs.map((job) => (
        <BulkJobPanel key={job.id} project={project} job={job} onDismiss={() => setJobs((j) => j.filter((x) => x.id !== job.id))} />
      ))}
      <ConfirmDialog
        open={pending !== null}
        title={
          pending?.kind === 'delete' ? `Delete ${count} from svc?` : pending?.kind === 'retry' ? `Retry ${count}?` : 'Retry every task matching the filters?'
        }
        confirm={pending?.kind === 'delete' ? 'Delete tasks' : 'Start bulk retry'}
        danger={pending?.kind === 'delete'}
        onConfirm={confirm}
        onClose={() => setPending(null)}
      >
        {pending?.kind === 'delete' ? (
          <p>
            svc forgets these tasks and their events; an audit row records it. The engines are not touched: a task still
            queued or running goes on, and reappears here if its agent reports it again.
          </p>
        ) : (
          <>
            <p>
              A bulk retry job asks the agents to run each task again with its original arguments, a few at a time; its
              progress shows on this page and on the Bulk jobs page, and it goes on if you leave.
            </p>
            {pending?.kind === 'retry-all' && (
              <p>The tasks are those the filters match when the job starts (as many as one job takes, 10,000 unless the service is set otherwise; oldest first); later ones do not join.</p>
            )}
          </>
        )}
      </ConfirmDialog>
    </>
  );
}

