// /api/v1/projects/{slug}/saved-views: the caller's own saved views of a dashboard page in a project. Any
// member (viewer and up) keeps their own; another user's view id is not found (404), a non-member gets the
// project's 404 as on every project route.
//
// API keys: reading takes `tasks:read` (a view is a query of the task list; the key acts as its owner).
// Writing takes a browser session: the scopes are `<resource>:<read|write>` and there is no write scope a
// saved view belongs under, while a read scope must not admit writes; so keys get 403 `api_key_not_allowed`.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { Success } from '../http/contract.ts';
import { ProjectSlug, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { NewSavedView, Page, SavedViewPatch, SavedViewPublic } from './schemas.ts';
import { createView, listViews, patchView, removeView, type Owner } from './service.ts';

const Path = Type.Object({ slug: ProjectSlug });
const ViewPath = Type.Object({ slug: ProjectSlug, view_id: Uuid });
const READ = { user: { scope: 'tasks:read' }, project: 'viewer' } as const;
const WRITE = { user: {}, project: 'viewer' } as const;

const ownerOf = (request: Request): Owner => {
  const grant = grantOf(request);
  return { userId: grant.who.user.id, projectId: grant.project.id };
};

export const savedViewRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/projects/:slug/saved-views', detail: { tags: ['saved views'] } })
    .get('', ({ request, query }) => listViews(ctx.db, ownerOf(request), query.page), {
      ...guarded(ctx, {
        summary: 'Your saved views in this project (of one page with ?page=), by page and name',
        access: READ,
        params: Path,
        query: Type.Object({ page: Type.Optional(Page) }),
        ok: Type.Array(SavedViewPublic),
      }),
    })
    .post(
      '',
      async ({ request, body, set }) => {
        set.status = 201;
        return createView(ctx.db, ownerOf(request), body);
      },
      {
        ...guarded(ctx, {
          summary: 'Save a view: a name and the page query; names are unique per page, at most 50 views per person and project',
          access: WRITE,
          params: Path,
          body: NewSavedView,
          ok: SavedViewPublic,
          status: 201,
          errors: { 409: ['name_taken', 'saved_view_limit'] },
        }),
      },
    )
    .patch('/:view_id', ({ request, params, body }) => patchView(ctx.db, ownerOf(request), params.view_id, body), {
      ...guarded(ctx, {
        summary: "Rename one of your views or replace its query; another user's view is not found",
        access: WRITE,
        params: ViewPath,
        body: SavedViewPatch,
        ok: SavedViewPublic,
        errors: { 409: ['name_taken'] },
      }),
    })
    .delete(
      '/:view_id',
      async ({ request, params }) => {
        await removeView(ctx.db, ownerOf(request), params.view_id);
        return { success: true as const };
      },
      { ...guarded(ctx, { summary: "Delete one of your views; another user's view is not found", access: WRITE, params: ViewPath, ok: Success }) },
    );
