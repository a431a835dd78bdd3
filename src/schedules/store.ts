// Queries of the schedules area's tables, for both dialects. State changes the
// background jobs race on (fire outcomes, misfire marks, stream epochs) are
// conditional updates, so two processes never both win one.
import { and, asc, desc, eq, gt, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { OPEN_FIRE_STATUSES, tablesOf, type FireRow, type FireStatus, type MisfireRow, type ScheduleRow, type StreamRow } from './tables.ts';

export type { FireRow, MisfireRow, ScheduleRow, StreamRow };

export async function scheduleById(ex: Executor, id: string): Promise<ScheduleRow | null> {
  const { schedules: s } = tablesOf(ex);
  return (await ex.q.select().from(s).where(eq(s.id, id)))[0] ?? null;
}

/** A page of a project's schedules by (name, id) after the cursor. */
export async function schedulesPage(ex: Executor, projectId: string, opts: { after?: { name: string; id: string }; scheduler?: string; limit: number }): Promise<ScheduleRow[]> {
  const { schedules: s } = tablesOf(ex);
  const conds = [eq(s.project_id, projectId)];
  if (opts.scheduler) conds.push(eq(s.scheduler, opts.scheduler));
  if (opts.after) conds.push(or(gt(s.name, opts.after.name), and(eq(s.name, opts.after.name), gt(s.id, opts.after.id)))!);
  return ex.q
    .select()
    .from(s)
    .where(and(...conds))
    .orderBy(asc(s.name), asc(s.id))
    .limit(opts.limit);
}

/** Every schedule of a project (optionally of one scheduler). */
export async function schedulesOf(ex: Executor, projectId: string, scheduler?: string): Promise<ScheduleRow[]> {
  const { schedules: s } = tablesOf(ex);
  const conds = [eq(s.project_id, projectId)];
  if (scheduler) conds.push(eq(s.scheduler, scheduler));
  return ex.q.select().from(s).where(and(...conds)).orderBy(asc(s.name), asc(s.id));
}

export async function insertSchedule(ex: Executor, row: ScheduleRow): Promise<void> {
  const { schedules: s } = tablesOf(ex);
  await ex.q.insert(s).values(row);
}

export async function updateSchedule(ex: Executor, id: string, set: Partial<ScheduleRow>): Promise<ScheduleRow | null> {
  const { schedules: s } = tablesOf(ex);
  return (await ex.q.update(s).set(set).where(eq(s.id, id)).returning())[0] ?? null;
}

export async function deleteSchedules(ex: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const { schedules: s } = tablesOf(ex);
  await ex.q.delete(s).where(inArray(s.id, ids));
}

/** Enabled schedules expected before `cutoff`, oldest expectation first. */
export async function dueSchedules(ex: Executor, cutoff: string, limit: number): Promise<ScheduleRow[]> {
  const { schedules: s } = tablesOf(ex);
  return ex.q
    .select()
    .from(s)
    .where(and(eq(s.is_enabled, true), lt(s.next_run_at, cutoff)))
    .orderBy(asc(s.next_run_at))
    .limit(limit);
}

/** Sets the misfire mark unless another process set it first; false then. */
export async function markMisfired(ex: Executor, id: string, expected: string, at: string, next: string | null): Promise<boolean> {
  const { schedules: s } = tablesOf(ex);
  const rows = await ex.q
    .update(s)
    .set({ misfired_at: at, next_run_at: next })
    .where(and(eq(s.id, id), isNull(s.misfired_at), eq(s.next_run_at, expected)))
    .returning({ id: s.id });
  return rows.length === 1;
}

/** Moves the expectation of a schedule seen alive (clears a misfire mark) if it is still `expected`. */
export async function reanchor(ex: Executor, id: string, expected: string | null, next: string | null): Promise<void> {
  const { schedules: s } = tablesOf(ex);
  await ex.q
    .update(s)
    .set({ next_run_at: next, misfired_at: null })
    .where(and(eq(s.id, id), expected === null ? isNull(s.next_run_at) : eq(s.next_run_at, expected)));
}

/** Misfire-marked enabled schedules (their scheduler may be back). */
export async function misfiredSchedules(ex: Executor, limit: number): Promise<ScheduleRow[]> {
  const { schedules: s } = tablesOf(ex);
  return ex.q
    .select()
    .from(s)
    .where(and(eq(s.is_enabled, true), sql`${s.misfired_at} IS NOT NULL`))
    .limit(limit);
}

// --- fires ----------------------------------------------------------------------

export async function insertFire(ex: Executor, row: FireRow): Promise<void> {
  const { scheduleFires: f } = tablesOf(ex);
  await ex.q.insert(f).values(row);
}

export async function firesOf(ex: Executor, scheduleId: string, limit: number): Promise<FireRow[]> {
  const { scheduleFires: f } = tablesOf(ex);
  return ex.q.select().from(f).where(eq(f.schedule_id, scheduleId)).orderBy(desc(f.fired_at), desc(f.id)).limit(limit);
}

export async function fireById(ex: Executor, id: string): Promise<FireRow | null> {
  const { scheduleFires: f } = tablesOf(ex);
  return (await ex.q.select().from(f).where(eq(f.id, id)))[0] ?? null;
}

/** Open fires (buffered, pending, dispatched) with their command's state. */
export async function openFires(
  ex: Executor,
  limit: number,
  commandIds?: string[],
): Promise<{ fire: FireRow; command: { status: string; error: string | null; result: unknown; acked_at: string | null; completed_at: string | null } | null }[]> {
  const { scheduleFires: f } = tablesOf(ex);
  const c = ex.t.commands;
  const conds = [inArray(f.status, [...OPEN_FIRE_STATUSES])];
  if (commandIds) conds.push(inArray(f.command_id, commandIds));
  const rows = await ex.q
    .select({ fire: f, status: c.status, error: c.error, result: c.result, acked_at: c.acked_at, completed_at: c.completed_at })
    .from(f)
    .leftJoin(c, eq(c.id, f.command_id))
    .where(and(...conds))
    .orderBy(asc(f.fired_at))
    .limit(limit);
  return rows.map((r) => ({
    fire: r.fire,
    command: r.status === null ? null : { status: r.status, error: r.error, result: r.result, acked_at: r.acked_at, completed_at: r.completed_at },
  }));
}

/** Moves a fire on from the status it was read in; false when another process already did. */
export async function advanceFire(ex: Executor, id: string, from: FireStatus, set: Partial<FireRow>): Promise<boolean> {
  const { scheduleFires: f } = tablesOf(ex);
  const rows = await ex.q.update(f).set(set).where(and(eq(f.id, id), eq(f.status, from))).returning({ id: f.id });
  return rows.length === 1;
}

/** Fires whose submitted task is one of `taskIds`. */
export async function firesOfTasks(ex: Executor, taskIds: string[]): Promise<FireRow[]> {
  if (taskIds.length === 0) return [];
  const { scheduleFires: f } = tablesOf(ex);
  return ex.q.select().from(f).where(inArray(f.task_id, taskIds));
}

/** The schedule's failed-fire streak after one more outcome; the row after the update. */
export async function countFireOutcome(ex: Executor, id: string, failed: boolean, at: string): Promise<ScheduleRow | null> {
  const { schedules: s } = tablesOf(ex);
  const set = failed
    ? { consecutive_failures: sql`${s.consecutive_failures} + 1` }
    : { consecutive_failures: 0, last_run_at: at, total_runs: sql`${s.total_runs} + 1`, misfired_at: null };
  return (await ex.q.update(s).set(set as unknown as Partial<ScheduleRow>).where(eq(s.id, id)).returning())[0] ?? null;
}

/** Pauses an enabled schedule for the circuit breaker; false when it was not enabled (or already paused). */
export async function tripBreaker(ex: Executor, id: string, at: string): Promise<boolean> {
  const { schedules: s } = tablesOf(ex);
  const rows = await ex.q
    .update(s)
    .set({ is_enabled: false, paused_by: 'circuit_breaker', updated_at: at })
    .where(and(eq(s.id, id), eq(s.is_enabled, true)))
    .returning({ id: s.id });
  return rows.length === 1;
}

export async function pruneFires(ex: Executor, cutoff: string): Promise<number> {
  const { scheduleFires: f, scheduleMisfires: m } = tablesOf(ex);
  const a = await ex.q.delete(f).where(lt(f.fired_at, cutoff)).returning({ id: f.id });
  const b = await ex.q.delete(m).where(lt(m.detected_at, cutoff)).returning({ id: m.id });
  return a.length + b.length;
}

// --- misfires -------------------------------------------------------------------

export async function insertMisfire(ex: Executor, row: MisfireRow): Promise<void> {
  const { scheduleMisfires: m } = tablesOf(ex);
  await ex.q.insert(m).values(row);
}

/** A project's misfires newest first, or one schedule's of them. */
export async function misfiresOf(ex: Executor, projectId: string, limit: number, scheduleId?: string): Promise<MisfireRow[]> {
  const { scheduleMisfires: m } = tablesOf(ex);
  const where = scheduleId === undefined ? eq(m.project_id, projectId) : and(eq(m.project_id, projectId), eq(m.schedule_id, scheduleId));
  return ex.q.select().from(m).where(where).orderBy(desc(m.detected_at), desc(m.id)).limit(limit);
}

// --- external-schedule streams and snapshot staging --------------------------------

export async function streamOf(ex: Executor, agentId: string, scheduler: string): Promise<StreamRow | null> {
  const { scheduleStreams: st } = tablesOf(ex);
  return (await ex.q.select().from(st).where(and(eq(st.agent_id, agentId), eq(st.scheduler, scheduler))))[0] ?? null;
}

/** Records a new epoch for (agent, scheduler) unless one was already activated for `connectKey`; the row when this caller won. */
export async function advanceStream(ex: Executor, row: StreamRow): Promise<StreamRow | null> {
  const { scheduleStreams: st } = tablesOf(ex);
  const rows = await ex.q
    .insert(st)
    .values(row)
    .onConflictDoUpdate({
      target: [st.agent_id, st.scheduler],
      set: {
        epoch_uuid: row.epoch_uuid,
        epoch_number: sql`${st.epoch_number} + 1`,
        adapter_instance_id: row.adapter_instance_id,
        connect_key: row.connect_key,
        command_id: null,
        last_sequence: 0,
        activated_at: row.activated_at,
      },
      setWhere: sql`${st.connect_key} <> ${row.connect_key}`,
    })
    .returning();
  return rows[0] ?? null;
}

export async function setStreamCommand(ex: Executor, agentId: string, scheduler: string, epoch: number, commandId: string): Promise<void> {
  const { scheduleStreams: st } = tablesOf(ex);
  await ex.q.update(st).set({ command_id: commandId }).where(and(eq(st.agent_id, agentId), eq(st.scheduler, scheduler), eq(st.epoch_number, epoch)));
}

/** Accepts projection `sequence` of the stream's current epoch if it is newer than the last one; false otherwise. */
export async function acceptSequence(ex: Executor, agentId: string, scheduler: string, streamId: string, epoch: number, sequence: number): Promise<boolean> {
  const { scheduleStreams: st } = tablesOf(ex);
  const rows = await ex.q
    .update(st)
    .set({ last_sequence: sequence })
    .where(and(eq(st.agent_id, agentId), eq(st.scheduler, scheduler), eq(st.stream_id, streamId), eq(st.epoch_number, epoch), lt(st.last_sequence, sequence)))
    .returning({ n: st.last_sequence });
  return rows.length === 1;
}

export async function stageFrame(ex: Executor, row: typeof import('./tables.ts').scheduleSnapshotFrames.sqlite.$inferSelect): Promise<void> {
  const { scheduleSnapshotFrames: fr } = tablesOf(ex);
  await ex.q.insert(fr).values(row).onConflictDoNothing();
}

export async function stagedFrames(ex: Executor, agentId: string, snapshotId: string) {
  const { scheduleSnapshotFrames: fr } = tablesOf(ex);
  return ex.q
    .select()
    .from(fr)
    .where(and(eq(fr.agent_id, agentId), eq(fr.snapshot_id, snapshotId)))
    .orderBy(asc(fr.frame_index));
}

/** Drops an assembled snapshot's frames, and any staged longer ago than `staleBefore`. */
export async function dropFrames(ex: Executor, agentId: string, snapshotId: string, staleBefore: string): Promise<void> {
  const { scheduleSnapshotFrames: fr } = tablesOf(ex);
  await ex.q.delete(fr).where(or(and(eq(fr.agent_id, agentId), eq(fr.snapshot_id, snapshotId)), lte(fr.received_at, staleBefore)));
}

// --- svc's own scheduler (own.ts) ------------------------------------------------------

/** Schedules a scheduler owns in active projects (all, or those of `projectIds`), with the project's slug. */
export async function ownedSchedules(ex: Executor, scheduler: string, projectIds: readonly string[] | null): Promise<(ScheduleRow & { project_slug: string })[]> {
  const { schedules: s } = tablesOf(ex);
  const p = ex.t.projects;
  const conds = [eq(s.scheduler, scheduler), eq(p.is_active, true)];
  if (projectIds) {
    if (projectIds.length === 0) return [];
    conds.push(inArray(s.project_id, [...projectIds]));
  }
  const rows = await ex.q
    .select({ s, slug: p.slug })
    .from(s)
    .innerJoin(p, eq(p.id, s.project_id))
    .where(and(...conds))
    .orderBy(asc(s.id));
  return rows.map((r) => ({ ...r.s, project_slug: r.slug }));
}

/** What changes whenever a scheduler's set of schedules or a definition changes: count, latest update, id sum. */
export async function ownedStamp(ex: Executor, scheduler: string): Promise<string> {
  const { schedules: s } = tablesOf(ex);
  const [row] = await ex.q
    .select({ n: sql<number>`count(*)`, latest: sql<string | null>`max(${s.updated_at})`, first: sql<string | null>`min(${s.id})`, last: sql<string | null>`max(${s.id})` })
    .from(s)
    .where(eq(s.scheduler, scheduler));
  return `${Number(row?.n ?? 0)}|${row?.latest ?? ''}|${row?.first ?? ''}|${row?.last ?? ''}`;
}

/** The fire of run `scheduledFor` of a schedule (schedule.fire rows only; trigger-now fires are not runs). */
export async function fireOfRun(ex: Executor, scheduleId: string, scheduledFor: string): Promise<FireRow | null> {
  const { scheduleFires: f } = tablesOf(ex);
  return (await ex.q.select().from(f).where(and(eq(f.schedule_id, scheduleId), eq(f.scheduled_for, scheduledFor), eq(f.action, 'schedule.fire'))).limit(1))[0] ?? null;
}

/** After run `firedFor`, the schedule's expectation moves to `next` unless it already points past that run. */
export async function advanceExpectation(ex: Executor, id: string, next: string | null, firedFor: string): Promise<void> {
  const { schedules: s } = tablesOf(ex);
  await ex.q
    .update(s)
    .set({ next_run_at: next })
    .where(and(eq(s.id, id), or(isNull(s.next_run_at), lte(s.next_run_at, firedFor))));
}

/** The time zone a project's schedule runs are shown in besides UTC (projects.timezone, migration 0015). */
export async function projectTimezone(ex: Executor, projectId: string): Promise<string> {
  const rows = await ex.all<{ timezone: string | null }>(sql`SELECT timezone FROM projects WHERE id = ${projectId}`);
  return rows[0]?.timezone || 'UTC';
}

export async function setProjectTimezone(ex: Executor, projectId: string, timezone: string): Promise<void> {
  await ex.run(sql`UPDATE projects SET timezone = ${timezone} WHERE id = ${projectId}`);
}

/** Moves schedules to another scheduler (svc projects rewrite-scheduler); the rows moved. */
export async function reassignSchedules(ex: Executor, ids: readonly string[], to: string, at: string, resetNext: boolean): Promise<number> {
  if (ids.length === 0) return 0;
  const { schedules: s } = tablesOf(ex);
  const set: Partial<ScheduleRow> = { scheduler: to, updated_at: at, agent_id: null, misfired_at: null };
  if (resetNext) set.next_run_at = null;
  const rows = await ex.q.update(s).set(set).where(inArray(s.id, [...ids])).returning({ id: s.id });
  return rows.length;
}
