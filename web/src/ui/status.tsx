// The states of agents, tasks and commands as badges, coloured by what they mean for the person reading them
// (the word is always there too: colour alone says nothing to everyone).
import type { CommandStatus, TaskState } from '../api/types.ts';
import { Badge } from './bits.tsx';

type Tone = 'ok' | 'bad' | 'warn' | 'info' | 'muted';

const AGENT: Record<string, [Tone, string]> = {
  online: ['ok', 'online'],
  offline: ['warn', 'offline'],
  unknown: ['muted', 'never connected'],
};

const TASK: Record<TaskState, Tone> = {
  pending: 'info',
  received: 'info',
  started: 'info',
  success: 'ok',
  failure: 'bad',
  retry: 'warn',
  revoked: 'warn',
  rejected: 'bad',
  unknown: 'muted',
};

const COMMAND: Record<CommandStatus, Tone> = {
  pending: 'info',
  dispatched: 'info',
  buffered: 'info',
  completed: 'ok',
  failed: 'bad',
  timeout: 'bad',
  cancelled: 'muted',
  buffer_expired: 'warn',
};

/** Statuses after which a command changes no more. */
export const COMMAND_ENDED: ReadonlySet<string> = new Set(['completed', 'failed', 'timeout', 'cancelled', 'buffer_expired']);
/** Task states in which cancelling still means something. */
export const TASK_RUNNING: ReadonlySet<string> = new Set(['pending', 'received', 'started', 'retry', 'unknown']);

// Badge is called as a function (not <Badge>): these sit in every row of long tables, where a component
// instance per cell costs more than the span itself.
export function AgentState(props: { state: string }) {
  const [tone, text] = AGENT[props.state] ?? ['muted', props.state];
  return Badge({ tone, children: text });
}

export const TaskStateBadge = (props: { state: TaskState }) => Badge({ tone: TASK[props.state] ?? 'muted', children: props.state });

export const CommandStatusBadge = (props: { status: CommandStatus }) =>
  Badge({ tone: COMMAND[props.status] ?? 'muted', children: props.status.replace('_', ' ') });
