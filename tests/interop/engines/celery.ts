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
  capabilities: ['cancel_task', 'retry_task'],
};
