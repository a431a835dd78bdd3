import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../http/contract.ts';
import { ApiError } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { bearsMetricsToken } from './token.ts';
import { workerMetrics } from './workers.ts';

/** /metrics: bearer-gated unless SVC_METRICS_PUBLIC; compared in constant time. */
export const metricsRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['metrics'] } }).get(
    '/metrics',
    async ({ request }) => {
      if (!ctx.config.SVC_METRICS_PUBLIC && !bearsMetricsToken(ctx.config, request)) {
        throw new ApiError(401, 'unauthenticated', 'a valid metrics bearer token is required', {}, { 'www-authenticate': 'Bearer realm="svc-metrics"' });
      }
      // With --workers N: every process's figures, merged.
      const text = await workerMetrics(ctx.metrics, ctx.paths.runDir, ctx.worker).text();
      return new Response(text, { headers: { 'content-type': ctx.metrics.registry.contentType } });
    },
    { ...contract({ summary: 'Metrics in the text exposition format', access: { metrics: true }, ok: Type.String(), media: 'text/plain' }) },
  );
