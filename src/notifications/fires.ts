// What a trigger firing says, and what people and channels are told of it.
// Fires come from what causes them (ingested task events, agent liveness,
// schedules) and are handed to the dispatcher; nothing here touches storage.
import type { NotificationPayload } from './channels/base.ts';
import type { Trigger } from './schemas.ts';

export interface TaskFacts {
  engine: string;
  task_id: string;
  name: string | null;
  queue: string | null;
  priority: string | null;
  state: string | null;
  exception: string | null;
  traceback: string | null;
}

/** One firing of a trigger in a project. */
export interface Fire {
  trigger: Trigger;
  projectId: string;
  /** When it happened (ISO 8601 UTC). */
  occurredAt: string;
  task?: TaskFacts;
  agent?: { id: string; name: string };
  schedule?: { id: string; name: string; error?: string | null };
}

const HEADLINE: Record<Trigger, string> = {
  'task.failed': 'Task failed',
  'task.succeeded': 'Task succeeded',
  'task.retried': 'Task retried',
  'agent.offline': 'Agent offline',
  'agent.online': 'Agent online',
  'schedule.fire.failed': 'Schedule fire failed',
  'schedule.fire.succeeded': 'Schedule fired',
  'schedule.task_failed': "Scheduled task failed",
  'schedule.misfired': 'Schedule misfired',
  'schedule.circuit_breaker.tripped': 'Schedule paused after repeated failures',
};

const MAX_BODY = 500;

/** The dashboard path of what the fire is about (a task, an agent, a schedule), below the project. */
export function pathOf(fire: Fire, projectSlug: string): string | null {
  const base = `/projects/${encodeURIComponent(projectSlug)}`;
  if (fire.task) return `${base}/tasks/${encodeURIComponent(fire.task.engine)}/${encodeURIComponent(fire.task.task_id)}`;
  if (fire.agent) return `${base}/agents/${encodeURIComponent(fire.agent.id)}`;
  if (fire.schedule) return `${base}/schedules/${encodeURIComponent(fire.schedule.id)}`;
  return null;
}

/** The payload every channel and inbox row is built from. `publicUrl` ('' when unknown) makes links absolute. */
export function payloadOf(fire: Fire, projectSlug: string, publicUrl: string): NotificationPayload {
  const subject = fire.task?.name ?? fire.task?.task_id ?? fire.agent?.name ?? fire.schedule?.name ?? '';
  const title = subject ? `${HEADLINE[fire.trigger]}: ${subject}` : HEADLINE[fire.trigger];
  const lines: string[] = [];
  if (fire.task?.exception) lines.push(fire.task.exception);
  else if (fire.task?.state) lines.push(`State: ${fire.task.state}`);
  if (fire.schedule?.error) lines.push(fire.schedule.error);
  if (fire.agent) lines.push(`Agent ${fire.agent.name} is ${fire.trigger === 'agent.offline' ? 'offline' : 'online'}.`);
  const path = pathOf(fire, projectSlug);
  return {
    trigger: fire.trigger,
    project_id: fire.projectId,
    project_slug: projectSlug,
    title,
    body: `${lines.join('\n').slice(0, MAX_BODY)}`,
    link: path && publicUrl ? `${publicUrl.replace(/\/$/, '')}${path}` : null,
    task_id: fire.task?.task_id ?? null,
    task_name: fire.task?.name ?? null,
    engine: fire.task?.engine ?? null,
    queue: fire.task?.queue ?? null,
    priority: fire.task?.priority ?? null,
    state: fire.task?.state ?? null,
    exception: fire.task?.exception ?? null,
    traceback: fire.task?.traceback ?? null,
    agent_id: fire.agent?.id ?? null,
    agent_name: fire.agent?.name ?? null,
    schedule_id: fire.schedule?.id ?? null,
    schedule_name: fire.schedule?.name ?? null,
    timestamp: fire.occurredAt,
  };
}

/** The payload of a channel test. */
export function testPayload(project: { id: string; slug: string } | null, now: string): NotificationPayload {
  return {
    trigger: 'test.dispatch',
    project_id: project?.id ?? '',
    project_slug: project?.slug ?? '',
    title: 'svc test notification',
    body: 'This channel works: svc can deliver notifications through it.',
    link: null,
    task_id: `test-${now}`,
    task_name: 'svc-self-test',
    engine: null,
    queue: null,
    priority: 'normal',
    state: 'test',
    exception: null,
    traceback: null,
    agent_id: null,
    agent_name: null,
    schedule_id: null,
    schedule_name: null,
    timestamp: now,
  };
}
