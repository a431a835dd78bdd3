// Background work of one process, started after migrations and stopped at
// shutdown. Each job runs on its own interval; a failing tick is logged and
// the job carries on.
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from './context.ts';

const log = logger('background');

export interface BackgroundInfo {
  baseUrl: string;
  workerIndex: number;
}

/** Runs `tick` every `intervalMs` until shutdown; never overlaps itself. */
export function every(ctx: AppContext, name: string, intervalMs: number, tick: () => Promise<void>): void {
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      await tick();
    } catch (e) {
      log.error({ job: name, err: describeError(e) }, 'background job failed');
    } finally {
      running = false;
    }
  }, intervalMs);
  timer.unref();
  ctx.lifecycle.onShutdown(name, () => clearInterval(timer));
}

export async function startBackground(ctx: AppContext, _info: BackgroundInfo): Promise<void> {
  if (ctx.db.dialect === 'sqlite') {
    // Keep the WAL file from growing without bound under steady writes.
    every(ctx, 'sqlite-wal-checkpoint', 5 * 60_000, () => ctx.db.checkpoint());
  }
}
