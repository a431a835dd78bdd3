// Retention of stored tasks: finished tasks whose finished_at is older than
// SVC_TASK_RETENTION_DAYS go with their events; a task that is not finished
// never does, however old. Events of no task go by when they were received.
// One leader prunes, in small batches (one short transaction each) with a
// pause between them, so ingest, which shares SQLite's single writer, waits at
// most one batch (or one step of the walk). Rows are found by a keyset walk of the (project, created_at)
// index: a finished task was created no later than it finished, so nothing
// created after the cutoff can qualify and no index is added to the ingest path.
import { sql } from 'drizzle-orm';
import type { Db, Executor } from '../db/connect.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { logger } from '../lib/log.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';

const log = logger('tasks.retention');

/** Pause between batches: the writer is free for ingest in between. */
const PAUSE_MS = 5;
/** Rows of the walk read per step (finished or not), a few batches' worth. */
const SCAN_FACTOR = 4;

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Deletes the project's task rows `ids` that still pass `guard`, then their events; how many of each. */
export async function deleteTaskRows(ex: Executor, projectId: string, ids: string[], guard = '1 = 1', guardParams: unknown[] = []): Promise<{ tasks: number; events: number }> {
  if (ids.length === 0) return { tasks: 0, events: 0 };
  const gone = await ex.query<{ id: string }>(
    `DELETE FROM tasks WHERE project_id = ? AND id IN (${placeholders(ids.length)}) AND ${guard} RETURNING id`,
    [projectId, ...ids, ...guardParams],
  );
  const deleted = gone.map((r) => r.id);
  if (deleted.length === 0) return { tasks: 0, events: 0 };
  const events = await ex.query(`DELETE FROM events WHERE task_ref IN (${placeholders(deleted.length)}) RETURNING task_ref`, deleted);
  return { tasks: deleted.length, events: events.length };
}

export interface RetentionReport {
  tasks: number;
  events: number;
  cutoff: string | null;
}

/** Only finished tasks (terminal state, finished_at set) that finished before the cutoff. */
const FINISHED_BEFORE = 'state_tier = 1 AND finished_at IS NOT NULL AND finished_at < ?';

/** One pruning pass over every project; `stillLeader` is checked between batches. */
export async function retentionPass(ctx: Pick<AppContext, 'db' | 'config'>, stillLeader: () => boolean = () => true): Promise<RetentionReport> {
  const days = ctx.config.SVC_TASK_RETENTION_DAYS;
  if (days === 0) return { tasks: 0, events: 0, cutoff: null };
  const cutoff = isoMicros(nowMicros() - days * 86_400_000_000);
  const batch = ctx.config.SVC_TASK_RETENTION_BATCH_SIZE;
  const db = ctx.db;
  const report: RetentionReport = { tasks: 0, events: 0, cutoff };
  const projects = await db.all<{ id: string }>(sql`SELECT id FROM projects`);
  for (const { id: projectId } of projects) {
    let after: { created_at: string; id: string } | null = null;
    for (;;) {
      if (!stillLeader()) return report;
      const scanned: { id: string; created_at: string; finished_at: string | null; state_tier: number }[] = await db.query(
        `SELECT id, created_at, finished_at, state_tier FROM tasks WHERE project_id = ? AND created_at < ?${after ? ' AND (created_at > ? OR (created_at = ? AND id > ?))' : ''} ORDER BY created_at, id LIMIT ?`,
        after ? [projectId, cutoff, after.created_at, after.created_at, after.id, batch * SCAN_FACTOR] : [projectId, cutoff, batch * SCAN_FACTOR],
      );
      if (scanned.length === 0) break;
      const last = scanned[scanned.length - 1]!;
      after = { created_at: last.created_at, id: last.id };
      const due = scanned.filter((r) => Number(r.state_tier) === 1 && r.finished_at !== null && r.finished_at < cutoff).map((r) => r.id);
      for (let i = 0; i < due.length; i += batch) {
        const ids = due.slice(i, i + batch);
        const deleted = await db.tx((tx) => deleteTaskRows(tx, projectId, ids, FINISHED_BEFORE, [cutoff]));
        report.tasks += deleted.tasks;
        report.events += deleted.events;
        await pause();
      }
      if (scanned.length < batch * SCAN_FACTOR) break;
      // A step with nothing due still read a few batches' rows (old tasks that never finished are
      // read again on every pass): on SQLite those reads hold the event loop, so it gets a turn too.
      if (due.length === 0) await pause();
    }
  }
  report.events += await pruneUntaskedEvents(db, cutoff, batch, stillLeader);
  if (report.tasks > 0 || report.events > 0) log.info({ ...report }, 'pruned tasks and events past retention');
  return report;
}

const pause = () => new Promise<void>((r) => setTimeout(r, PAUSE_MS));

/** Events of no task received before the cutoff, a batch per transaction. */
async function pruneUntaskedEvents(db: Db, cutoff: string, batch: number, stillLeader: () => boolean): Promise<number> {
  let total = 0;
  while (stillLeader()) {
    const n = await db.tx(async (tx) => {
      const rows = await tx.query<{ id: string }>(
        'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE task_ref IS NULL AND received_at < ? ORDER BY received_at LIMIT ?) RETURNING id',
        [cutoff, batch],
      );
      return rows.length;
    });
    total += n;
    if (n < batch) break;
    await pause();
  }
  return total;
}

/** Starts the leader-run pruning (nothing when SVC_TASK_RETENTION_DAYS is 0). */
export function startTaskRetention(ctx: AppContext): void {
  if (ctx.config.SVC_TASK_RETENTION_DAYS === 0) return;
  const intervalMs = ctx.config.SVC_TASK_RETENTION_INTERVAL_SECONDS * 1000;
  const leaseMs = Math.max(intervalMs * 2, 60_000);
  every(
    ctx,
    'task-retention',
    intervalMs,
    async () => {
      if (!(await acquireLease(ctx.db, 'task-retention', leaseMs))) return;
      const started = Date.now();
      // The lease outlives any pass that keeps within it; a longer pass stops and the next one goes on.
      await retentionPass(ctx, () => Date.now() - started < leaseMs / 2);
    },
    Math.min(intervalMs, 60_000),
  );
}
