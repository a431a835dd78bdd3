// The schedules area's rules for svc's own scheduler (`svc scheduler`), which
// reaches them through the scheduler endpoint (src/scheduler/endpoint.ts):
//   - the schedules it owns (scheduler `svc-scheduler`, active projects, the
//     projects its certificate is bound to) and a stamp that changes whenever
//     that set or a definition changes, so a scheduler re-reads only then;
//   - firing one run: issueFire() (buffering, history, outcomes, the circuit
//     breaker and misfires all apply as for any fire) in a transaction that
//     also moves the schedule's expectation past the run. A run is fired once:
//     schedule_fires has a unique index on (schedule_id, scheduled_for) for
//     schedule.fire rows (migration 0015), so when two scheduler processes
//     send the same run, the second transaction fails on it (or sees the row)
//     and is answered 409 already_fired, with nothing of it stored;
//   - the next runs the dashboard shows, in UTC and the project's time zone;
//   - `svc projects rewrite-scheduler`: moving schedules between schedulers
//     with a previewed manifest digest.
import { createHash } from 'node:crypto';
import type { Actor } from '../auth/actor.ts';
import type { Executor } from '../db/connect.ts';
import { ApiError, conflict, notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import { knownZone, nextRunAfter, upcomingRuns, type UpcomingRun } from './next-run.ts';
import { SVC_SCHEDULER, issueFire, scheduleOf, toFirePublic, toSchedulePublic } from './service.ts';
import type { FirePublic, SchedulePublic } from './schemas.ts';
import {
  advanceExpectation,
  fireOfRun,
  ownedSchedules,
  ownedStamp,
  projectTimezone,
  reassignSchedules,
  scheduleById,
  schedulesOf,
  setProjectTimezone,
  updateSchedule,
  type ScheduleRow,
} from './store.ts';

export type OwnedSchedule = SchedulePublic & { project_slug: string };

/** The projects a scheduler may reach: null for all. */
export type Scope = readonly string[] | null;

const inScope = (scope: Scope, projectId: string) => scope === null || scope.includes(projectId);

/** The stamp of the owned set (cheap): a scheduler compares it with the one it holds. */
export const ownedToken = (ex: Executor): Promise<string> => ownedStamp(ex, SVC_SCHEDULER);

/** Every schedule svc's scheduler owns within `scope` (enabled or not). */
export async function ownedList(ex: Executor, scope: Scope): Promise<OwnedSchedule[]> {
  return (await ownedSchedules(ex, SVC_SCHEDULER, scope)).map((r) => ({ ...toSchedulePublic(r), project_slug: r.project_slug }));
}

const isUniqueViolation = (e: unknown): boolean => {
  for (let c: any = e; c; c = c.cause) if (c.code === '23505' || c.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint|duplicate key/.test(String(c.message))) return true;
  return false;
};

const alreadyFired = (scheduleId: string, scheduledFor: string, fireId: string | null) =>
  conflict('this run of the schedule was already fired', { schedule_id: scheduleId, scheduled_for: scheduledFor, fire_id: fireId }, 'already_fired');

export interface FireRunResult {
  fire: FirePublic;
  /** The schedule's next expected run after this one. */
  next_run_at: string | null;
}

/** Fires run `scheduledFor` of svc-scheduler schedule `scheduleId` once. 404 outside the scope, 409
 * `not_svc_scheduler`, `schedule_disabled` or `already_fired`, 422 for a run too early (more than
 * SVC_SCHEDULER_GRPC_GRACE_SECONDS ahead) or older than the fire buffer. */
export async function fireRun(ctx: AppContext, input: { scheduleId: string; scheduledFor: string; actor: Actor; scope: Scope }): Promise<FireRunResult> {
  const at = parseIsoMicros(input.scheduledFor);
  if (at === null) throw validationFailed([{ path: '/scheduled_for', message: 'must be an ISO 8601 instant with an offset', location: 'body' }]);
  const now = nowMicros();
  const grace = ctx.config.SVC_SCHEDULER_GRPC_GRACE_SECONDS * 1_000_000;
  if (at > now + grace) {
    throw new ApiError(422, 'too_early', `the run is ${((at - now) / 1e6).toFixed(3)} s ahead of the service's clock (at most ${ctx.config.SVC_SCHEDULER_GRPC_GRACE_SECONDS} s allowed)`, {
      scheduled_for: isoMicros(at),
      server_time: isoMicros(now),
    });
  }
  if (at < now - ctx.config.SVC_SCHEDULE_FIRE_BUFFER_SECONDS * 1_000_000) {
    throw new ApiError(422, 'too_late', `runs older than SVC_SCHEDULE_FIRE_BUFFER_SECONDS (${ctx.config.SVC_SCHEDULE_FIRE_BUFFER_SECONDS} s) are not fired`, { scheduled_for: isoMicros(at) });
  }
  const scheduledFor = isoMicros(at);
  try {
    return await ctx.db.tx(async (tx) => {
      const s = await scheduleById(tx, input.scheduleId);
      if (!s || !inScope(input.scope, s.project_id)) throw notFound('schedule');
      if (s.scheduler !== SVC_SCHEDULER) throw conflict(`the schedule belongs to scheduler ${s.scheduler}, not ${SVC_SCHEDULER}`, { scheduler: s.scheduler }, 'not_svc_scheduler');
      if (!s.is_enabled) throw conflict('the schedule is disabled', { paused_by: s.paused_by }, 'schedule_disabled');
      const prior = await fireOfRun(tx, s.id, scheduledFor);
      if (prior) throw alreadyFired(s.id, scheduledFor, prior.fire_id);
      const fire = await issueFire(ctx, tx, s, { scheduledFor, actor: input.actor });
      const next = nextRunAfter(s, at, s.kind === 'interval' ? at : null);
      await advanceExpectation(tx, s.id, next, scheduledFor);
      return { fire: toFirePublic(fire), next_run_at: next };
    });
  } catch (e) {
    if (!(e instanceof ApiError) && isUniqueViolation(e)) {
      const prior = await fireOfRun(ctx.db, input.scheduleId, scheduledFor).catch(() => null);
      throw alreadyFired(input.scheduleId, scheduledFor, prior?.fire_id ?? null);
    }
    throw e;
  }
}

// --- the dashboard's next runs ------------------------------------------------------------

export interface Upcoming {
  schedule_id: string;
  /** The schedule's own zone (cron is read in it). */
  timezone: string;
  runs: UpcomingRun[];
}

/** The next `count` runs of a schedule in UTC, the schedule's zone and the project's, DST changes flagged.
 * From the stored expectation when it is ahead, else computed from now. */
export function upcomingOf(s: Pick<ScheduleRow, 'id' | 'kind' | 'expression' | 'timezone' | 'last_run_at' | 'next_run_at'>, projectZone: string, count: number): Upcoming {
  const now = nowMicros();
  const stored = s.next_run_at ? parseIsoMicros(s.next_run_at) : null;
  const first = stored !== null && stored > now ? s.next_run_at : null;
  const zones = ['UTC', projectZone, s.timezone];
  return { schedule_id: s.id, timezone: s.timezone, runs: upcomingRuns(s, now, count, zones, first) };
}

export async function upcomingForProject(ex: Executor, projectId: string, ids: string[] | null, count: number): Promise<{ project_timezone: string; schedules: Upcoming[] }> {
  const zone = await projectTimezone(ex, projectId);
  const rows = (await schedulesOf(ex, projectId)).filter((r) => ids === null || ids.includes(r.id)).slice(0, 500);
  return { project_timezone: zone, schedules: rows.map((r) => upcomingOf(r, zone, count)) };
}

export async function upcomingOfSchedule(ex: Executor, projectId: string, id: string, count: number): Promise<{ project_timezone: string; schedules: Upcoming[] }> {
  const s = await scheduleOf(ex, projectId, id);
  const zone = await projectTimezone(ex, projectId);
  return { project_timezone: zone, schedules: [upcomingOf(s, zone, count)] };
}

export const timezoneOfProject = async (ex: Executor, projectId: string): Promise<{ timezone: string }> => ({ timezone: await projectTimezone(ex, projectId) });

/** Sets the project's time zone for schedule runs; audit `project.updated` naming it. */
export async function setTimezoneOfProject(ctx: AppContext, projectId: string, timezone: string, actor: Actor): Promise<{ timezone: string }> {
  if (!knownZone(timezone)) throw validationFailed([{ path: '/timezone', message: 'is not a time zone this service knows (an IANA name such as Europe/Berlin)', location: 'body' }]);
  await ctx.db.tx(async (tx) => {
    const before = await projectTimezone(tx, projectId);
    if (before === timezone) return;
    await setProjectTimezone(tx, projectId, timezone);
    await ctx.audit.append(tx, { ...actor, action: 'project.updated', target_type: 'project', target_id: projectId, project_id: projectId, metadata: { changed: ['timezone'], timezone, previous: before } });
  });
  return { timezone };
}

// --- svc projects rewrite-scheduler -----------------------------------------------------------

/** Which schedules a rewrite takes: `imported` (sources declarative:* and imported*, the default),
 * `all`, or `source:<label>` (a trailing * matches a prefix). */
export function sourceScopeMatcher(scope: string): ((source: string) => boolean) | null {
  if (scope === 'all') return () => true;
  if (scope === 'imported') return (src) => src.startsWith('declarative:') || src.startsWith('imported');
  if (scope.startsWith('source:') && scope.length > 'source:'.length) {
    const label = scope.slice('source:'.length);
    return label.endsWith('*') ? (src) => src.startsWith(label.slice(0, -1)) : (src) => src === label;
  }
  return null;
}

export interface RewritePlan {
  operation_id: string;
  project: { id: string; slug: string };
  from: string;
  to: string;
  source_scope: string;
  schedules: { id: string; name: string; source: string; is_enabled: boolean; updated_at: string }[];
  digest: string;
}

const canonical = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canonical).join(',')}]`
    : v !== null && typeof v === 'object'
      ? `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(v);

/** The manifest of a rewrite as it would run now, and its digest (sha256 of its canonical JSON, bound to the operation id). */
export async function planRewrite(ex: Executor, input: { project: { id: string; slug: string }; from: string; to: string; sourceScope: string; operationId: string }): Promise<RewritePlan> {
  const match = sourceScopeMatcher(input.sourceScope);
  if (!match) throw validationFailed([{ path: '/source_scope', message: 'must be imported, all or source:<label>' }]);
  const rows = (await schedulesOf(ex, input.project.id, input.from)).filter((r) => match(r.source)).sort((a, b) => (a.id < b.id ? -1 : 1));
  const manifest = {
    operation_id: input.operationId,
    project: input.project,
    from: input.from,
    to: input.to,
    source_scope: input.sourceScope,
    schedules: rows.map((r) => ({ id: r.id, name: r.name, source: r.source, is_enabled: r.is_enabled, updated_at: r.updated_at })),
  };
  return { ...manifest, digest: `sha256:${createHash('sha256').update(canonical(manifest)).digest('hex')}` };
}

/** Applies a previewed rewrite: refused (409 manifest_changed) unless the schedules are as previewed.
 * Schedules moving to svc's scheduler get their next run from now; elsewhere it waits for the new
 * scheduler's report. Audit `project.rewrite_scheduler`. */
export async function applyRewrite(
  ctx: AppContext,
  input: { project: { id: string; slug: string }; from: string; to: string; sourceScope: string; operationId: string; digest: string },
  actor: Actor,
): Promise<RewritePlan & { moved: number }> {
  return ctx.db.tx(async (tx) => {
    const plan = await planRewrite(tx, input);
    if (plan.digest !== input.digest) {
      throw conflict('the schedules are no longer as previewed (or the operation id, scope or owners differ): run --dry-run again', { expected: input.digest, current: plan.digest }, 'manifest_changed');
    }
    const at = nowIso();
    const moved = await reassignSchedules(tx, plan.schedules.map((s) => s.id), input.to, at, input.to !== SVC_SCHEDULER);
    if (input.to === SVC_SCHEDULER) {
      for (const s of plan.schedules) {
        const row = await scheduleById(tx, s.id);
        if (row?.is_enabled) await updateSchedule(tx, s.id, { next_run_at: nextRunAfter(row, nowMicros()) });
      }
    }
    await ctx.audit.append(tx, {
      ...actor,
      action: 'project.rewrite_scheduler',
      target_type: 'project',
      target_id: input.project.id,
      project_id: input.project.id,
      metadata: { operation_id: input.operationId, from: input.from, to: input.to, source_scope: input.sourceScope, digest: plan.digest, moved, attested_quiesced: true },
    });
    return { ...plan, moved };
  });
}
