// /api/v1/lookup: the Ctrl-K palette's look-up of tasks (by id), agents and workers (by name) in every
// project the caller sees (members: theirs; administrators: all; a project's API key: that project).
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { listProjects } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import { lookup, LookupAnswer } from './service.ts';

export const lookupRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['lookup'] } }).get('/api/v1/lookup', async ({ request, query }) => lookup(ctx.db, await listProjects(ctx, callerOf(request), false), query.q), {
    ...guarded(ctx, {
      summary: 'Tasks whose id is the text or starts with it (four characters or more), and agents and workers whose name holds it, in every project the caller sees',
      access: { user: { scope: 'tasks:read' } },
      query: Type.Object({ q: Type.String({ minLength: 2, maxLength: 200, description: 'a task id or its start, or a part of an agent or worker name' }) }),
      ok: LookupAnswer,
    }),
  });
