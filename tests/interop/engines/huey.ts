// Huey (RedisHuey) with z4j-huey: app/huey/worker.py runs Huey's consumer
// (what `huey_consumer tasks.huey` does) after
// z4j_bare.install_agent(engines=[HueyEngineAdapter(huey=huey)]); the adapter
// turns the Huey signals of that process into task events.
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const huey: Engine = {
  name: 'huey',
  app: 'huey',
  // Four worker threads; Huey's scheduler (every second) moves due tasks to the queue.
  worker: (bin) => [join(bin, 'python'), 'worker.py', '--workers', '4', '--worker-type', 'thread'],
  // A Huey task's name is its function's name (its registry key is tasks.<name>).
  names: { add: 'add', fail: 'fail', flaky: 'flaky' },
  // Huey signals the enqueue (the event carrying args and kwargs) in the process
  // that enqueues: enqueue.py, which runs no agent. The consumer signals only the
  // start and the end, and no signal carries the return value. So svc knows the
  // name and state of `add 2 3` but neither its arguments nor its result.
  added: { args: null, kwargs: null, result: null },
  failure: /ValueError: interop failure/,
  // The failed first attempt is reported as the retry alone (no task.failed);
  // Huey re-enqueues it in the consumer, whose task.received names its arguments.
  retriedEvents: ['task.retried', 'task.received', 'task.succeeded'],
  // Revoke-by-id keeps a pending task from starting (it cannot stop a running
  // one). Scheduled 2 s ahead, the task reaches svc as received when the
  // consumer schedules it, and as revoked when it comes due and is skipped.
  cancel: { sleepy: ['1', '2'], before: 'received', after: 'revoked' },
  // Huey keeps no arguments to replay: the adapter re-enqueues the task by its
  // name with both override halves, or refuses the retry.
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.new_task_id),
  },
  capabilities: ['submit_task', 'retry_task', 'cancel_task', 'retry_by_reference_v1'],
  actions: {
    noWorkers: 'z4j-huey 1.13 reports no workers',
    // The agent attests the retry contract, yet Huey keeps no arguments to replay: each item fails.
    bulkRetry: { count: 3, itemsFail: /huey adapter requires override_args\/kwargs to retry/, why: 'z4j-huey replays nothing by reference' },
  },
};
