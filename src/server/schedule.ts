// Periodic background jobs of one process: each runs on its own interval,
// never overlaps itself, logs a failing tick and carries on, and stops at
// shutdown. The job board keeps each job's last outcome for deep health and
// svc_background_task_error_active. Jobs only one process may run take a lease
// in their tick (platform/leases.ts); a job that missed its lease is started
// again as soon as this process takes that lease over.
import { nowIso } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { leaseAsker } from '../platform/leases.ts';
import { reportError } from '../telemetry/index.ts';
import type { AppContext } from './context.ts';

const log = logger('background');

/** Runs `tick` every `intervalMs` (first after `firstDelayMs`, default one interval) until shutdown. */
export function every(ctx: AppContext, name: string, intervalMs: number, tick: () => Promise<void>, firstDelayMs = intervalMs): void {
  let running = false;
  const status = ctx.jobs.register(name, intervalMs);
  // Labelled `task`, not `job`: Prometheus owns `job` (the scrape job) and would rename ours.
  const failing = ctx.metrics.gauge('svc_background_task_error_active', 'Background jobs whose last run failed (1), by task.', ['task']);
  failing.set({ task: name }, 0);
  const run = async () => {
    if (running) return;
    running = true;
    status.last_started_at = nowIso();
    try {
      // A lease this tick asks for and does not get is taken over by the lease keeper when its holder goes;
      // the keeper then runs this job at once (platform/leases.ts).
      await leaseAsker.run(() => void run(), tick);
      status.last_error = null;
      failing.set({ task: name }, 0);
    } catch (e) {
      const err = describeError(e);
      log.error({ job: name, err }, 'background job failed');
      reportError(e, { mechanism: 'background', job: name });
      status.last_error = String(err.message ?? 'failed').slice(0, 500);
      failing.set({ task: name }, 1);
    } finally {
      status.runs++;
      status.last_finished_at = nowIso();
      running = false;
    }
  };
  let timer: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(() => {
    void run();
    timer = setInterval(() => void run(), intervalMs);
    timer.unref();
  }, firstDelayMs);
  first.unref();
  ctx.lifecycle.onShutdown(name, () => {
    clearTimeout(first);
    clearInterval(timer);
  });
}
