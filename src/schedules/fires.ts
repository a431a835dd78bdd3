// What became of each fire: a fire row follows its command (buffered ->
// pending -> dispatched -> succeeded | failed | timeout | buffer_expired).
// The command's result reaches the fire at once through the frame router's
// hook (scheduleCommandsFinished) and, whatever a process missed, through a
// periodic sweep. Each step is a conditional update on the fire's status, so
// exactly one process reports an outcome: schedule.fire.succeeded / failed
// notifications, the schedule's run counters, and the circuit breaker, which
// pauses a schedule after SVC_SCHEDULE_CIRCUIT_BREAKER_THRESHOLD failed fires in
// a row (disabled here and, for an adapter's schedule, in its scheduler) and
// fires schedule.circuit_breaker.tripped. A task a fire submitted that later
// fails fires schedule.task_failed.
import type { EventRecord } from '../ingest/events.ts';
import { isoMicros, nowIso, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { fireSchedule } from '../notifications/triggers.ts';
import type { AppContext } from '../server/context.ts';
import { schedulerAgents, SVC_SCHEDULER, SYSTEM_ACTOR, adapterScheduleId } from './service.ts';
import { issueCommandIn } from '../commands/service.ts';
import { advanceFire, countFireOutcome, firesOfTasks, openFires, scheduleById, tripBreaker, type FireRow } from './store.ts';
import type { FireStatus } from './tables.ts';

const log = logger('schedules.fires');

const FROM_COMMAND: Record<string, FireStatus> = {
  buffered: 'buffered',
  pending: 'pending',
  dispatched: 'dispatched',
  completed: 'succeeded',
  failed: 'failed',
  cancelled: 'failed',
  timeout: 'timeout',
  buffer_expired: 'buffer_expired',
};
const ERROR_CODE: Partial<Record<FireStatus, string>> = { failed: 'agent_failed', timeout: 'timeout', buffer_expired: 'buffer_expired' };
/** Outcomes that count against the circuit breaker (an expired buffer says no agent was there, not that the fire failed). */
const FAILED: ReadonlySet<FireStatus> = new Set(['failed', 'timeout']);
const TERMINAL: ReadonlySet<FireStatus> = new Set(['succeeded', 'failed', 'timeout', 'buffer_expired']);

/** The task id in a fire's result (submit_task answers name it differently per engine). */
function taskIdOf(result: unknown): string | null {
  if (typeof result !== 'object' || result === null) return null;
  const r = result as Record<string, unknown>;
  for (const k of ['task_id', 'new_task_id', 'job_id', 'id', 'message_id']) if (typeof r[k] === 'string' && r[k] !== '') return (r[k] as string).slice(0, 200);
  return null;
}

/** Brings open fires up to their commands' state; `commandIds` limits it to those commands' fires. */
export async function syncFires(ctx: AppContext, commandIds?: string[]): Promise<number> {
  if (commandIds && commandIds.length === 0) return 0;
  let moved = 0;
  for (const { fire, command } of await openFires(ctx.db, 500, commandIds)) {
    if (!command) continue;
    const next = FROM_COMMAND[command.status];
    if (!next || next === fire.status) continue;
    if (await settle(ctx, fire, next, command)) moved++;
  }
  return moved;
}

async function settle(ctx: AppContext, fire: FireRow, next: FireStatus, command: { error: string | null; result: unknown; acked_at: string | null; completed_at: string | null }): Promise<boolean> {
  const terminal = TERMINAL.has(next);
  const completedAt = command.completed_at ?? nowIso();
  const due = parseIsoMicros(fire.scheduled_for);
  const done = parseIsoMicros(completedAt);
  const set: Partial<FireRow> = { status: next, acked_at: command.acked_at };
  if (terminal) {
    Object.assign(set, {
      completed_at: completedAt,
      latency_ms: due !== null && done !== null ? Math.max(0, Math.round((done - due) / 1000)) : null,
      error_code: ERROR_CODE[next] ?? null,
      error_message: next === 'succeeded' ? null : (command.error ?? null)?.slice(0, 2000) ?? null,
      task_id: next === 'succeeded' ? taskIdOf(command.result) : null,
    });
  }
  let tripped: { id: string; name: string; projectId: string; scheduler: string } | null = null;
  const won = await ctx.db.tx(async (tx) => {
    if (!(await advanceFire(tx, fire.id, fire.status, set))) return false;
    if (!terminal || next === 'buffer_expired') return true;
    const failed = FAILED.has(next);
    const s = await countFireOutcome(tx, fire.schedule_id, failed, completedAt);
    const threshold = ctx.config.SVC_SCHEDULE_CIRCUIT_BREAKER_THRESHOLD;
    if (s && failed && threshold > 0 && s.consecutive_failures >= threshold && s.is_enabled && (await tripBreaker(tx, s.id, nowIso()))) {
      // Paused in its scheduler too when an agent advertising the adapter is online.
      let commandId: string | null = null;
      if (s.scheduler !== SVC_SCHEDULER) {
        const agent = (await schedulerAgents(tx, s.project_id, s.scheduler))[0];
        if (agent) {
          const c = await issueCommandIn(
            ctx,
            tx,
            {
              projectId: s.project_id,
              agentId: agent.id,
              action: 'schedule.disable',
              targetType: 'schedule',
              targetId: s.id,
              payload: { schedule_id: adapterScheduleId(s), schedule_name: s.name, external_id: s.external_id, scheduler: s.scheduler },
            },
            SYSTEM_ACTOR,
          );
          commandId = c.id;
        }
      }
      await ctx.audit.append(tx, {
        ...SYSTEM_ACTOR,
        action: 'schedule.circuit_breaker.tripped',
        result: 'paused',
        outcome: 'deny',
        target_type: 'schedule',
        target_id: s.id,
        project_id: s.project_id,
        metadata: { name: s.name, scheduler: s.scheduler, consecutive_failures: s.consecutive_failures, threshold, command_id: commandId },
      });
      tripped = { id: s.id, name: s.name, projectId: s.project_id, scheduler: s.scheduler };
    }
    return true;
  });
  if (!won) return false;
  if (terminal && next !== 'buffer_expired') {
    const name = String((await scheduleName(ctx, fire.schedule_id)) ?? fire.schedule_id);
    fireSchedule(ctx.notifications, next === 'succeeded' ? 'schedule.fire.succeeded' : 'schedule.fire.failed', fire.project_id, {
      id: fire.schedule_id,
      name,
      error: next === 'succeeded' ? null : (command.error ?? next),
    });
  } else if (next === 'buffer_expired') {
    const name = String((await scheduleName(ctx, fire.schedule_id)) ?? fire.schedule_id);
    fireSchedule(ctx.notifications, 'schedule.fire.failed', fire.project_id, { id: fire.schedule_id, name, error: 'buffer_expired: no agent advertising the engine came online in time' });
  }
  if (tripped) {
    const t = tripped as { id: string; name: string; projectId: string };
    log.warn({ schedule_id: t.id, project_id: t.projectId }, 'circuit breaker paused a schedule after repeated failed fires');
    fireSchedule(ctx.notifications, 'schedule.circuit_breaker.tripped', t.projectId, { id: t.id, name: t.name, error: 'paused after repeated failed fires' });
  }
  return true;
}

async function scheduleName(ctx: AppContext, id: string): Promise<string | null> {
  return (await scheduleById(ctx.db, id))?.name ?? null;
}

/** The frame router's hook: commands just finished (their fires settle now, not at the next sweep). */
export function scheduleCommandsFinished(ctx: AppContext, commandIds: string[]): void {
  void syncFires(ctx, commandIds).catch((e) => log.warn({ err: describeError(e) }, 'settling a fire failed (the sweep retries)'));
}

/** Failed tasks a fire submitted fire schedule.task_failed (after the events committed). */
export async function scheduledTasksFailed(ctx: AppContext, projectId: string, records: readonly EventRecord[]): Promise<void> {
  const failed = records.filter((r) => r.kind === 'task.failed' && r.taskId !== '');
  if (failed.length === 0) return;
  const fires = (await firesOfTasks(ctx.db, failed.map((r) => r.taskId))).filter((f) => f.project_id === projectId);
  for (const f of fires) {
    const event = failed.find((r) => r.taskId === f.task_id);
    const name = (await scheduleName(ctx, f.schedule_id)) ?? f.schedule_id;
    const exception = typeof event?.data.exception === 'string' ? event.data.exception : null;
    fireSchedule(ctx.notifications, 'schedule.task_failed', projectId, { id: f.schedule_id, name, error: exception ?? `task ${f.task_id} failed` }, event?.occurredAt ?? isoMicros());
  }
}
