// Queries of bulk jobs and their items. Item transitions are conditional
// updates on the expected state, so a coordinator that lost its lease midway
// and the one that took over never both move an item.
import { and, asc, desc, eq, gt, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { bulkJobItems, bulkJobs, on, type BulkItemRow, type BulkItemStatus, type BulkJobRow, type BulkJobStatus } from './tables.ts';

const ROWS_PER_INSERT = 500;

export async function insertJob(ex: Executor, job: BulkJobRow, items: BulkItemRow[]): Promise<void> {
  await ex.q.insert(on(ex, bulkJobs)).values(job);
  const t = on(ex, bulkJobItems);
  for (let i = 0; i < items.length; i += ROWS_PER_INSERT) await ex.q.insert(t).values(items.slice(i, i + ROWS_PER_INSERT));
}

export async function jobById(ex: Executor, id: string): Promise<BulkJobRow | null> {
  const t = on(ex, bulkJobs);
  return (await ex.q.select().from(t).where(eq(t.id, id)))[0] ?? null;
}

/** Newest first, keyset on (created_at, id). */
export async function jobsPage(ex: Executor, projectId: string, opts: { status?: BulkJobStatus; before?: { createdAt: string; id: string }; limit: number }): Promise<BulkJobRow[]> {
  const t = on(ex, bulkJobs);
  const conds = [eq(t.project_id, projectId)];
  if (opts.status) conds.push(eq(t.status, opts.status));
  if (opts.before) conds.push(or(lt(t.created_at, opts.before.createdAt), and(eq(t.created_at, opts.before.createdAt), lt(t.id, opts.before.id)))!);
  return ex.q.select().from(t).where(and(...conds)).orderBy(desc(t.created_at), desc(t.id)).limit(opts.limit);
}

/** Jobs not finished yet (running, or aborted with retries still in flight), oldest first. */
export async function openJobs(ex: Executor): Promise<BulkJobRow[]> {
  const t = on(ex, bulkJobs);
  return ex.q.select().from(t).where(isNull(t.finished_at)).orderBy(asc(t.created_at));
}

/** Items of a job by status: how many of each. */
export async function itemCounts(ex: Executor, jobIds: string[]): Promise<Map<string, Partial<Record<BulkItemStatus, number>>>> {
  const out = new Map<string, Partial<Record<BulkItemStatus, number>>>();
  if (jobIds.length === 0) return out;
  const t = on(ex, bulkJobItems);
  const rows = await ex.q
    .select({ job_id: t.job_id, status: t.status, n: sql<number>`count(*)` })
    .from(t)
    .where(inArray(t.job_id, jobIds))
    .groupBy(t.job_id, t.status);
  for (const r of rows) {
    const counts = out.get(r.job_id) ?? {};
    counts[r.status] = Number(r.n);
    out.set(r.job_id, counts);
  }
  return out;
}

export async function itemsPage(ex: Executor, jobId: string, opts: { status?: BulkItemStatus; afterSeq?: number; limit: number }): Promise<BulkItemRow[]> {
  const t = on(ex, bulkJobItems);
  const conds = [eq(t.job_id, jobId)];
  if (opts.status) conds.push(eq(t.status, opts.status));
  if (opts.afterSeq !== undefined) conds.push(gt(t.seq, opts.afterSeq));
  return ex.q.select().from(t).where(and(...conds)).orderBy(asc(t.seq)).limit(opts.limit);
}

/** queued -> issued with its command; false when the item was no longer queued. */
export async function markIssued(ex: Executor, jobId: string, seq: number, commandId: string, now: string): Promise<boolean> {
  const t = on(ex, bulkJobItems);
  const rows = await ex.q
    .update(t)
    .set({ status: 'issued', command_id: commandId, issued_at: now })
    .where(and(eq(t.job_id, jobId), eq(t.seq, seq), eq(t.status, 'queued')))
    .returning({ seq: t.seq });
  return rows.length === 1;
}

export interface Settled {
  seq: number;
  status: 'succeeded' | 'failed';
  result: Record<string, unknown> | null;
  error: string | null;
}

const ENDED = ['completed', 'failed', 'timeout', 'cancelled', 'buffer_expired'];

/** Issued items whose command has ended, with the command's outcome. */
export async function endedItems(ex: Executor, jobId: string, limit: number): Promise<Settled[]> {
  const rows = await ex.query<{ seq: number; status: string; result: unknown; error: string | null }>(
    `SELECT i.seq AS seq, c.status AS status, c.result AS result, c.error AS error FROM bulk_job_items i JOIN commands c ON c.id = i.command_id
     WHERE i.job_id = ? AND i.status = 'issued' AND c.status IN (${ENDED.map(() => '?').join(', ')}) ORDER BY i.seq LIMIT ?`,
    [jobId, ...ENDED, limit],
  );
  return rows.map((r) => {
    const result = typeof r.result === 'string' ? (JSON.parse(r.result) as Record<string, unknown>) : ((r.result as Record<string, unknown> | null) ?? null);
    return { seq: Number(r.seq), status: r.status === 'completed' ? 'succeeded' : 'failed', result, error: r.status === 'completed' ? null : (r.error ?? r.status) };
  });
}

/** issued -> succeeded | failed; false when it had already moved. */
export async function settleItem(ex: Executor, jobId: string, s: Settled, now: string): Promise<boolean> {
  const t = on(ex, bulkJobItems);
  const rows = await ex.q
    .update(t)
    .set({ status: s.status, result: s.result, error: s.error, finished_at: now })
    .where(and(eq(t.job_id, jobId), eq(t.seq, s.seq), eq(t.status, 'issued')))
    .returning({ seq: t.seq });
  return rows.length === 1;
}

/** Every queued item of the job -> skipped with `reason`; how many. */
export async function skipQueued(ex: Executor, jobId: string, reason: string, now: string): Promise<number> {
  const t = on(ex, bulkJobItems);
  const rows = await ex.q
    .update(t)
    .set({ status: 'skipped', error: reason, finished_at: now })
    .where(and(eq(t.job_id, jobId), eq(t.status, 'queued')))
    .returning({ seq: t.seq });
  return rows.length;
}

export async function updateJob(ex: Executor, id: string, changes: Partial<BulkJobRow>, onlyIfOpen = true): Promise<BulkJobRow | null> {
  const t = on(ex, bulkJobs);
  const rows = await ex.q
    .update(t)
    .set(changes)
    .where(onlyIfOpen ? and(eq(t.id, id), isNull(t.finished_at)) : eq(t.id, id))
    .returning();
  return rows[0] ?? null;
}
