// Text every message format draws on: which facts of a fire to show, and how
// to shorten what agents report (task names, exceptions, tracebacks are the
// workers' text, of any length). Each channel escapes for its own markup.
import type { NotificationPayload } from './base.ts';

/** At most `max` characters; an ellipsis marks a cut. */
export const clip = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** The last `max` characters: a traceback's end names the error. */
export const clipStart = (text: string, max: number): string => (text.length <= max ? text : `…${text.slice(text.length - max + 1)}`);

/** Fact values are labels, not prose. */
const FACT_MAX = 200;

/** Label and value of each fact the fire has, in reading order. */
export function facts(p: NotificationPayload): [string, string][] {
  const all: [string, string | null][] = [
    ['Trigger', p.trigger],
    ['Project', p.project_slug],
    ['Task', p.task_name],
    ['Task ID', p.task_id],
    ['State', p.state],
    ['Priority', p.priority],
    ['Queue', p.queue],
    ['Agent', p.agent_name ?? p.agent_id],
    ['Schedule', p.schedule_name ?? p.schedule_id],
  ];
  return all.filter((f): f is [string, string] => f[1] !== null && f[1] !== '').map(([k, v]) => [k, clip(v, FACT_MAX)]);
}

/** The body's lines other than the exception: fires put the exception first in the body (for the
 * inbox, which has only the body), and every format here shows the exception in a block of its own. */
export function bodyText(p: NotificationPayload): string {
  if (!p.exception) return p.body.trim();
  if (p.body.startsWith(p.exception)) return p.body.slice(p.exception.length).trim();
  // A body cut short inside the exception holds nothing else.
  return p.exception.startsWith(p.body) ? '' : p.body.trim();
}

export type Priority = 'critical' | 'high' | 'normal' | 'low';

/** A fire without a priority (an agent going offline) reads as normal. */
export const priorityOf = (p: NotificationPayload): Priority =>
  p.priority === 'critical' || p.priority === 'high' || p.priority === 'low' ? p.priority : 'normal';

/** A fenced code block for the markdown dialects (Slack, Discord, Telegram): no run of
 * backticks inside can close it early, each is followed by a zero-width space. */
export const fence = (text: string): string => `\`\`\`\n${text.replace(/`/g, '`\u200b')}\n\`\`\``;
