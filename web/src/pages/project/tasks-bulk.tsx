// The task list's bulk actions (operators; a chunk of its own, see tasks.tsx): the bar over the selected rows
// (retry them as a bulk job, delete them from svc for project admins), "retry every task matching" the list's
// search and filters (and "delete every task matching" for project admins) when no row is selected, the
// confirmations, and the jobs started here with their progress.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { BulkDeleteResult, BulkFilter, BulkJob, Project, TaskListItem } from '../../api/types.ts';
import { plural, thousands } from '../../lib/format.ts';
import { idempotent, newIdempotencyKey } from '../../lib/idempotency.ts';
import { ConfirmDialog } from '../../ui/bits.tsx';
import { BulkJobPanel, startRetryJob } from './bulk-job.tsx';
import { projectPath, TASK_FILTERS } from './requests.ts';

/** A bulk retry or delete by selection takes at most this many task ids (the filter's task_ids). */
const MAX_SELECTED = 1000;

/** The bulk-job filter of a selection: the task ids, with the engine when they share one. */
function selectionFilter(rows: TaskListItem[]): BulkFilter {
  const engines = new Set(rows.map((r) => r.engine));
  return { task_ids: rows.map((r) => r.task_id), ...(engines.size === 1 ? { engine: rows[0]!.engine } : {}) };
}

/** The bulk filter of the list's search and filters (a bulk filter has every one of them, src/bulk/filter.ts);
 * null for the unfiltered list. */
function listFilter(query: Record<string, string>): BulkFilter | null {
  const f = Object.fromEntries(TASK_FILTERS.filter((k) => query[k]).map((k) => [k, query[k]!]));
  return Object.keys(f).length > 0 ? (f as BulkFilter) : null;
}

/** What a whole-filter action acts on, in words. */
const matchingWhat = (f: BulkFilter): string => (f.q ? (Object.keys(f).length > 1 ? 'the search and filters' : 'the search') : 'the filters');

type Pending =
  | { kind: 'retry'; rows: TaskListItem[] }
  | { kind: 'delete'; rows: TaskListItem[] }
  | { kind: 'retry-all'; filter: BulkFilter }
  | { kind: 'delete-all'; filter: BulkFilter };

/** The selection's actions, the confirmations they open, and the jobs they started. */
export function BulkActions(props: {
  project: Project;
  selected: TaskListItem[];
  clear: () => void;
  /** The list's query (the address's), for "retry/delete every task matching". */
  query: Record<string, string>;
  onDeleted: () => Promise<void>;
}) {
  const { project, selected } = props;
  const matching = listFilter(props.query);
  const [pending, setPending] = useState<Pending | null>(null);
  const [key, setKey] = useState('');
  const [jobs, setJobs] = useState<BulkJob[]>([]);
  const [deleted, setDeleted] = useState<{ result: BulkDeleteResult; byFilter: boolean } | null>(null);
  const admin = project.role === 'admin';
  const open = (p: Pending) => {
    setKey(newIdempotencyKey());
    setPending(p);
  };
  const tooMany = selected.length > MAX_SELECTED;
  const confirm = async () => {
    if (!pending) return;
    if (pending.kind === 'delete' || pending.kind === 'delete-all') {
      const filter = pending.kind === 'delete' ? selectionFilter(pending.rows) : pending.filter;
      const r = await api.post<BulkDeleteResult>(`${projectPath(project.slug)}/tasks/bulk-delete`, { filter }, idempotent(key));
      setDeleted({ result: r, byFilter: pending.kind === 'delete-all' });
      props.clear();
      await props.onDeleted();
      return;
    }
    const job = await startRetryJob(project.slug, pending.kind === 'retry' ? selectionFilter(pending.rows) : pending.filter, key);
    setJobs((j) => [job, ...j.filter((x) => x.id !== job.id)]);
    if (pending.kind === 'retry') props.clear();
  };
  const count = pending && 'rows' in pending ? plural(pending.rows.length, 'task') : '';
  const what = pending && 'filter' in pending ? matchingWhat(pending.filter) : '';
  return (
    <>
      {(selected.length > 0 || matching) && (
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
          ) : (
            matching && (
              <>
                <span class="muted small">Select rows for bulk actions, or</span>
                <button type="button" class="secondary small" onClick={() => open({ kind: 'retry-all', filter: matching })}>
                  {`Retry every task matching ${matchingWhat(matching)}…`}
                </button>
                {admin && (
                  <button type="button" class="danger small" onClick={() => open({ kind: 'delete-all', filter: matching })}>
                    {`Delete every task matching ${matchingWhat(matching)}…`}
                  </button>
                )}
              </>
            )
          )}
        </div>
      )}
      {deleted && (
        <div class="notice ok" role="status">
          <p>
            {`Deleted ${plural(deleted.result.deleted_count, 'task')} and ${plural(deleted.result.events_deleted, 'event')} from svc.`}
            {deleted.result.truncated &&
              (deleted.byFilter ? ' More matched than one request deletes: delete every task matching again for the rest.' : ' More matched than one request deletes: select the rest and delete again.')}{' '}
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
          pending?.kind === 'delete'
            ? `Delete ${count} from svc?`
            : pending?.kind === 'delete-all'
              ? `Delete every task matching ${what} from svc?`
              : pending?.kind === 'retry'
                ? `Retry ${count}?`
                : `Retry every task matching ${what}?`
        }
        confirm={pending?.kind === 'delete' || pending?.kind === 'delete-all' ? 'Delete tasks' : 'Start bulk retry'}
        danger={pending?.kind === 'delete' || pending?.kind === 'delete-all'}
        onConfirm={confirm}
        onClose={() => setPending(null)}
      >
        {pending?.kind === 'delete' || pending?.kind === 'delete-all' ? (
          <>
            <p>
              svc forgets these tasks and their events; an audit row records it. The engines are not touched: a task still
              queued or running goes on, and reappears here if its agent reports it again.
            </p>
            {pending.kind === 'delete-all' && (
              <p>
                {`Every task ${what} match${what === 'the search' ? 'es' : ''} goes, not only the rows shown (as many as one request deletes, 10,000 unless the service is set otherwise; oldest first).`}
              </p>
            )}
          </>
        ) : (
          <>
            <p>
              A bulk retry job asks the agents to run each task again with its original arguments, a few at a time; its
              progress shows on this page and on the Bulk jobs page, and it goes on if you leave.
            </p>
            {pending?.kind === 'retry-all' && (
              <p>{`The tasks are every one ${what} match${what === 'the search' ? 'es' : ''} when the job starts, not only the rows shown (as many as one job takes, 10,000 unless the service is set otherwise; oldest first); later ones do not join.`}</p>
            )}
          </>
        )}
      </ConfirmDialog>
    </>
  );
}

