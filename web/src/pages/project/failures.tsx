// /projects/:slug/failures: failures over a picked window grouped by exception type and normalised message (GET
// /failure-groups), most first: counts, first and last seen, the task names they hit, a sparkline; a group's
// failed tasks on request, and "Retry this group" (operators): a bulk retry job whose filter is the group's key
// and state=failure, so the server freezes the group's tasks that are still failed (one retried and succeeded
// since is left out) however many there are.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, asApiError } from '../../api/client.ts';
import type { BulkJob, FailedTaskPage, FailureGroup, FailureGroups, Project } from '../../api/types.ts';
import { plural, thousands } from '../../lib/format.ts';
import { newIdempotencyKey } from '../../lib/idempotency.ts';
import { useLive } from '../../lib/live.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { useResource } from '../../lib/use-resource.ts';
import { ConfirmDialog, Empty, Loaded, RefreshButton, Section, Time } from '../../ui/bits.tsx';
import { Sparkline } from '../../ui/charts.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import { Table } from '../../ui/table.tsx';
import { KeptNote, useWindow, WINDOW_LABEL, WindowPicker } from '../../ui/window-picker.tsx';
import type { TaskState } from '../../api/types.ts';
import { BulkJobPanel, startRetryJob } from './bulk-job.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath } from './requests.ts';
import { taskHref } from './task-link.ts';

const groupsPath = (slug: string) => `${projectPath(slug)}/failure-groups`;

function GroupTasks(props: { slug: string; group: FailureGroup; window: string }) {
  const paged = usePaged(
    (cursor) => api.get<FailedTaskPage>(`${groupsPath(props.slug)}/${props.group.group_key}/tasks`, { window: props.window, cursor, limit: 50 }),
    [props.slug, props.group.group_key, props.window],
  );
  if (!paged.loaded) return <p class="muted">Loading…</p>;
  return (
    <div class="group-tasks">
      <ErrorNotice error={paged.error} />
      {paged.items.length === 0 ? (
        <p class="muted">No failed task of this group is stored any more (tasks older than the retention are pruned).</p>
      ) : (
        <Table columns={['Task', 'Failed', 'State now', 'Queue', 'Worker', 'Exception']}>
          {paged.items.map((t) => (
            <tr key={`${t.engine}:${t.task_id}`}>
              <td>
                <a href={taskHref(props.slug, t)}>{t.task_name}</a>
                <div class="muted small">
                  <code>{t.task_id}</code>
                </div>
              </td>
              <td>{Time({ iso: t.failed_at })}</td>
              <td>{t.state ? TaskStateBadge({ state: t.state as TaskState }) : <span class="muted">pruned</span>}</td>
              <td>{t.queue ?? '-'}</td>
              <td>{t.worker_name ?? '-'}</td>
              <td class="small">{t.exception ?? '-'}</td>
            </tr>
          ))}
        </Table>
      )}
      {paged.hasMore && (
        <button type="button" class="secondary small" onClick={() => void paged.more()} disabled={paged.loadingMore}>
          {paged.loadingMore ? 'Loading…' : 'More failed tasks'}
        </button>
      )}
    </div>
  );
}

function groupRows(props: {
  project: Project;
  g: FailureGroup;
  window: string;
  bucket: string;
  open: boolean;
  toggle: () => void;
  onRetry: () => void;
  jobs: BulkJob[];
  dismiss: (id: string) => void;
}) {
  const { project, g } = props;
  const operator = project.role !== 'viewer';
  return [
    <tr key={g.group_key} data-testid={`group-${g.group_key}`}>
      <td>
        <strong>{g.exception_type}</strong>
        <div>
          <code class="wrap" title={`As reported: ${g.sample_message}`}>
            {g.message || '(no message)'}
          </code>
        </div>
      </td>
      <td>
        <strong>{thousands(g.failures)}</strong>
        <div class="muted small">{`${thousands(g.failures_total)} in all`}</div>
      </td>
      <td>
        <Sparkline values={g.series} label={`Failures per ${props.bucket}, oldest first: ${g.series.join(', ')}`} />
      </td>
      {/* Last and first seen in one column: beside the message, the task names and the buttons, two columns would
          widen the table past a laptop's page. */}
      <td>
        <div>{Time({ iso: g.last_seen })}</div>
        <div class="muted small">first {Time({ iso: g.first_seen })}</div>
      </td>
      <td class="small">
        {g.task_names.map((t) => (
          <div key={t.task_name}>
            <a href={`/projects/${project.slug}/tasks?${new URLSearchParams({ name: t.task_name, state: 'failure' })}`}>{t.task_name}</a>
            <span class="muted">{` ${thousands(t.failures)}`}</span>
          </div>
        ))}
      </td>
      <td>
        <div class="cell-actions">
          <button type="button" class="secondary small" aria-expanded={props.open} onClick={props.toggle}>
            {props.open ? 'Hide tasks' : 'Show tasks'}
          </button>
          {operator && (
            <button type="button" class="primary small" onClick={props.onRetry} aria-label={`Retry this group: ${g.exception_type}`}>
              Retry this group
            </button>
          )}
        </div>
      </td>
    </tr>,
    (props.open || props.jobs.length > 0) && (
      <tr key={`${g.group_key}-more`} class="expanded">
        <td colSpan={6}>
          {props.jobs.map((j) => (
            <BulkJobPanel key={j.id} project={project} job={j} title={`Retry of ${g.exception_type}`} onDismiss={() => props.dismiss(j.id)} />
          ))}
          {props.open && <GroupTasks slug={project.slug} group={g} window={props.window} />}
        </td>
      </tr>
    ),
  ];
}

export function ProjectFailures({ project }: ProjectPageProps) {
  const window = useWindow();
  const { query } = useLocation();
  const taskName = query.task_name || undefined;
  const groups = useResource(
    () => api.get<FailureGroups>(groupsPath(project.slug), { window, task_name: taskName, limit: 100 }),
    [project.slug, window, taskName],
  );
  useLive(project.slug, ['task'], () => groups.reload(), { throttleMs: 5000 });
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [jobs, setJobs] = useState<Record<string, BulkJob[]>>({});
  const [retrying, setRetrying] = useState<FailureGroup | null>(null);
  const [key, setKey] = useState('');
  const retry = async () => {
    const g = retrying!;
    // Narrowed like the page: only the task name it shows the group's failures of.
    const filter = { failure_group: g.group_key, state: 'failure' as const, ...(taskName ? { task_name: taskName } : {}) };
    const job = await startRetryJob(project.slug, filter, key).catch((e: unknown) => {
      // The server's "no stored task matches the filter" in this page's words.
      if (asApiError(e).code === 'no_match') throw new Error('No task of this group is still failed: each was retried, deleted or pruned since.');
      throw e;
    });
    setJobs((cur) => ({ ...cur, [g.group_key]: [job, ...(cur[g.group_key] ?? [])] }));
  };
  return (
    <div class="stack">
      <Section
        title="Failure groups"
        actions={
          <div class="page-actions">
            <WindowPicker value={window} />
            <RefreshButton onRefresh={groups.reload} busy={groups.loading} />
          </div>
        }
      >
        {taskName && (
          <p class="notice info">
            {'Only failures of '}
            <code>{taskName}</code>. <a href={`/projects/${project.slug}/failures?window=${window}`}>Show every task</a>
          </p>
        )}
        <Loaded resource={groups}>
          {(r) =>
            r.groups.length === 0 ? (
              <>
                <Empty title={`No failures in the ${WINDOW_LABEL[window]}`}>
                  <p>
                    Failed tasks are grouped here by exception and message. Pick a longer window to look further back, or see the{' '}
                    <a href={`/projects/${project.slug}/tasks`}>tasks</a>.
                  </p>
                </Empty>
                <KeptNote kept={r} testId="failures-partial" />
              </>
            ) : (
              <>
                <p class="muted small">
                  {`${plural(r.total_failures, 'failure')} in ${plural(r.groups.length, 'group')} over the ${WINDOW_LABEL[window]}; numbers and dates in messages are folded (<n>, <uuid>, <time>…), so one cause is one group.`}
                </p>
                <KeptNote kept={r} testId="failures-partial" />
                <Table
                  columns={['Exception and message', 'Failures', `Per ${r.bucket}`, 'Last seen', 'Tasks', '']}
                >
                  {r.groups.map((g) =>
                    groupRows({
                      project,
                      g,
                      window,
                      bucket: r.bucket,
                      open: open.has(g.group_key),
                      toggle: () =>
                        setOpen((cur) => {
                          const next = new Set(cur);
                          if (next.has(g.group_key)) next.delete(g.group_key);
                          else next.add(g.group_key);
                          return next;
                        }),
                      onRetry: () => {
                        setKey(newIdempotencyKey());
                        setRetrying(g);
                      },
                      jobs: jobs[g.group_key] ?? [],
                      dismiss: (id) => setJobs((cur) => ({ ...cur, [g.group_key]: (cur[g.group_key] ?? []).filter((j) => j.id !== id) })),
                    }),
                  )}
                </Table>
              </>
            )
          }
        </Loaded>
      </Section>
      <ConfirmDialog
        open={retrying !== null}
        title="Retry this failure group?"
        confirm="Start bulk retry"
        onConfirm={retry}
        onClose={() => setRetrying(null)}
      >
        {retrying && (
          <>
            <p>
              <strong>{retrying.exception_type}</strong>: <code>{retrying.message}</code>
              {taskName && (
                <>
                  {', tasks of '}
                  <code>{taskName}</code> only
                </>
              )}
            </p>
            <p>
              {`A bulk retry job asks the agents to run again, with its original arguments, each task of this group that is still failed, oldest first, as many as one job takes (${thousands(retrying.failures_total)} failures recorded in this group, ${thousands(retrying.failures)} in the ${WINDOW_LABEL[window]}). Its progress shows here and on the Bulk jobs page.`}
            </p>
          </>
        )}
      </ConfirmDialog>
    </div>
  );
}
