// /projects/:slug/bulk-jobs: the project's bulk retry jobs, newest first, with their progress (watched while any
// runs), abort for operators, and each job's tasks with their retry command and answer.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { BulkItem, BulkItemPage, BulkJob, BulkJobPage, Project } from '../../api/types.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { Badge, ConfirmDialog, Empty, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { jsonLine } from '../../ui/json.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';
import { Table } from '../../ui/table.tsx';
import { filterText, JobProgress, JobStatus } from './bulk-job.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath } from './requests.ts';
import { taskHref } from './task-link.ts';

const WATCH_MS = 2000;
const ITEM_TONE = { queued: 'muted', issued: 'info', succeeded: 'ok', failed: 'bad', skipped: 'warn' } as const;

function itemRow(slug: string, i: BulkItem) {
  return (
    <tr key={i.seq}>
      <td>{i.seq}</td>
      <td>
        <a href={taskHref(slug, i)}>{i.task_name ?? i.task_id}</a>
        <div class="muted small">
          <code>{i.task_id}</code>
        </div>
      </td>
      <td>{Badge({ tone: ITEM_TONE[i.status as keyof typeof ITEM_TONE] ?? 'muted', children: i.status })}</td>
      <td>{i.command_id ? <a href={`/projects/${slug}/commands/${i.command_id}`}>command</a> : <span class="muted">-</span>}</td>
      <td>{i.error ? <span class="text-bad">{i.error}</span> : i.result ? <code>{jsonLine(i.result)}</code> : <span class="muted">-</span>}</td>
    </tr>
  );
}

function Items(props: { slug: string; job: BulkJob }) {
  const paged = usePaged(
    (cursor) => api.get<BulkItemPage>(`${projectPath(props.slug)}/bulk-jobs/${props.job.id}/items`, { cursor, limit: 100 }),
    [props.slug, props.job.id, props.job.updated_at],
  );
  if (!paged.loaded) return <p class="muted">Loading…</p>;
  return (
    <>
      <ErrorNotice error={paged.error} />
      <Table columns={['#', 'Task', 'Status', 'Retry', 'Answer']}>{paged.items.map((i) => itemRow(props.slug, i))}</Table>
      {paged.hasMore && (
        <button type="button" class="secondary small" onClick={() => void paged.more()} disabled={paged.loadingMore}>
          {paged.loadingMore ? 'Loading…' : 'More tasks'}
        </button>
      )}
    </>
  );
}

function jobRows(project: Project, job: BulkJob, open: boolean, toggle: () => void, abort: () => void) {
  const operator = project.role !== 'viewer';
  return [
    <tr key={job.id}>
      <td>{Time({ iso: job.created_at })}</td>
      <td>{JobStatus({ job })}</td>
      <td class="small">
        {filterText(job.filter)}
        {job.note && job.status === 'running' && <div class="muted">{job.note}</div>}
        {job.error && <div class="text-bad">{job.error}</div>}
      </td>
      <td>{JobProgress({ job })}</td>
      <td>{Time({ iso: job.finished_at, empty: '-' })}</td>
      <td>
        <div class="cell-actions">
          <button type="button" class="secondary small" aria-expanded={open} onClick={toggle}>
            {open ? 'Hide tasks' : 'Tasks'}
          </button>
          {operator && job.status === 'running' && (
            <button type="button" class="danger small" onClick={abort}>
              Abort
            </button>
          )}
        </div>
      </td>
    </tr>,
    open && (
      <tr key={`${job.id}-items`} class="expanded">
        <td colSpan={6}>
          <Items slug={project.slug} job={job} />
        </td>
      </tr>
    ),
  ];
}

export function ProjectBulkJobs({ project }: ProjectPageProps) {
  const paged = usePaged((cursor) => api.get<BulkJobPage>(`${projectPath(project.slug)}/bulk-jobs`, { cursor, limit: 50 }), [project.slug]);
  usePoll(paged.reload, WATCH_MS, paged.items.some((j) => j.status === 'running'));
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [aborting, setAborting] = useState<BulkJob | null>(null);
  return (
    <div class="stack">
      <PagedSection
        title="Bulk jobs"
        paged={paged}
        what="job"
        columns={['Started', 'Status', 'Tasks chosen', 'Progress', 'Finished', '']}
        empty={
          <Empty title="No bulk jobs yet">
            <p>
              Operators start one from the <a href={`/projects/${project.slug}/tasks`}>tasks</a> (select rows, then "Retry
              selected") or from a <a href={`/projects/${project.slug}/failures`}>failure group</a>.
            </p>
          </Empty>
        }
        row={(job) =>
          jobRows(
            project,
            job,
            open.has(job.id),
            () =>
              setOpen((cur) => {
                const next = new Set(cur);
                if (next.has(job.id)) next.delete(job.id);
                else next.add(job.id);
                return next;
              }),
            () => setAborting(job),
          )
        }
      />
      <ConfirmDialog
        open={aborting !== null}
        title="Abort this bulk retry?"
        confirm="Abort job"
        danger
        onConfirm={async () => {
          await api.post<BulkJob>(`${projectPath(project.slug)}/bulk-jobs/${aborting!.id}/abort`);
          await paged.reload();
        }}
        onClose={() => setAborting(null)}
      >
        <p>Tasks not retried yet are skipped; retries already sent still record their answers.</p>
      </ConfirmDialog>
    </div>
  );
}
