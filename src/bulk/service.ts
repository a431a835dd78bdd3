// Durable bulk jobs. A bulk retry freezes its filter's matches into items when
// it is created (one transaction with its audit row); a coordinator, run by
// one leader process at a time, then works them off: it issues a retry_task
// command per item with at most max_in_flight unanswered (and a project's jobs
// together at most SVC_BULK_RETRY_MAX_IN_FLIGHT), marking the item
// issued in the same transaction that stores the command (and keying the
// command by job and item), so a crash at any point neither loses an item nor
// retries a task twice; it records each command's outcome on its item. Abort
// skips what is still queued; retries already issued run to their answer.
import { Type, type Static } from '@sinclair/typebox';
import type { AgentRow } from '../agents/service.ts';
import type { Actor } from '../auth/actor.ts';
import { admit } from '../commands/admission.ts';
import { issueCommandIn } from '../commands/service.ts';
import type { Executor } from '../db/connect.ts';
import { ApiError, conflict, notFound, validationFailed } from '../http/errors.ts';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { nowIso } from '../lib/clock.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { matchTasks, TaskFilterSchema } from './filter.ts';
import { endedItems, insertJob, itemCounts, itemsPage, jobById, jobsPage, markIssued, openJobs, settleItem, skipQueued, updateJob } from './store.ts';
import type { BulkItemRow, BulkItemStatus, BulkJobRow, BulkJobStatus } from './tables.ts';

const log = logger('bulk');

export const BULK_JOB_STATUSES = ['running', 'completed', 'aborted', 'failed'] as const;
export const BULK_ITEM_STATUSES = ['queued', 'issued', 'succeeded', 'failed', 'skipped'] as const;
const lit = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));
export const BulkJobStatusSchema = lit(BULK_JOB_STATUSES);
export const BulkItemStatusSchema = lit(BULK_ITEM_STATUSES);

export const BulkProgress = Answer(
  {
    total: Type.Integer(),
    queued: Type.Integer({ description: 'not issued yet' }),
    in_flight: Type.Integer({ description: 'issued, not answered yet' }),
    issued: Type.Integer({ description: 'issued so far (in flight, succeeded or failed)' }),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    skipped: Type.Integer({ description: 'never issued (aborted, or the job failed)' }),
  },
  'BulkProgress',
);
export type BulkProgress = Static<typeof BulkProgress>;

export const BulkJobPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    kind: Type.Literal('retry'),
    status: BulkJobStatusSchema,
    filter: AnyObject,
    agent_id: Nullable(Uuid),
    created_by: Nullable(Type.String()),
    truncated: Type.Boolean({ description: 'the filter matched more tasks than the job took' }),
    max_in_flight: Type.Integer(),
    progress: BulkProgress,
    note: Nullable(Type.String({ description: 'why the job is waiting, when it is' })),
    error: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
    finished_at: Nullable(Timestamp),
  },
  'BulkJobPublic',
);
export type BulkJobPublic = Static<typeof BulkJobPublic>;

export const BulkJobPage = Answer({ items: Type.Array(BulkJobPublic), next_cursor: Nullable(Type.String()) }, 'BulkJobPage');
export type BulkJobPage = Static<typeof BulkJobPage>;

export const BulkItemPublic = Answer(
  {
    seq: Type.Integer(),
    engine: Type.String(),
    task_id: Type.String(),
    task_name: Nullable(Type.String()),
    status: BulkItemStatusSchema,
    command_id: Nullable(Uuid),
    result: Nullable(AnyObject),
    error: Nullable(Type.String()),
    issued_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
  },
  'BulkItemPublic',
);
export const BulkItemPage = Answer({ items: Type.Array(BulkItemPublic), next_cursor: Nullable(Type.String()) }, 'BulkItemPage');
export type BulkItemPage = Static<typeof BulkItemPage>;

export const CreateBulkJob = Type.Object(
  {
    kind: Type.Literal('retry'),
    filter: TaskFilterSchema,
    agent_id: Type.Optional(Uuid),
    max_tasks: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: 'at most this many of the matches (and never more than SVC_BULK_JOB_MAX_TASKS)' })),
    max_in_flight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'never more than SVC_BULK_RETRY_MAX_IN_FLIGHT' })),
  },
  { additionalProperties: false },
);
export type CreateBulkJob = Static<typeof CreateBulkJob>;

function progressOf(total: number, c: Partial<Record<BulkItemStatus, number>>): BulkProgress {
  const n = (s: BulkItemStatus) => c[s] ?? 0;
  return { total, queued: n('queued'), in_flight: n('issued'), issued: n('issued') + n('succeeded') + n('failed'), succeeded: n('succeeded'), failed: n('failed'), skipped: n('skipped') };
}

function toPublic(j: BulkJobRow, counts: Partial<Record<BulkItemStatus, number>>): BulkJobPublic {
  return {
    id: j.id,
    project_id: j.project_id,
    kind: j.kind,
    status: j.status,
    filter: j.filter as Record<string, unknown>,
    agent_id: j.agent_id,
    created_by: j.created_by,
    truncated: Boolean(j.truncated),
    max_in_flight: j.max_in_flight,
    progress: progressOf(j.total, counts),
    note: j.note,
    error: j.error,
    created_at: j.created_at,
    updated_at: j.updated_at,
    finished_at: j.finished_at,
  };
}

const withProgress = async (ex: Executor, jobs: BulkJobRow[]): Promise<BulkJobPublic[]> => {
  const counts = await itemCounts(ex, jobs.map((j) => j.id));
  return jobs.map((j) => toPublic(j, counts.get(j.id) ?? {}));
};

/** Creates a bulk retry: 409 when no agent could take the retries of an engine the matches run on, or
 * when nothing matches. The job starts at the coordinator's next pass. */
export async function createBulkJob(ctx: AppContext, projectId: string, input: CreateBulkJob, actor: Actor): Promise<BulkJobPublic> {
  const cap = Math.min(input.max_tasks ?? ctx.config.SVC_BULK_JOB_MAX_TASKS, ctx.config.SVC_BULK_JOB_MAX_TASKS);
  const matched = await matchTasks(ctx.db, projectId, input.filter, cap + 1);
  const truncated = matched.length > cap;
  const tasks = matched.slice(0, cap);
  if (tasks.length === 0) throw conflict('no stored task matches the filter', { filter: input.filter }, 'no_match');
  // Checked now, as a single retry is: the agent named (or an online one) must take each engine's retries.
  for (const engine of new Set(tasks.map((t) => t.engine))) {
    await admit(ctx.db, { projectId, action: 'retry_task', engine, agentId: input.agent_id ?? null });
  }
  const now = nowIso();
  const job: BulkJobRow = {
    id: crypto.randomUUID(),
    project_id: projectId,
    kind: 'retry',
    status: 'running',
    filter: input.filter,
    agent_id: input.agent_id ?? null,
    created_by: actor.user_id ?? null,
    api_key_id: actor.api_key_id ?? null,
    total: tasks.length,
    truncated,
    max_in_flight: Math.min(input.max_in_flight ?? ctx.config.SVC_BULK_RETRY_MAX_IN_FLIGHT, ctx.config.SVC_BULK_RETRY_MAX_IN_FLIGHT),
    note: null,
    error: null,
    created_at: now,
    updated_at: now,
    finished_at: null,
  };
  const items: BulkItemRow[] = tasks.map((t, i) => ({
    job_id: job.id,
    seq: i + 1,
    engine: t.engine,
    task_id: t.task_id,
    task_name: t.name,
    status: 'queued',
    command_id: null,
    result: null,
    error: null,
    issued_at: null,
    finished_at: null,
  }));
  await ctx.db.tx(async (tx) => {
    await insertJob(tx, job, items);
    await ctx.audit.append(tx, {
      ...actor,
      action: 'bulk_job.created',
      target_type: 'bulk_job',
      target_id: job.id,
      project_id: projectId,
      metadata: { kind: job.kind, filter: input.filter, total: job.total, truncated, agent_id: job.agent_id, max_in_flight: job.max_in_flight },
    });
  });
  return toPublic(job, { queued: items.length });
}

export async function listBulkJobs(ex: Executor, projectId: string, opts: { status?: BulkJobStatus; cursor?: string; limit?: number }): Promise<BulkJobPage> {
  const limit = opts.limit ?? 50;
  let before: { createdAt: string; id: string } | undefined;
  if (opts.cursor) {
    const [createdAt, id] = opts.cursor.split('|');
    if (!createdAt || !id) throw validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
    before = { createdAt, id };
  }
  const rows = await jobsPage(ex, projectId, { ...(opts.status ? { status: opts.status } : {}), ...(before ? { before } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: await withProgress(ex, page), next_cursor: rows.length > limit && last ? `${last.created_at}|${last.id}` : null };
}

async function jobOf(ex: Executor, projectId: string, id: string): Promise<BulkJobRow> {
  const job = await jobById(ex, id);
  if (!job || job.project_id !== projectId) throw notFound('bulk job');
  return job;
}

export async function getBulkJob(ex: Executor, projectId: string, id: string): Promise<BulkJobPublic> {
  return (await withProgress(ex, [await jobOf(ex, projectId, id)]))[0]!;
}

export async function bulkJobItems(ex: Executor, projectId: string, id: string, opts: { status?: BulkItemStatus; cursor?: string; limit?: number }): Promise<BulkItemPage> {
  await jobOf(ex, projectId, id);
  const limit = opts.limit ?? 100;
  let afterSeq: number | undefined;
  if (opts.cursor !== undefined) {
    afterSeq = Number(opts.cursor);
    if (!/^\d{1,9}$/.test(opts.cursor)) throw validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
  }
  const rows = await itemsPage(ex, id, { ...(opts.status ? { status: opts.status } : {}), ...(afterSeq !== undefined ? { afterSeq } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  return {
    items: page.map((r) => ({ ...r, result: r.result ?? null })),
    next_cursor: rows.length > limit ? String(page[page.length - 1]!.seq) : null,
  };
}

/** Aborts a running job: queued items are skipped at once; retries in flight still record their answers.
 * Aborting an aborted job answers it as it is; a finished one is 409. */
export async function abortBulkJob(ctx: AppContext, projectId: string, id: string, actor: Actor): Promise<BulkJobPublic> {
  await ctx.db.tx(async (tx) => {
    const job = await jobOf(tx, projectId, id);
    if (job.status === 'aborted') return;
    if (job.status !== 'running') throw conflict(`the job has ${job.status}`, { status: job.status }, 'job_finished');
    const now = nowIso();
    const skipped = await skipQueued(tx, id, 'aborted', now);
    await updateJob(tx, id, { status: 'aborted', updated_at: now, note: null });
    await ctx.audit.append(tx, { ...actor, action: 'bulk_job.aborted', target_type: 'bulk_job', target_id: id, project_id: projectId, metadata: { skipped } });
  });
  return getBulkJob(ctx.db, projectId, id);
}

// --- the coordinator ------------------------------------------------------------------

const SETTLE_BATCH = 500;

/** What one coordinator step did: items settled and issued. */
export interface StepResult {
  settled: number;
  issued: number;
  open: number;
}

/** The retry command of one item, as POST /commands/retry-task would issue it (by reference). */
const retryPayload = (item: BulkItemRow): Record<string, unknown> => ({
  engine: item.engine,
  task_id: item.task_id,
  task_name: item.task_name,
  args: null,
  kwargs: null,
  override_args: null,
  override_kwargs: null,
  eta_seconds: null,
  priority: null,
});

/** Records answered retries, finishes a job with nothing left, issues retries into free slots: the
 * job's own (max_in_flight) and, of those, no more than `room`, what the project's other jobs leave
 * (counted before this job's answers were recorded: each one recorded here frees a slot). */
async function advance(ctx: AppContext, job: BulkJobRow, room: number): Promise<{ settled: number; issued: number }> {
  let settled = 0;
  for (;;) {
    const ended = await endedItems(ctx.db, job.id, SETTLE_BATCH);
    if (ended.length === 0) break;
    const now = nowIso();
    settled += await ctx.db.tx(async (tx) => {
      let n = 0;
      for (const s of ended) if (await settleItem(tx, job.id, s, now)) n++;
      return n;
    });
    if (ended.length < SETTLE_BATCH) break;
  }
  const counts = (await itemCounts(ctx.db, [job.id])).get(job.id) ?? {};
  const queued = job.status === 'running' ? (counts.queued ?? 0) : 0;
  const inFlight = counts.issued ?? 0;
  if (queued === 0 && inFlight === 0) {
    await finish(ctx, job, job.status === 'running' ? 'completed' : job.status, counts);
    return { settled, issued: 0 };
  }
  const free = Math.min(job.max_in_flight - inFlight, room + settled);
  if (queued === 0) return { settled, issued: 0 };
  if (free <= 0) {
    // A job held back by the project's other jobs says so; one waiting on its own answers needs no note.
    await noteWaiting(ctx, job, job.max_in_flight > inFlight ? [`other bulk retries of this project hold all ${ctx.config.SVC_BULK_RETRY_MAX_IN_FLIGHT} slots`] : []);
    return { settled, issued: 0 };
  }
  const actor: Actor = { user_id: job.created_by, api_key_id: job.api_key_id, source_ip: null, user_agent: `svc bulk job ${job.id}` };
  const agents = new Map<string, AgentRow | ApiError>();
  const waiting: string[] = [];
  let issued = 0;
  for (const item of await itemsPage(ctx.db, job.id, { status: 'queued', limit: free })) {
    let agent = agents.get(item.engine);
    if (!agent) {
      agent = await admit(ctx.db, { projectId: job.project_id, action: 'retry_task', engine: item.engine, agentId: job.agent_id }).catch((e: unknown) => {
        if (e instanceof ApiError) return e;
        throw e;
      });
      agents.set(item.engine, agent);
    }
    if (agent instanceof ApiError) {
      if (agent.status === 404) {
        // The agent named was revoked: nothing can be issued any more.
        await fail(ctx, job, `the agent of this job is gone: ${agent.message}`);
        return { settled, issued };
      }
      waiting.push(agent.message);
      continue;
    }
    const target = agent;
    // The item is marked issued in the transaction that stores its command; the command's key
    // (bulk:<job>:<seq>) makes a second issue of the item return the first command. An item that
    // left the queue since the page was read (the job was aborted or failed meanwhile) takes its
    // command back with it: the transaction rolls back, and the pass ends there.
    const ok = await ctx.db
      .tx(async (tx) => {
        const cmd = await issueCommandIn(
          ctx,
          tx,
          {
            projectId: job.project_id,
            agentId: target.id,
            action: 'retry_task',
            targetType: 'task',
            targetId: `${item.engine}:${item.task_id}`,
            payload: retryPayload(item),
            idempotencyKey: `bulk:${job.id}:${item.seq}`,
          },
          actor,
          { audit: false },
        );
        if (!(await markIssued(tx, job.id, item.seq, cmd.id, cmd.issued_at))) throw new ItemGone();
        return true;
      })
      .catch((e: unknown) => (e instanceof ItemGone ? false : Promise.reject(e)));
    if (!ok) break;
    issued++;
  }
  await noteWaiting(ctx, job, waiting);
  return { settled, issued };
}

/** The job's note says what it waits for (none once it waits for nothing). */
async function noteWaiting(ctx: AppContext, job: BulkJobRow, waiting: string[]): Promise<void> {
  const note = waiting.length > 0 ? `waiting: ${[...new Set(waiting)].join('; ')}` : null;
  if (note === job.note) return;
  await ctx.db.tx((tx) => updateJob(tx, job.id, { note, updated_at: nowIso() }));
  job.note = note;
}

/** The item being issued is no longer queued (see advance). */
class ItemGone extends Error {}

async function finish(ctx: AppContext, job: BulkJobRow, status: BulkJobStatus, counts: Partial<Record<BulkItemStatus, number>>): Promise<void> {
  const now = nowIso();
  await ctx.db.tx(async (tx) => {
    const done = await updateJob(tx, job.id, { status, finished_at: now, updated_at: now, note: null });
    if (!done) return;
    await ctx.audit.append(tx, {
      user_id: null,
      source_ip: null,
      action: 'bulk_job.finished',
      target_type: 'bulk_job',
      target_id: job.id,
      project_id: job.project_id,
      metadata: { status, ...progressOf(job.total, counts) },
    });
  });
  log.info({ job_id: job.id, project_id: job.project_id, status, total: job.total }, 'bulk job finished');
}

async function fail(ctx: AppContext, job: BulkJobRow, error: string): Promise<void> {
  const now = nowIso();
  await ctx.db.tx(async (tx) => {
    await skipQueued(tx, job.id, error, now);
    await updateJob(tx, job.id, { status: 'failed', error, updated_at: now });
  });
  job.status = 'failed';
}

/** One pass over every open job, oldest first. A project's jobs together keep at most
 * SVC_BULK_RETRY_MAX_IN_FLIGHT retries unanswered (aborted jobs' included: those retries still run on
 * its workers), so starting a second job never doubles the load; the older job fills its slots first. */
export async function coordinatorStep(ctx: AppContext): Promise<StepResult> {
  const jobs = await openJobs(ctx.db);
  const counts = await itemCounts(ctx.db, jobs.map((j) => j.id));
  const busy = new Map<string, number>();
  for (const j of jobs) busy.set(j.project_id, (busy.get(j.project_id) ?? 0) + (counts.get(j.id)?.issued ?? 0));
  let settled = 0;
  let issued = 0;
  for (const job of jobs) {
    try {
      const before = busy.get(job.project_id)!;
      const r = await advance(ctx, job, ctx.config.SVC_BULK_RETRY_MAX_IN_FLIGHT - before);
      busy.set(job.project_id, before - r.settled + r.issued);
      settled += r.settled;
      issued += r.issued;
    } catch (e) {
      log.error({ job_id: job.id, err: (e as Error).message }, 'bulk job step failed');
    }
  }
  return { settled, issued, open: jobs.length };
}

/** Steps while there is work and time left in `budgetMs` (the coordinator's tick), pausing briefly
 * when every slot is in flight. */
export async function coordinate(ctx: AppContext, budgetMs: number, stillLeader: () => boolean = () => true): Promise<void> {
  const end = performance.now() + budgetMs;
  while (performance.now() < end && stillLeader()) {
    const r = await coordinatorStep(ctx);
    if (r.open === 0) return;
    if (r.settled === 0 && r.issued === 0) await Bun.sleep(25);
  }
}
