// Dramatiq (RedisBroker) with z4j-dramatiq: the app's Z4JAgent middleware
// calls z4j_bare.install_agent(engines=[DramatiqEngineAdapter(broker=broker)])
// once the worker process has booted; the adapter then puts its event
// middleware first in the broker's chain. Events are captured in the process
// that enqueues or runs a message, so only worker-side enqueues (retries,
// pipeline stages, re-runs) and runs reach svc: enqueue.py runs no agent.
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const dramatiq: Engine = {
  name: 'dramatiq',
  app: 'dramatiq',
  // One worker process (each process would run an agent of its own), four threads.
  worker: (bin) => [join(bin, 'dramatiq'), 'tasks', '--processes', '1', '--threads', '4'],
  // Dramatiq's actor name is the function's name.
  names: { add: 'add', fail: 'fail', flaky: 'flaky' },
  // The adapter's event mapper drops args and kwargs by design and never
  // forwards the return value: svc knows the name and state of `add 2 3`,
  // neither its arguments nor its result.
  added: { args: null, kwargs: null, result: null },
  failure: /^ValueError: interop failure: /,
  // The failed attempt is reported as retried once Retries has re-enqueued it
  // (that re-enqueue, in the worker, is its task.received); the second start
  // falls in the same second as the first and is stored once (§3.4.3).
  retriedEvents: ['task.received', 'task.retried', 'task.succeeded'],
  // dramatiq-abort in pending-only mode: the message must not have started.
  // `sleepy 1 5` is a pipeline stage the worker enqueues 5 s ahead, so it
  // reaches svc as received while it waits; Abortable skips it when it comes
  // due. The adapter sends no event for a skipped message (it reports the
  // task.started it saw just before the skip), so the cancel shows only in
  // the command's result: {cancelled: true, pending_only: true}.
  cancel: { sleepy: ['1', '5'], before: 'received', after: null },
  // Dramatiq keeps no arguments to replay: the adapter re-sends the actor by
  // name with both override halves (a by-reference retry fails closed).
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.task_id),
    // The adapter reports no arguments; the exception text shows the override reached the actor.
    rerun: (args) => ({ args: null, exception: `ValueError: interop failure: ${args[0]}` }),
  },
  capabilities: ['cancel_task', 'retry_task', 'submit_task', 'purge_queue', 'retry_by_reference_v1'],
};
