// POST /api/v1/admin/audit/verify: the dashboard's "verify the audit chain"
// button. Global administrators with a session; the walk yields between
// pages so a long chain does not stall other requests.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { Answer, Nullable } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { IN_SERVICE, verifyChain } from './verify.ts';

export const AuditVerification = Answer(
  {
    clean: Type.Boolean(),
    rows_verified: Type.Integer(),
    frozen_rows: Type.Integer(),
    first_bad_row_id: Nullable(Type.String()),
    findings: Type.Array(Type.String()),
    duration_ms: Type.Integer(),
  },
  'AuditVerification',
);

export const auditRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['audit'] } }).post(
    '/api/v1/admin/audit/verify',
    async ({ request }) => {
      const who = callerOf(request);
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
    { ...guarded(ctx, { summary: 'Walk the whole audit chain now and report (global administrators)', access: { user: { admin: true } }, ok: AuditVerification }) },
  );
