// /api/v1/users: global administrators only. Among these routes only the two
// GETs accept an API key (users:read scope, owner an administrator); every
// mutation needs a browser session with a fresh MFA verification.
import { Type } from '@sinclair/typebox';
import { Body } from '../http/schemas.ts';
import { Elysia, t } from 'elysia';
import { actorOf } from '../auth/actor.ts';
import { authorize } from '../auth/guards.ts';
import type { AppContext } from '../server/context.ts';
import { createUser, getUser, listUsersPublic, patchUser, removeUser, setPassword, toUserPublic } from './service.ts';

const Id = t.Object({ id: t.String({ format: 'uuid' }) });

export const userRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/users', detail: { tags: ['users'] } })
    .get(
      '',
      async ({ request, query }) => {
        await authorize(ctx, request, { admin: true, scope: 'users:read' });
        return listUsersPublic(ctx, query.limit ?? 100, query.offset ?? 0);
      },
      {
        query: t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 500 })), offset: t.Optional(t.Integer({ minimum: 0 })) }),
        detail: { summary: 'List users, newest first' },
      },
    )
    .get(
      '/:id',
      async ({ request, params }) => {
        await authorize(ctx, request, { admin: true, scope: 'users:read' });
        return toUserPublic(await getUser(ctx.db, params.id));
      },
      { params: Id },
    )
    .post(
      '',
      async ({ request, body, set }) => {
        const who = await authorize(ctx, request, { admin: true, freshMfa: true });
        const user = await createUser(ctx, body, actorOf(ctx, request, who));
        set.status = 201;
        return user;
      },
      {
        body: Body({
          email: Type.String({ minLength: 3, maxLength: 320 }),
          password: Type.String({ minLength: 1, maxLength: 1024 }),
          first_name: Type.Optional(Type.String({ maxLength: 100 })),
          last_name: Type.Optional(Type.String({ maxLength: 100 })),
          display_name: Type.Optional(Type.String({ maxLength: 200 })),
          is_admin: Type.Optional(Type.Boolean()),
          timezone: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        detail: { summary: 'Create a user (no project memberships yet); 422 when the password breaks the policy' },
      },
    )
    .patch(
      '/:id',
      async ({ request, params, body }) => {
        const who = await authorize(ctx, request, { admin: true, freshMfa: true });
        return patchUser(ctx, params.id, body, who.user.id, actorOf(ctx, request, who));
      },
      {
        params: Id,
        // Unknown keys (an `email` among them) are dropped: the address never changes here.
        body: Type.Object({
          first_name: Type.Optional(Type.String({ maxLength: 100 })),
          last_name: Type.Optional(Type.String({ maxLength: 100 })),
          display_name: Type.Optional(Type.String({ maxLength: 200 })),
          is_admin: Type.Optional(Type.Boolean()),
          is_active: Type.Optional(Type.Boolean()),
          timezone: Type.Optional(Type.String({ maxLength: 64 })),
        }, { additionalProperties: true }),
        detail: { summary: 'Change a user; 409 for self-demotion, self-deactivation or the last active administrator' },
      },
    )
    .post(
      '/:id/password',
      async ({ request, params, body }) => {
        const who = await authorize(ctx, request, { admin: true, freshMfa: true });
        await setPassword(ctx, params.id, body.new_password, actorOf(ctx, request, who), 'user.password.reset');
        return { success: true };
      },
      {
        params: Id,
        body: Body({ new_password: Type.String({ minLength: 1, maxLength: 1024 }) }),
        detail: { summary: "Set a user's password; all of their sessions and remembered devices end" },
      },
    )
    .delete(
      '/:id',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { admin: true, freshMfa: true });
        await removeUser(ctx, params.id, who.user.id, actorOf(ctx, request, who));
        return { success: true };
      },
      { params: Id, detail: { summary: 'Delete a user for good; their actor reference in surviving audit rows is anonymised' } },
    );
