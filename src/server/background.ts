// Background work of one process, started after migrations and stopped at
// shutdown (see schedule.ts for how each job runs).
import { startAuditJobs } from '../audit/jobs.ts';
import { startAgentJobs } from '../transport/jobs.ts';
import type { AppContext } from './context.ts';

export async function startBackground(ctx: AppContext): Promise<void> {
  await startAuditJobs(ctx);
  await startAgentJobs(ctx);
}
