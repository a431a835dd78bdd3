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
  cancel: { sleepy: ['1', '5'], before: 'received', after: null, result: { cancelled: true, pending_only: true } },
  // Dramatiq keeps no arguments to replay: the adapter re-sends the actor by
  // name with both override halves (a by-reference retry fails closed).
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.task_id),
    // The adapter reports no arguments; the exception text shows the override reached the actor.
    rerun: (args) => ({ args: null, exception: `ValueError: interop failure: ${args[0]}` }),
  },
  // Redis: the .XQ dead-letter store can be listed (not requeued: stock Dramatiq has no recoverable API).
  capabilities: ['submit_task', 'retry_task', 'cancel_task', 'purge_queue', 'list_dead_letters', 'retry_by_reference_v1'],
  actions: {
    noWorkers: 'z4j-dramatiq 1.13 reports no workers',
    // The worker consumes `default` only (the parked actor's queue is declared, not consumed).
    worker: (bin) => [join(bin, 'dramatiq'), 'tasks', '--processes', '1', '--threads', '4', '--queues', 'default'],
    client: 'ops_client.py',
    // The agent attests the retry contract, yet keeps no arguments to replay: each item fails.
    bulkRetry: { count: 3, itemsFail: /cannot retry '[^']+' by reference: stock Dramatiq has no recoverable dead-letter API/, why: 'z4j-dramatiq replays nothing by reference' },
    purge: { queue: 'interop_parked', noDepth: "z4j-dramatiq 1.13's heartbeats report no depth of a queue the worker does not consume" },
    // `fail` has no retries: its messages are dead-lettered to default.XQ, listed by the Redis broker's
    // own message ids (redis_message_id), not the message ids svc knows the tasks by.
    deadLetters: { queue: 'default', requeue: false, ids: 'broker' },
  },
};
