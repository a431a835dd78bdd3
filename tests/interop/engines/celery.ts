// Celery with z4j-celery: importing z4j_celery in the app registers the
// agent's worker bootstrap, which starts when `celery ... worker` runs.
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const celery: Engine = {
  name: 'celery',
  app: 'celery',
  // The `celery` entry point, not `python -m celery`: z4j-celery starts its
  // agent only when argv shows a `celery ... worker` invocation.
  worker: (bin, { name }) => [join(bin, 'celery'), '-A', 'tasks', 'worker', '--pool', 'threads', '--concurrency', '4', '-l', 'info', '-n', `${name}@%h`],
  names: { add: 'interop.add', fail: 'interop.fail', flaky: 'interop.flaky' },
  added: { args: [2, 3], result: 5 },
  failure: /ValueError/,
  retriedEvents: ['task.retried', 'task.succeeded'],
  // Held by the worker until its countdown ends; Celery reports the revoke
  // when the countdown comes due and the task is discarded.
  cancel: { sleepy: ['1', '6'], before: 'received', after: 'revoked' },
  retry: { newTaskId: (result) => String(result.new_task_id) },
  // Everything but dead letters (Celery has no dead-letter store of its own).
  capabilities: ['submit_task', 'retry_task', 'cancel_task', 'bulk_retry', 'purge_queue', 'restart_worker', 'pool_grow', 'pool_shrink', 'add_consumer', 'cancel_consumer', 'rate_limit'],
  actions: {
    // Prefork (its pool grows, shrinks and restarts), without the parked queue; -E: z4j-celery reads a
    // prefork pool's task events from the broker.
    worker: (bin, { name }) => [join(bin, 'celery'), '-A', 'ops', 'worker', '--pool', 'prefork', '--concurrency', '2', '-E', '-X', 'interop.parked', '-l', 'info', '-n', `${name}@%h`],
    client: 'ops_client.py',
    // Each retry re-runs the task as a new task.
    bulkRetry: { count: 50, reruns: 'new' },
    // Its heartbeat's depth probe calls llen on kombu's Connection (transport.client), not on Redis.
    purge: { queue: 'interop.parked', noDepth: 'z4j-celery 1.13 reports no queue depths on a Redis broker' },
    inspect: { extraQueue: 'interop.extra' },
  },
};
