// The audit module's background work: the scheduled chain verification and
// retention pruning, each run by one leader process at a time.
import { logger } from '../lib/log.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { acquireLease } from '../platform/leases.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { AuditForwarder } from './forwarder.ts';
import { prune } from './maintenance.ts';
import { IN_SERVICE, verifyChain } from './verify.ts';

const log = logger('audit');

/** The verifier's metrics; registered only while it is enabled. */
function verifierMetrics(ctx: AppContext) {
  return {
    outcomes: ctx.metrics.counter('svc_audit_chain_verifications_total', 'Scheduled audit chain verifications by outcome.', ['outcome']),
    rows: ctx.metrics.gauge('svc_audit_chain_rows_verified', 'Rows walked by the latest scheduled audit chain verification.'),
  };
}

/** One scheduled verification: metrics and logs, never an exception. */
export async function scheduledVerification(ctx: AppContext): Promise<'clean' | 'failed' | 'error'> {
  const { outcomes, rows } = verifierMetrics(ctx);
  let outcome: 'clean' | 'failed' | 'error';
  try {
    const report = await verifyChain(ctx.db, ctx.audit.keyring, IN_SERVICE);
    rows.set(report.rowsVerified);
    outcome = report.clean ? 'clean' : 'failed';
    if (report.clean) log.info({ rows: report.rowsVerified }, 'audit chain verified');
    else log.error({ rows: report.rowsVerified, first_bad_row: report.firstBadRowId, findings: report.findings.slice(0, 10) }, 'audit chain verification FAILED');
  } catch (e) {
    outcome = 'error';
    log.error({ err: describeError(e) }, 'audit chain verification could not run');
  }
  outcomes.inc({ outcome });
  return outcome;
}

/** Prunes rows past SVC_AUDIT_RETENTION_DAYS, in batches, at most `maxPerPass`. */
export async function retentionPass(ctx: AppContext, maxPerPass = 200_000): Promise<number> {
  const days = ctx.config.SVC_AUDIT_RETENTION_DAYS;
  if (days === 0) return 0;
  const cutoff = isoMicros(nowMicros() - days * 86_400_000_000);
  let total = 0;
  for (;;) {
    const n = await prune(ctx.db, ctx.audit.keyring, cutoff, 5000);
    total += n;
    if (n < 5000 || total >= maxPerPass) break;
    await new Promise((r) => setImmediate(r));
  }
  if (total > 0) log.info({ pruned: total, cutoff }, 'pruned audit rows past retention');
  return total;
}

export async function startAuditJobs(ctx: AppContext): Promise<void> {
  const forwarder = AuditForwarder.fromConfig(ctx.config, ctx.metrics);
  if (forwarder) {
    await forwarder.start();
    ctx.audit.setSink(forwarder);
    ctx.lifecycle.onShutdown('audit-forwarder', () => forwarder.stop());
  }
  if (ctx.config.SVC_AUDIT_CHAIN_VERIFY_ENABLED) {
    const { outcomes } = verifierMetrics(ctx);
    for (const outcome of ['clean', 'failed', 'error']) outcomes.inc({ outcome }, 0);
    const intervalMs = ctx.config.SVC_AUDIT_CHAIN_VERIFY_INTERVAL_SECONDS * 1000;
    // The lease outlives one interval so a single leader keeps it between runs.
    every(
      ctx,
      'audit-chain-verify',
      intervalMs,
      async () => {
        if (await acquireLease(ctx.db, 'audit-chain-verify', intervalMs * 2)) await scheduledVerification(ctx);
      },
      60_000,
    );
  }
  every(ctx, 'audit-retention', 3600_000, async () => {
    if (await acquireLease(ctx.db, 'audit-retention', 7200_000)) await retentionPass(ctx);
  });
}
