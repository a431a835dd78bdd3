// RQ with z4j-rq. The agent runs inside the worker: `rq worker -c settings`
// imports the app's settings module, whose register_worker_bootstrap() wraps
// the worker's execute_job (task events) and starts the z4j agent in a thread
// of the worker's main process. `-w z4j_rq.worker.Worker` is the adapter's
// fork worker (RQ's own, minus a parent-side memory leak).
//
// What z4j-rq reports: task.started before the work horse forks, then
// task.succeeded or task.failed from the job's final status. No task.received,
// no task.retried, and never the job's arguments or result (RQ pickles them;
// the events carry only RQ's description text `tasks.add(2, 3)`). The failure's
// `exception` is RQ's whole traceback text (the exception line is its last line).
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const rq: Engine = {
  name: 'rq',
  app: 'rq',
  worker: (bin, { name }) => [join(bin, 'rq'), 'worker', '-c', 'settings', '-w', 'z4j_rq.worker.Worker', '-n', name, '--logging_level', 'INFO', 'default'],
  // RQ names a job by its function's import path.
  names: { add: 'tasks.add', fail: 'tasks.fail', flaky: 'tasks.flaky' },
  // The adapter sends neither arguments nor results: svc shows neither.
  added: { queue: 'default', args: null, kwargs: null, result: null },
  // The exception line ends the traceback text the adapter sends: svc shows
  // that line as the exception and the whole text as the traceback.
  failure: /^ValueError: interop failure/,
  // RQ's Retry re-enqueues the same job id; the failed first attempt ends in
  // status `queued`, for which the adapter reports nothing (its second
  // task.started falls in the same second and is the same event to svc).
  // svc therefore counts no retry (retry_count 0).
  retriedEvents: ['task.started', 'task.succeeded'],
  // A running job: the adapter publishes RQ's stop-job command; the worker
  // kills the work horse and the adapter reports the stopped job as
  // task.failed ("Job stopped by user, work-horse terminated.").
  cancel: { sleepy: ['5'], before: 'started', after: 'failure' },
  // z4j-rq never unpickles a stored job: a retry needs the arguments given
  // again (both halves), and enqueues a new job of the recorded task name.
  // Without them it requeues the same job id from RQ's FailedJobRegistry.
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.task_id),
    // The re-run is a new job of the same function; svc shows no arguments for it either.
    rerun: () => ({ args: null }),
  },
  capabilities: ['submit_task', 'retry_task', 'cancel_task', 'purge_queue', 'bulk_retry', 'requeue_dead_letter', 'list_dead_letters', 'retry_by_reference_v1'],
  actions: {
    noWorkers: 'z4j-rq 1.13 reports no workers',
    client: 'ops_client.py',
    // A retry by reference requeues the failed job itself from RQ's FailedJobRegistry (same job id).
    bulkRetry: { count: 5, reruns: 'same' },
    // The worker consumes `default` only.
    purge: { queue: 'interop.parked' },
    // RQ's FailedJobRegistry is the dead-letter store: requeue runs the job again under its id.
    deadLetters: { queue: 'default', requeue: true, ids: 'task' },
  },
};
