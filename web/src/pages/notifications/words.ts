// The notification settings' words for the API's fixed lists (triggers, channel types, priorities). Records
// keyed by the server's own unions: a value the server adds breaks the type check here until it has its words.
import type { ChannelType, Priority, Trigger } from '../../api/types.ts';

export const TRIGGER_TEXT: Record<Trigger, string> = {
  'task.failed': 'A task failed',
  'task.succeeded': 'A task succeeded',
  'task.retried': 'A task is retried',
  'agent.offline': 'An agent went offline',
  'agent.online': 'An agent came online',
  'schedule.fire.failed': 'A schedule could not fire',
  'schedule.fire.succeeded': 'A schedule fired',
  'schedule.task_failed': "A schedule's task failed",
  'schedule.misfired': 'A schedule misfired',
  'schedule.circuit_breaker.tripped': "A schedule's circuit breaker tripped",
};
export const TRIGGERS = Object.keys(TRIGGER_TEXT) as Trigger[];

export const CHANNEL_TYPE_TEXT: Record<ChannelType, string> = {
  webhook: 'Webhook',
  email: 'E-mail',
  slack: 'Slack',
  discord: 'Discord',
  teams: 'Microsoft Teams',
  telegram: 'Telegram',
  pagerduty: 'PagerDuty',
};
export const CHANNEL_TYPES = Object.keys(CHANNEL_TYPE_TEXT) as ChannelType[];

const PRIORITY_SET: Record<Priority, true> = { critical: true, high: true, normal: true, low: true };
export const PRIORITIES = Object.keys(PRIORITY_SET) as Priority[];
