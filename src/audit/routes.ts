// POST /api/v1/admin/audit/verify: the dashboard's "verify the audit chain"
// button. Global administrators with a session; the walk yields between
// pages so a long chain does not stall other requests.
import { Elysia } from 'elysia';
import { actorOf } from '../auth/actor.ts';
import { authorize } from '../auth/guards.ts';
import type { AppContext } from '../server/context.ts';
import { IN_SERVICE, verifyChain } from './verify.ts';

export const auditRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['audit'] } }).post(
    '/api/v1/admin/audit/verify',
    async ({ request }) => {
      const who = await authorize(ctx, request, { admin: true });
      const started = performance.now();
      const report = await verifyChain(ctx.db, ctx.audit.keyring, IN_SERVICE);
      await ctx.audit.record(ctx.db, {
        ...actorOf(ctx, request, who),
        action: 'audit.verified',
        result: report.clean ? 'success' : 'failed',
        target_type: 'audit_chain',
        metadata: { rows: report.rowsVerified, findings: report.findings.length },
      });
      return {
        clean: report.clean,
        rows_verified: report.rowsVerified,
        frozen_rows: report.frozenRows,
        first_bad_row_id: report.firstBadRowId,
        findings: report.findings,
        duration_ms: Math.round(performance.now() - started),
      };
    },
    { detail: { summary: 'Walk the whole audit chain now and report (global administrators)' } },
  );
