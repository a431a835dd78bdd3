import { Elysia, t } from 'elysia';
import { authorize } from '../auth/guards.ts';
import { tooManyRequests } from '../http/errors.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import type { AppContext } from '../server/context.ts';
import { activityFeed } from './service.ts';

export const activityRoutes = (ctx: AppContext) => {
  // 60 requests a minute per user, per worker process (the spec's limit).
  const perUser = limiterFor(ctx, 'activity', 60, 60_000);
  return new Elysia({ detail: { tags: ['activity'] } }).get(
    '/api/v1/activity',
    async ({ request, query }) => {
      const who = await authorize(ctx, request);
      if (!perUser.take(who.user.id)) throw tooManyRequests(60, 'activity feed rate limit exceeded (60/min per worker)');
      return activityFeed(ctx, who, query);
    },
    {
      query: t.Object({
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
        since_cursor: t.Optional(t.String({ maxLength: 128 })),
        before_cursor: t.Optional(t.String({ maxLength: 128 })),
        project_slug: t.Optional(t.String({ maxLength: 63 })),
        action_prefix: t.Optional(t.String({ maxLength: 80 })),
      }),
      detail: { summary: 'Audit rows newest first, scoped to the caller; session only; 60 requests/min per user per worker' },
    },
  );
};
