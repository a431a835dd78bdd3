import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { guarded } from '../access/guard.ts';
import { contract } from '../http/contract.ts';
import { jsonResponse } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { deepHealth } from './deep.ts';
import { DeepReport, SystemReport } from './schemas.ts';
import { readiness } from './service.ts';
import { systemReport } from './system.ts';

// Signed-in users (keys with health:read), or monitoring with the metrics token.
const SIGNED_IN = { user: { scope: 'health:read' }, metricsToken: true } as const;
export const Unready = Type.Object({ status: Type.Literal('unready'), reason: Type.Union([Type.Literal('starting'), Type.Literal('database')]) }, { additionalProperties: false });

export const healthRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/health', detail: { tags: ['health'] } })
    // No I/O, no version: load balancers call this constantly.
    .get('', () => ({ status: 'ok' as const }), {
      ...contract({ summary: 'Liveness: the process answers', access: { public: true }, ok: Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }) }),
    })
    .get(
      '/ready',
      async () => {
        const r = await readiness(ctx);
        return r.ok ? { status: 'ready' as const } : jsonResponse(503, { status: 'unready', reason: r.reason });
      },
      {
        ...contract({
          summary: 'Readiness: startup finished and the database answers within 2 s',
          access: { public: true },
          ok: Type.Object({ status: Type.Literal('ready') }, { additionalProperties: false }),
          answers: { 503: Unready },
        }),
      },
    )
    .get('/system', () => systemReport(ctx), {
      ...guarded(ctx, { summary: 'Version, runtime, operating system, database engine, size and connections, package versions', access: SIGNED_IN, ok: SystemReport }),
    })
    .get(
      '/deep',
      async () => {
        const report = await deepHealth(ctx);
        return report.status === 'ok' ? report : jsonResponse(503, report);
      },
      {
        ...guarded(ctx, {
          summary: "Every subsystem of this process checked within 2 s each; 503 when any failed (the audit entry checks the chain's state row only)",
          access: SIGNED_IN,
          ok: DeepReport,
          answers: { 503: DeepReport },
        }),
      },
    );
