// /api/v1/projects/{slug}/stats, /trends, /failure-groups (viewer; API keys
// with tasks:read) and /api/v1/home (every project the caller sees).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { callerOf, grantOf, guarded } from '../access/guard.ts';
import { ProjectPath, ProjectSlug } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { BucketParam, FailedTaskPage, FailureGroups, GroupKey, HomeSummary, ProjectStats, Trends, WindowParam, type BucketName, type WindowName } from './schemas.ts';
import { failureGroups, failureGroupTasks, homeSummary, projectStats, trends } from './service.ts';

const READ = { user: { scope: 'tasks:read' }, project: 'viewer' } as const;
const Window = Type.Optional(WindowParam);
const BAD_BUCKET = { 422: ['validation_failed'] } as const;

export const statsRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['stats'] } })
    .get(
      '/api/v1/projects/:slug/stats',
      ({ request, query }) => {
        const g = grantOf(request);
        return projectStats(ctx, g.who, g.project, (query.window ?? '24h') as WindowName);
      },
      {
        ...guarded(ctx, {
          summary: 'Task counts, failure rate, throughput and runtime percentiles over a window, agents and workers online, stuck commands and what needs attention',
          access: READ,
          params: ProjectPath,
          query: Type.Object({ window: Window }),
          ok: ProjectStats,
        }),
      },
    )
    .get(
      '/api/v1/projects/:slug/trends',
      ({ request, query }) =>
        trends(ctx.db, ctx.config, grantOf(request).project.id, {
          window: query.window as WindowName | undefined,
          bucket: query.bucket as BucketName | 'auto' | undefined,
          ...(query.task_name !== undefined ? { task_name: query.task_name } : {}),
        }),
      {
        ...guarded(ctx, {
          summary: 'Throughput, failures, failure rate and runtime p50/p95 per bucket over a window, for the project or one task name',
          access: READ,
          params: ProjectPath,
          query: Type.Object({ window: Window, bucket: Type.Optional(BucketParam), task_name: Type.Optional(Type.String({ maxLength: 500 })) }),
          ok: Trends,
          errors: BAD_BUCKET,
        }),
      },
    )
    .get(
      '/api/v1/projects/:slug/failure-groups',
      ({ request, query }) =>
        failureGroups(ctx.db, ctx.config, grantOf(request).project.id, {
          window: query.window as WindowName | undefined,
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
          ...(query.task_name !== undefined ? { task_name: query.task_name } : {}),
        }),
      {
        ...guarded(ctx, {
          summary: 'Failures over a window grouped by exception type and normalised message, most failures first, each with its task names and a sparkline',
          access: READ,
          params: ProjectPath,
          query: Type.Object({
            window: Window,
            limit: Type.Optional(t.Integer({ minimum: 1, maximum: 200 })),
            task_name: Type.Optional(Type.String({ maxLength: 500 })),
          }),
          ok: FailureGroups,
        }),
      },
    )
    .get(
      '/api/v1/projects/:slug/failure-groups/:group_key/tasks',
      ({ request, params, query }) =>
        failureGroupTasks(ctx.db, grantOf(request).project.id, params.group_key, {
          window: query.window as WindowName | undefined,
          ...(query.cursor !== undefined ? { cursor: query.cursor } : {}),
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
        }),
      {
        ...guarded(ctx, {
          summary: "A failure group's failed tasks, newest failure first, keyset-paged with next_cursor",
          access: READ,
          params: Type.Object({ slug: ProjectSlug, group_key: GroupKey }),
          query: Type.Object({
            window: Window,
            cursor: Type.Optional(Type.String({ maxLength: 1024 })),
            limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })),
          }),
          ok: FailedTaskPage,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .get('/api/v1/home', ({ request, query }) => homeSummary(ctx, callerOf(request), (query.window ?? '24h') as WindowName), {
      ...guarded(ctx, {
        summary: 'Every project the caller sees (members: theirs; administrators: all) with its figures over a window, what needs attention first',
        access: { user: { scope: 'tasks:read' } },
        query: Type.Object({ window: Window }),
        ok: HomeSummary,
      }),
    });
