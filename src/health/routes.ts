import { Elysia, t } from 'elysia';
import { jsonResponse } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { readiness } from './service.ts';

export const healthRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/health', detail: { tags: ['health'] } })
    // No I/O, no version: load balancers call this constantly.
    .get('', () => ({ status: 'ok' as const }), {
      response: t.Object({ status: t.Literal('ok') }),
      detail: { summary: 'Liveness: the process answers' },
    })
    .get(
      '/ready',
      async () => {
        const r = await readiness(ctx);
        return r.ok ? { status: 'ready' } : jsonResponse(503, { status: 'unready', reason: r.reason });
      },
      {
        detail: {
          summary: 'Readiness: startup finished and the database answers within 2 s',
          responses: {
            200: { description: '`{"status":"ready"}`' },
            503: { description: '`{"status":"unready","reason":"starting"|"database"}`' },
          },
        },
      },
    );
