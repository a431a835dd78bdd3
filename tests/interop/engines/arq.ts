// arq with z4j-arq: app/arq/worker.py is the WorkerSettings module that arq's
// own CLI runs. At import it chains the adapter's on_job_start / after_job_end
// capture onto WorkerSettings; on_startup starts the agent
// (z4j_bare.install_agent). The adapter reports task.started, task.retried
// (arq's Retry), task.succeeded and task.failed, read from arq's stored result
// (keep_result > 0), and publishes the function name only: no arguments,
// result or exception text.
import { join } from 'node:path';
import type { Engine } from './engine.ts';

export const arq: Engine = {
  name: 'arq',
  app: 'arq',
  // arq's CLI configures only its own logger: the custom log dict adds a root
  // handler at INFO so the agent's lines show too.
  worker: (bin) => [join(bin, 'arq'), 'worker.WorkerSettings', '--custom-log-dict', 'worker.log_config'],
  // arq names a job by its function's name.
  names: { add: 'add', fail: 'fail', flaky: 'flaky' },
  // The adapter sends { task_name } only: svc shows no arguments and no result.
  added: { args: null, kwargs: null, result: null },
  // arq stores the exception (ValueError: interop failure: ...), but z4j-arq
  // does not send it: svc shows the failure without exception text.
  failure: null,
  retriedEvents: ['task.retried', 'task.succeeded'],
  // Job.abort on a running job (worker allow_abort_jobs=True): arq cancels it
  // and stores a failed result, which the adapter reports as task.failed; the
  // command's result is { task_id, aborted: true }. A job aborted before it
  // starts runs no hook, so no event would show the cancel.
  cancel: { sleepy: ['5'], before: 'started', after: 'failure' },
  // No native retry: z4j-bare lowers retry_task to the adapter's submit_task when
  // both argument halves are given again; the result is { task_id, engine }.
  // z4j-arq attests no retry contract: svc delivers such a retry all the same,
  // as it replays nothing by reference. The re-run shows no arguments (never sent).
  retry: {
    body: (args) => ({ override_args: args, override_kwargs: {} }),
    newTaskId: (result) => String(result.task_id),
    rerun: () => ({ args: null }),
  },
  capabilities: ['submit_task', 'cancel_task'],
  actions: {
    noWorkers: 'z4j-arq 1.13 reports no workers',
    bulkRetry: { undeliverable: 'z4j-arq has no retry_task and attests no retry contract' },
  },
};
