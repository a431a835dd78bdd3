// Periodic background jobs of one process: each runs on its own interval,
// never overlaps itself, logs a failing tick and carries on, and stops at
// shutdown.
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from './context.ts';

const log = logger('background');

/** Runs `tick` every `intervalMs` (first after `firstDelayMs`, default one interval) until shutdown. */
export function every(ctx: AppContext, name: string, intervalMs: number, tick: () => Promise<void>, firstDelayMs = intervalMs): void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      await tick();
    } catch (e) {
      log.error({ job: name, err: describeError(e) }, 'background job failed');
    } finally {
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
