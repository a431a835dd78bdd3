// Background work of one process, started after migrations and stopped at
// shutdown (see schedule.ts for how each job runs).
import { startAuditJobs } from '../audit/jobs.ts';
import { startScheduleJobs } from '../schedules/jobs.ts';
import { startStatsJobs } from '../stats/jobs.ts';
import { startAgentJobs } from '../transport/jobs.ts';
import { startBulkJobs } from '../bulk/jobs.ts';
import { startTaskRetention } from '../tasks/retention.ts';
import type { AppContext } from './context.ts';

export async function startBackground(ctx: AppContext): Promise<void> {
  await startAuditJobs(ctx);
  await startAgentJobs(ctx);
  startBulkJobs(ctx);
  startTaskRetention(ctx);
  startStatsJobs(ctx);
  await startScheduleJobs(ctx);
}
