// TaskIQ (taskiq-redis RedisStreamBroker + RedisAsyncResultBackend) with
// z4j-taskiq: app/taskiq/tasks.py attaches z4j's middleware to the broker at
// import and starts the agent (z4j_bare.install_agent) from a WORKER_STARTUP
// handler, so `taskiq worker tasks:broker` runs it in its worker process.
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const taskiq: Engine = {
  name: 'taskiq',
  app: 'taskiq',
  // One worker process (each would run an agent of its own); INFO shows the agent's lines.
  worker: (bin) => [join(bin, 'taskiq'), 'worker', 'tasks:broker', '--workers', '1', '--log-level', 'INFO'],
  // TaskIQ's default task names: <module>:<function>.
  names: { add: 'tasks:add', fail: 'tasks:fail', flaky: 'tasks:flaky' },
  // The middleware sends the arguments only with task.received, from the
  // pre_send hook of the process that sends the task: enqueue.py, which runs no
  // agent. The worker reports started and succeeded (or failed), and no event
  // carries the return value. So svc knows the name and state of `add 2 3`,
  // neither its arguments nor its result.
  added: { args: null, kwargs: null, result: null },
  failure: /ValueError: interop failure/,
  // SimpleRetryMiddleware re-sends the failed message from the worker under the
  // same id: its pre_send there is reported as task.retried (the failed attempt
  // reports no task.failed), then the second attempt succeeds. (Its task.started
  // collapses with the first one when both fall in the same second.)
  retriedEvents: ['task.retried', 'task.succeeded'],
  cancel: {
    why: 'z4j-taskiq advertises no cancel_task (TaskIQ has no broker-agnostic cancel primitive)',
    error: /adapter 'taskiq' does not support action 'cancel_task'/,
  },
  // No native retry (the adapter's retry_task always fails, and it attests no
  // retry_by_reference_v1): z4j-bare lowers retry_task to submit_task, a new
  // task sent by name from the worker (so its task.received names the
  // arguments), when the command carries both override halves. The result is
  // submit_task's: {"task_id": ..., "engine": "taskiq"}.
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.task_id),
  },
  capabilities: ['submit_task'],
  actions: {
    noWorkers: 'z4j-taskiq 1.13 reports no workers',
    bulkRetry: { undeliverable: 'z4j-taskiq has no retry_task and attests no retry contract' },
  },
};
