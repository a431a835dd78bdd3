// Upkeep of the statistics tables, run by one leader (lease `stats-maintenance`)
// every five minutes: minute rows older than SVC_STATS_MINUTE_RETENTION_HOURS
// go (the hour rows written beside them at ingest stay), hour rows, failure
// groups and failed-task lists older than SVC_STATS_RETENTION_DAYS go. Deletes
// run in small transactions, so ingest never waits long behind them.
import type { Config } from '../config/load.ts';
import type { Db } from '../db/connect.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { logger } from '../lib/log.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { HOUR, MINUTE, projectIdsWithStats, pruneAggregates, pruneFailedTasks, pruneFailureAggregates, pruneFailureGroups, type Span } from './store.ts';

const log = logger('stats.jobs');
export const STATS_MAINTENANCE_INTERVAL_MS = 300_000;
const BATCH = 2000;

export interface Pruned {
  minute_rows: number;
  hour_rows: number;
  failed_tasks: number;
  failure_groups: number;
}

/** Deletes `batch`-sized slices until `step` deletes fewer than a batch; returns the total. */
async function drain(db: Db, step: (tx: Parameters<Parameters<Db['tx']>[0]>[0]) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await db.tx(step);
    total += n;
    if (n < BATCH) return total;
    await Bun.sleep(0); // let waiting writers (ingest) in between slices
  }
}

export type StatsRetention = Pick<Config, 'SVC_STATS_RETENTION_DAYS' | 'SVC_STATS_MINUTE_RETENTION_HOURS'>;

/** Where retention stands at `now` (epoch seconds): the rows of each span whose bucket starts before its
 * cutoff are pruned (or will be on the next pass); from the cutoff on they are kept. */
export function retentionCutoffs(config: StatsRetention, now: number): Record<Span, number> {
  return {
    [MINUTE]: Math.floor((now - config.SVC_STATS_MINUTE_RETENTION_HOURS * 3600) / MINUTE) * MINUTE,
    [HOUR]: Math.floor((now - config.SVC_STATS_RETENTION_DAYS * 86_400) / HOUR) * HOUR,
  };
}

/** One maintenance pass (no lease: the caller holds it). */
export async function pruneStats(db: Db, config: StatsRetention, nowUs = nowMicros()): Promise<Pruned> {
  const { [MINUTE]: minuteCutoff, [HOUR]: hourCutoff } = retentionCutoffs(config, Math.floor(nowUs / 1_000_000));
  const isoCutoff = isoMicros(hourCutoff * 1_000_000);
  const out: Pruned = { minute_rows: 0, hour_rows: 0, failed_tasks: 0, failure_groups: 0 };
  for (const { id } of await projectIdsWithStats(db)) {
    out.minute_rows += await drain(db, async (tx) => (await pruneAggregates(tx, id, MINUTE, minuteCutoff, BATCH)) + (await pruneFailureAggregates(tx, id, MINUTE, minuteCutoff, BATCH)));
    out.hour_rows += await drain(db, async (tx) => (await pruneAggregates(tx, id, HOUR, hourCutoff, BATCH)) + (await pruneFailureAggregates(tx, id, HOUR, hourCutoff, BATCH)));
    out.failed_tasks += await drain(db, (tx) => pruneFailedTasks(tx, id, isoCutoff, BATCH));
    out.failure_groups += await drain(db, (tx) => pruneFailureGroups(tx, id, isoCutoff, BATCH));
  }
  return out;
}

export function startStatsJobs(ctx: AppContext): void {
  every(ctx, 'stats-maintenance', STATS_MAINTENANCE_INTERVAL_MS, async () => {
    if (!(await acquireLease(ctx.db, 'stats-maintenance', 2 * STATS_MAINTENANCE_INTERVAL_MS))) return;
    const pruned = await pruneStats(ctx.db, ctx.config);
    if (Object.values(pruned).some((n) => n > 0)) log.info(pruned, 'pruned task statistics past retention');
  });
}
