// /api/v1/projects/{slug}/bulk-jobs: durable bulk retries over a task filter
// (create and abort: operator; list, progress and items: viewer), and
// /api/v1/projects/{slug}/tasks/bulk-delete (project admin; svc's records only).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { answer, IDEMPOTENCY_ERRORS, IdempotencyHeaders, idempotent } from '../commands/idempotency.ts';
import { ADMISSION_ERRORS } from '../commands/admission.ts';
import { ProjectPath, ProjectSlug, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { BulkDeleteRequest, BulkDeleteResult, bulkDeleteTasks } from './delete.ts';
import {
  abortBulkJob,
  BulkItemPage,
  BulkItemStatusSchema,
  bulkJobItems,
  BulkJobPage,
  BulkJobPublic,
  BulkJobStatusSchema,
  createBulkJob,
  CreateBulkJob,
  getBulkJob,
  listBulkJobs,
} from './service.ts';

const READ = { user: { scope: 'commands:read' }, project: 'viewer' } as const;
const WRITE = { user: { scope: 'commands:write' }, project: 'operator' } as const;
const JobPath = Type.Object({ slug: ProjectSlug, job_id: Uuid });

export const bulkRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/projects/:slug', detail: { tags: ['bulk jobs'] } })
    .post(
      '/bulk-jobs',
      async ({ request, body, set }) => {
        const { who, project } = grantOf(request);
        return answer(set, await idempotent(ctx, request, { projectId: project.id, who }, body, 201, () => createBulkJob(ctx, project.id, body, actorOf(ctx, request, who))));
      },
      guarded(ctx, {
        summary: 'Start a bulk retry of the tasks a filter matches now (frozen into items, at most SVC_BULK_JOB_MAX_TASKS); a leader issues the retries with at most max_in_flight unanswered',
        access: WRITE,
        params: ProjectPath,
        body: CreateBulkJob,
        checkedByHandler: { headers: IdempotencyHeaders },
        ok: BulkJobPublic,
        status: 201,
        errors: { 404: ['not_found'], 409: [...ADMISSION_ERRORS, 'no_match', ...IDEMPOTENCY_ERRORS] },
      }),
    )
    .get('/bulk-jobs', ({ request, query }) => listBulkJobs(ctx.db, grantOf(request).project.id, query), {
      ...guarded(ctx, {
        summary: 'Bulk jobs newest first, with their progress',
        access: READ,
        params: ProjectPath,
        query: Type.Object({
          status: Type.Optional(BulkJobStatusSchema),
          cursor: Type.Optional(Type.String({ maxLength: 128 })),
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 200 })),
        }),
        ok: BulkJobPage,
      }),
    })
    .get('/bulk-jobs/:job_id', ({ request, params }) => getBulkJob(ctx.db, grantOf(request).project.id, params.job_id), {
      ...guarded(ctx, { summary: 'One bulk job with its progress', access: READ, params: JobPath, ok: BulkJobPublic, errors: { 404: ['not_found'] } }),
    })
    .get('/bulk-jobs/:job_id/items', ({ request, params, query }) => bulkJobItems(ctx.db, grantOf(request).project.id, params.job_id, query), {
      ...guarded(ctx, {
        summary: "A bulk job's tasks in order, each with its status, command and result",
        access: READ,
        params: JobPath,
        query: Type.Object({
          status: Type.Optional(BulkItemStatusSchema),
          cursor: Type.Optional(Type.String({ maxLength: 16 })),
          limit: Type.Optional(t.Integer({ minimum: 1, maximum: 1000 })),
        }),
        ok: BulkItemPage,
        errors: { 404: ['not_found'] },
      }),
    })
    .post(
      '/bulk-jobs/:job_id/abort',
      ({ request, params }) => {
        const { who, project } = grantOf(request);
        return abortBulkJob(ctx, project.id, params.job_id, actorOf(ctx, request, who));
      },
      guarded(ctx, {
        summary: 'Abort a bulk job: tasks not issued yet are skipped; retries in flight still record their answers',
        access: WRITE,
        params: JobPath,
        ok: BulkJobPublic,
        errors: { 404: ['not_found'], 409: ['job_finished'] },
      }),
    )
    .post(
      '/tasks/bulk-delete',
      async ({ request, body, set }) => {
        const { who, project } = grantOf(request);
        return answer(set, await idempotent(ctx, request, { projectId: project.id, who }, body, 200, () => bulkDeleteTasks(ctx, project.id, body.filter, actorOf(ctx, request, who))));
      },
      guarded(ctx, {
        summary: "Delete svc's stored tasks (and their events) a filter matches, at most SVC_BULK_JOB_MAX_TASKS per request; the engines are not touched",
        access: { user: { scope: 'admin:*' }, project: 'admin' },
        params: ProjectPath,
        body: BulkDeleteRequest,
        checkedByHandler: { headers: IdempotencyHeaders },
        ok: BulkDeleteResult,
        errors: { 409: [...IDEMPOTENCY_ERRORS] },
      }),
    );
