// Background work of bulk jobs and operator actions:
//   - the bulk-job coordinator (every second, one leader): records answered retries, issues new ones
//   - hourly (one leader): Idempotency-Key answers past 24 h and spent or expired purge confirmations go
import { pruneIdempotencyKeys } from '../commands/idempotency.ts';
import { pruneConfirmations } from '../commands/operator.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { coordinate } from './service.ts';

const TICK_MS = 1000;
/** A tick works for at most this long; the lease outlives it. */
const BUDGET_MS = 4000;
const LEASE_MS = 15_000;

export function startBulkJobs(ctx: AppContext): void {
  every(
    ctx,
    'bulk-jobs',
    TICK_MS,
    async () => {
      if (!(await acquireLease(ctx.db, 'bulk-jobs', LEASE_MS))) return;
      const started = Date.now();
      await coordinate(ctx, BUDGET_MS, () => Date.now() - started < LEASE_MS / 2);
    },
    TICK_MS,
  );
  every(ctx, 'operator-actions-hygiene', 3600_000, async () => {
    if (!(await acquireLease(ctx.db, 'operator-actions-hygiene', 2 * 3600_000))) return;
    await pruneIdempotencyKeys(ctx.db);
    await pruneConfirmations(ctx);
  });
}
