// The triggers, fired from what causes them: task.failed / succeeded /
// retried from newly stored task events (one fire per task and trigger per
// batch), agent.online / agent.offline from liveness, and the schedule.*
// triggers through fireSchedule (the schedules area calls it). Everything here
// returns at once: fires are queued for the dispatcher.
import { findAgent } from '../agents/service.ts';
import type { Db } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { nowIso } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { Reactions } from '../platform/reactions.ts';
import type { Notifications } from './dispatch.ts';
import { materializeDefaults, seedProjectDefaults } from './service.ts';
import type { Fire } from './fires.ts';
import type { Trigger } from './schemas.ts';

const log = logger('notifications');

const TASK_TRIGGERS: Readonly<Record<string, { trigger: Trigger; state: string }>> = {
  'task.failed': { trigger: 'task.failed', state: 'failure' },
  'task.succeeded': { trigger: 'task.succeeded', state: 'success' },
  'task.retried': { trigger: 'task.retried', state: 'retry' },
};

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** One fire per task and trigger: the latest event of its kind in the batch. */
export function taskFires(projectId: string, events: readonly EventRecord[]): Fire[] {
  const latest = new Map<string, Fire>();
  for (const e of events) {
    const t = TASK_TRIGGERS[e.kind];
    if (!t || e.taskId === '') continue;
    const key = `${t.trigger}\u0000${e.engine}\u0000${e.taskId}`;
    const seen = latest.get(key);
    if (seen && seen.occurredAt >= e.occurredAt) continue;
    latest.set(key, {
      trigger: t.trigger,
      projectId,
      occurredAt: e.occurredAt,
      task: {
        engine: e.engine,
        task_id: e.taskId,
        // The task's row fills in what this event lacks (dispatch reads it).
        name: text(e.data.task_name),
        queue: text(e.data.queue),
        priority: text(e.data.priority),
        state: t.state,
        exception: text(e.data.exception),
        traceback: text(e.data.traceback),
      },
    });
  }
  return [...latest.values()];
}

/** The schedule triggers' one entry point. */
export function fireSchedule(
  notifications: Notifications,
  trigger: Extract<Trigger, `schedule.${string}`>,
  projectId: string,
  schedule: { id: string; name: string; error?: string | null },
  occurredAt: string = nowIso(),
): void {
  notifications.fire([{ trigger, projectId, occurredAt, schedule }]);
}

/** Fires of agents that came online or went offline (their names and projects read first). */
async function agentFires(db: Db, trigger: 'agent.online' | 'agent.offline', agentIds: readonly string[]): Promise<Fire[]> {
  const occurredAt = nowIso();
  const fires: Fire[] = [];
  for (const id of agentIds) {
    const agent = await findAgent(db, id);
    if (agent && agent.revoked_at === null) fires.push({ trigger, projectId: agent.project_id, occurredAt, agent: { id, name: agent.name } });
  }
  return fires;
}

/** What notifications does when tasks, agents, projects and members change. */
export function notificationReactions(notifications: Notifications, db: Db): Reactions {
  const agents = (trigger: 'agent.online' | 'agent.offline', ids: readonly string[]) =>
    void agentFires(db, trigger, ids).then(
      (fires) => notifications.fire(fires),
      (e) => log.error({ err: describeError(e), trigger }, 'reading agents for a notification failed'),
    );
  return {
    tasksStored: (projectId, events) => {
      notifications.ingestCommitted();
      const fires = taskFires(projectId, events);
      if (fires.length > 0) notifications.fire(fires);
    },
    agentCameOnline: (agentId) => agents('agent.online', [agentId]),
    agentsWentOffline: (agentIds) => agents('agent.offline', agentIds),
    projectCreated: (tx, projectId) => seedProjectDefaults(tx, projectId),
    memberJoined: async (tx, projectId, userId) => void (await materializeDefaults(tx, projectId, userId)),
  };
}
