// /api/v1/users: global administrators only. Among these routes only the two
// GETs accept an API key (users:read scope, owner an administrator); every
// mutation needs a browser session with a fresh MFA verification.
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { Success } from '../http/contract.ts';
import { Body, Email, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { createUser, getUser, listUsersPublic, patchUser, removeUser, setPassword, toUserPublic, UserPublic } from './service.ts';
import { NewPassword } from '../auth/passwords.ts';

const Id = Type.Object({ id: Uuid });
const READ = { user: { admin: true, scope: 'users:read' } } as const;
const WRITE = { user: { admin: true, freshMfa: true } } as const;
const POLICY_CODES = ['validation_failed'] as const;

export const userRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/users', detail: { tags: ['users'] } })
    .get('', async ({ query }) => listUsersPublic(ctx, query.limit ?? 100, query.offset ?? 0), {
      ...guarded(ctx, {
        summary: 'List users, newest first',
        access: READ,
        query: Type.Object({ limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })), offset: Type.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000 })) }),
        ok: Type.Array(UserPublic),
      }),
    })
    .get('/:id', async ({ params }) => toUserPublic(await getUser(ctx.db, params.id)), {
      ...guarded(ctx, { summary: 'One user', access: READ, params: Id, ok: UserPublic, errors: { 404: ['not_found'] } }),
    })
    .post(
      '',
      async ({ request, body, set }) => {
        const user = await createUser(ctx, body, actorOf(ctx, request, callerOf(request)));
        set.status = 201;
        return user;
      },
      {
        ...guarded(ctx, {
          summary: 'Create a user (no project memberships yet); 422 when the password breaks the policy',
          access: WRITE,
          body: Body({
            email: Email,
            password: NewPassword(ctx.config.SVC_PASSWORD_MIN_LENGTH),
            first_name: Type.Optional(Type.String({ maxLength: 100 })),
            last_name: Type.Optional(Type.String({ maxLength: 100 })),
            display_name: Type.Optional(Type.String({ maxLength: 200 })),
            is_admin: Type.Optional(Type.Boolean()),
            timezone: Type.Optional(Type.String({ maxLength: 64 })),
          }),
          ok: UserPublic,
          status: 201,
          errors: { 409: ['email_taken'], 422: POLICY_CODES },
        }),
      },
    )
    .patch(
      '/:id',
      async ({ request, params, body }) => {
        const who = callerOf(request);
        return patchUser(ctx, params.id, body, who.user.id, actorOf(ctx, request, who));
      },
      {
        ...guarded(ctx, {
          summary: 'Change a user; 409 for self-demotion, self-deactivation or the last active administrator',
          access: WRITE,
          params: Id,
          // Unknown keys (an `email` among them) are dropped: the address never changes here.
          body: Type.Object(
            {
              first_name: Type.Optional(Type.String({ maxLength: 100 })),
              last_name: Type.Optional(Type.String({ maxLength: 100 })),
              display_name: Type.Optional(Type.String({ maxLength: 200 })),
              is_admin: Type.Optional(Type.Boolean()),
              is_active: Type.Optional(Type.Boolean()),
              timezone: Type.Optional(Type.String({ maxLength: 64 })),
            },
            { additionalProperties: true },
          ),
          ok: UserPublic,
          errors: { 404: ['not_found'], 409: ['self_demotion', 'self_deactivation', 'last_admin'] },
        }),
      },
    )
    .post(
      '/:id/password',
      async ({ request, params, body }) => {
        await setPassword(ctx, params.id, body.new_password, actorOf(ctx, request, callerOf(request)), 'user.password.reset');
        return { success: true as const };
      },
      {
        ...guarded(ctx, {
          summary: "Set a user's password; all of their sessions and remembered devices end",
          access: WRITE,
          params: Id,
          body: Body({ new_password: NewPassword(ctx.config.SVC_PASSWORD_MIN_LENGTH) }),
          ok: Success,
          errors: { 404: ['not_found'], 422: POLICY_CODES },
        }),
      },
    )
    .delete(
      '/:id',
      async ({ request, params }) => {
        const who = callerOf(request);
        await removeUser(ctx, params.id, who.user.id, actorOf(ctx, request, who));
        return { success: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Delete a user for good; their actor reference in surviving audit rows is anonymised',
          access: WRITE,
          params: Id,
          ok: Success,
          errors: { 404: ['not_found'], 409: ['self_delete', 'last_admin'] },
        }),
      },
    );
