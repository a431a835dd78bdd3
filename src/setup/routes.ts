import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../http/contract.ts';
import { Answer, Body, Email } from '../http/schemas.ts';
import { ProjectPublic } from '../projects/schemas.ts';
import { UserPublic } from '../users/service.ts';
import { actorOf } from '../auth/actor.ts';
import { isSecureRequest, withCookies } from '../auth/cookies.ts';
import { principalOf } from '../auth/principal.ts';
import { unauthorized } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { SETUP_CLOSED_HTML, setupPage } from './page.ts';
import { completeSetup, setupClosed, setupOpen } from './service.ts';
import { NewPassword } from '../auth/passwords.ts';

const html = (body: string, status: number, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', ...headers } });

const PUBLIC = { public: true } as const;
export const SetupStatus = Answer({ first_boot: Type.Boolean() }, 'SetupStatus');
const SetupDone = Answer({ user: UserPublic, project: ProjectPublic }, 'SetupDone');

export const setupRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['setup'] } })
    .get(
      '/setup',
      async () => {
        if (!(await setupOpen(ctx.db))) return html(SETUP_CLOSED_HTML, 404);
        const page = setupPage();
        return html(page.html, 200, { 'content-security-policy': page.csp });
      },
      { ...contract({ summary: 'First-boot setup form (404 once setup is complete)', access: PUBLIC, ok: Type.String(), media: 'text/html', answers: { 404: Type.String() } }) },
    )
    .get(
      '/api/v1/setup/status',
      async ({ request }) => {
        if (await setupOpen(ctx.db)) return { first_boot: true };
        if (!(await principalOf(ctx, request))) throw unauthorized();
        return { first_boot: false };
      },
      {
        ...contract({
          summary: 'Whether first-boot setup is open (anonymous callers get 401 once it is closed)',
          access: PUBLIC,
          ok: SetupStatus,
          errors: { 401: ['unauthenticated', 'invalid_api_key'] },
        }),
      },
    )
    .post(
      '/api/v1/setup/complete',
      async ({ request, body }) => {
        const result = await completeSetup(ctx, body, actorOf(ctx, request, null));
        return withCookies(201, { user: result.user, project: result.project }, result.session.cookies(isSecureRequest(ctx, request)));
      },
      {
        ...contract({
          summary: 'Create the first administrator and the default project with the one-shot token; signs in',
          access: PUBLIC,
          body: Body({
            token: Type.String({ minLength: 10, maxLength: 200 }),
            email: Email,
            password: NewPassword(ctx.config.SVC_PASSWORD_MIN_LENGTH),
            display_name: Type.Optional(Type.String({ maxLength: 200 })),
            first_name: Type.Optional(Type.String({ maxLength: 100 })),
            last_name: Type.Optional(Type.String({ maxLength: 100 })),
            timezone: Type.Optional(Type.String({ maxLength: 64 })),
          }),
          ok: SetupDone,
          status: 201,
          errors: { 403: ['invalid_setup_token'], 409: ['conflict'], 429: ['rate_limited'] },
        }),
        // Once setup is closed every completion is answered 409, before the body's fields are
        // checked (transform runs ahead of validation): a malformed token must not read as 422.
        transform: async () => {
          if (!(await setupOpen(ctx.db))) throw setupClosed();
        },
      },
    );
