import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../http/contract.ts';
import { ApiError } from '../http/errors.ts';
import { safeEqual } from '../lib/crypto.ts';
import type { AppContext } from '../server/context.ts';

/** /metrics: bearer-gated unless SVC_METRICS_PUBLIC; compared in constant time. */
export const metricsRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['metrics'] } }).get(
    '/metrics',
    async ({ request }) => {
      if (!ctx.config.SVC_METRICS_PUBLIC) {
        const header = request.headers.get('authorization') ?? '';
        const [scheme, token] = header.trim().split(/\s+/);
        const expected = ctx.config.SVC_METRICS_AUTH_TOKEN;
        if (scheme?.toLowerCase() !== 'bearer' || !token || expected === '' || !safeEqual(token, expected)) {
          throw new ApiError(401, 'unauthenticated', 'a valid metrics bearer token is required', {}, { 'www-authenticate': 'Bearer realm="svc-metrics"' });
        }
      }
      return new Response(await ctx.metrics.text(), { headers: { 'content-type': ctx.metrics.registry.contentType } });
    },
    { ...contract({ summary: 'Metrics in the text exposition format', access: { metrics: true }, ok: Type.String(), media: 'text/plain' }) },
  );
