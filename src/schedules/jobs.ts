// The schedules area's background work and its hooks into the agent frame path:
//   - activations (every second, each process): external-schedule streams for
//     scheduler agents connected here (inventory.ts)
//   - fire outcomes (every 2 s, each process; conditional updates): fires.ts
//   - misfire detection (SVC_SCHEDULER_MISFIRE_SWEEP_SECONDS, one leader):
//     an enabled schedule whose expected run is older than
//     SVC_SCHEDULER_MISFIRE_GRACE_SECONDS is looked at. If its scheduler is
//     alive (an adapter's schedule while an agent advertising the adapter is
//     online) the expectation moves on to the next run; otherwise one misfire
//     is recorded (a schedule_misfires row, a `scheduler.misfire_detected`
//     audit row and the schedule.misfired notification) and the schedule is
//     marked, so an outage is reported once, not at every sweep. The mark
//     clears when the schedule is seen alive again (its scheduler back, a
//     snapshot, a successful fire).
//   - pruning of fires and misfires past SVC_SCHEDULE_FIRES_RETENTION_DAYS (hourly, one leader)
import { onlineAgentsOfProject } from '../agents/service.ts';
import type { Tx } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { isoMicros, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { fireSchedule } from '../notifications/triggers.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { scheduleCommandsFinished, scheduledTasksFailed, syncFires } from './fires.ts';
import { activationSweep, applyScheduleEvents } from './inventory.ts';
import { nextRunAfter } from './next-run.ts';
import { SVC_SCHEDULER, SYSTEM_ACTOR } from './service.ts';
import { dueSchedules, insertMisfire, markMisfired, misfiredSchedules, pruneFires, reanchor, type ScheduleRow } from './store.ts';

const log = logger('schedules');
const SWEEP_BATCH = 500;

/** Whether `s`'s scheduler is alive: an adapter's, while an agent of the project advertising it is online. */
function aliveCheck(ctx: AppContext) {
  const cache = new Map<string, Promise<Set<string>>>();
  return async (s: ScheduleRow): Promise<boolean> => {
    if (s.scheduler === SVC_SCHEDULER) return false;
    let adapters = cache.get(s.project_id);
    if (!adapters) {
      adapters = onlineAgentsOfProject(ctx.db, s.project_id).then((agents) => new Set(agents.filter((a) => a.transport === 'ws').flatMap((a) => a.scheduler_adapters)));
      cache.set(s.project_id, adapters);
    }
    return (await adapters).has(s.scheduler);
  };
}

/** One pass of the misfire detector; the misfires it recorded. */
export async function misfireSweep(ctx: AppContext): Promise<number> {
  const grace = ctx.config.SVC_SCHEDULER_MISFIRE_GRACE_SECONDS;
  const now = nowMicros();
  const nowText = isoMicros(now);
  const alive = aliveCheck(ctx);
  let recorded = 0;
  // Marked schedules whose scheduler is back: expected again from now on.
  for (const s of await misfiredSchedules(ctx.db, SWEEP_BATCH)) {
    if (await alive(s)) await ctx.db.tx((tx) => reanchor(tx, s.id, s.next_run_at, nextRunAfter(s, now, s.next_run_at ? parseIsoMicros(s.next_run_at) : null)));
  }
  for (const s of await dueSchedules(ctx.db, isoMicros(now - grace * 1_000_000), SWEEP_BATCH)) {
    const expected = s.next_run_at!;
    const expectedMicros = parseIsoMicros(expected) ?? now;
    const next = nextRunAfter(s, now, expectedMicros);
    if (await alive(s)) {
      await ctx.db.tx((tx) => reanchor(tx, s.id, expected, next));
      continue;
    }
    const lateness = Math.round((now - expectedMicros) / 1000) / 1000;
    const won = await ctx.db.tx(async (tx: Tx) => {
      if (!(await markMisfired(tx, s.id, expected, nowText, next))) return false;
      await insertMisfire(tx, {
        id: crypto.randomUUID(),
        project_id: s.project_id,
        schedule_id: s.id,
        scheduler: s.scheduler,
        name: s.name,
        engine: s.engine,
        kind: s.kind,
        expected_at: expected,
        detected_at: nowText,
        lateness_seconds: lateness,
        grace_seconds: grace,
      });
      await ctx.audit.append(tx, {
        ...SYSTEM_ACTOR,
        action: 'scheduler.misfire_detected',
        target_type: 'schedule',
        target_id: s.id,
        project_id: s.project_id,
        metadata: { name: s.name, scheduler: s.scheduler, engine: s.engine, kind: s.kind, expected_at: expected, lateness_seconds: lateness, grace_seconds: grace },
      });
      return true;
    });
    if (!won) continue;
    recorded++;
    log.warn({ schedule_id: s.id, project_id: s.project_id, scheduler: s.scheduler, expected_at: expected, lateness_seconds: lateness }, 'schedule misfired');
    fireSchedule(ctx.notifications, 'schedule.misfired', s.project_id, { id: s.id, name: s.name, error: `expected at ${expected}; not fired ${lateness.toFixed(0)} s later (grace ${grace} s)` }, nowText);
  }
  return recorded;
}

export async function startScheduleJobs(ctx: AppContext): Promise<void> {
  const c = ctx.config;
  every(ctx, 'schedule-activations', 1000, async () => void (await activationSweep(ctx)));
  every(ctx, 'schedule-fire-outcomes', 2000, async () => void (await syncFires(ctx)));
  if (c.SVC_SCHEDULER_MISFIRE_SWEEP_SECONDS > 0) {
    const ms = c.SVC_SCHEDULER_MISFIRE_SWEEP_SECONDS * 1000;
    every(ctx, 'schedule-misfires', ms, async () => {
      if (await acquireLease(ctx.db, 'schedule-misfires', ms * 2 + 5000)) await misfireSweep(ctx);
    });
  }
  every(ctx, 'schedule-fires-retention', 3600_000, async () => {
    if (!(await acquireLease(ctx.db, 'schedule-fires-retention', 2 * 3600_000))) return;
    const cutoff = isoMicros(nowMicros() - c.SVC_SCHEDULE_FIRES_RETENTION_DAYS * 86_400_000_000);
    const n = await ctx.db.tx((tx) => pruneFires(tx, cutoff));
    if (n > 0) log.info({ pruned: n, cutoff }, 'pruned schedule fires and misfires past retention');
  });
}

// --- hooks of the agent frame router -------------------------------------------------

/** Newly stored event records of an agent, inside the storing transaction: schedule events update the
 * inventory; failed tasks that fires submitted notify after the commit. */
export async function scheduleEventsStored(ctx: AppContext, tx: Tx, where: { projectId: string; agentId: string }, added: readonly EventRecord[]): Promise<void> {
  let schedules = false;
  let failures = false;
  for (const r of added) {
    if (r.kind.startsWith('schedule.')) schedules = true;
    else if (r.kind === 'task.failed') failures = true;
  }
  if (schedules) await applyScheduleEvents(tx, where, added);
  if (failures) {
    tx.afterCommit(() => void scheduledTasksFailed(ctx, where.projectId, added).catch((e) => log.warn({ err: describeError(e) }, 'schedule.task_failed check failed')));
  }
}

/** A command_result was recorded (committed). */
export const scheduleCommandResult = (ctx: AppContext, commandId: string): void => scheduleCommandsFinished(ctx, [commandId]);
