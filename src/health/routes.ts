import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../http/contract.ts';
import { jsonResponse } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { readiness } from './service.ts';

const Unready = Type.Object({ status: Type.Literal('unready'), reason: Type.Union([Type.Literal('starting'), Type.Literal('database')]) }, { additionalProperties: false });

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
    );
