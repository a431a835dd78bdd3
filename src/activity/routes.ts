import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { tooManyRequests } from '../http/errors.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import type { AppContext } from '../server/context.ts';
import { ActivityPage, activityFeed } from './service.ts';

export const activityRoutes = (ctx: AppContext) => {
  // 60 requests a minute per user, per worker process (the spec's limit).
  const perUser = limiterFor(ctx, 'activity', 60, 60_000);
  return new Elysia({ detail: { tags: ['activity'] } }).get(
    '/api/v1/activity',
    async ({ request, query }) => {
      const who = callerOf(request);
      if (!perUser.take(who.user.id)) throw tooManyRequests(60, 'activity feed rate limit exceeded (60/min per worker)');
      return activityFeed(ctx, who, query);
    },
    {
      ...guarded(ctx, {
        summary: 'Audit rows newest first, scoped to the caller; session only; 60 requests/min per user per worker',
        access: { user: {} },
        query: Type.Object({
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 200 })),
          since_cursor: Type.Optional(Type.String({ maxLength: 128 })),
          before_cursor: Type.Optional(Type.String({ maxLength: 128 })),
          project_slug: Type.Optional(Type.String({ maxLength: 63 })),
          action_prefix: Type.Optional(Type.String({ maxLength: 80 })),
        }),
        ok: ActivityPage,
        errors: { 429: ['rate_limited'] },
      }),
    },
  );
};
