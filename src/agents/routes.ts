// /api/v1/projects/{slug}/agents: list (viewer), mint and revoke (project
// admin, browser session with a fresh MFA verification; API keys refused),
// health samples (viewer).
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf } from '../auth/actor.ts';
import { Success } from '../http/contract.ts';
import { Body, ProjectPath, ProjectSlug, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { AgentHealthSample, AgentMintResponse, AgentPublic, agentHealth, getAgent, listAgents, mintAgent, revokeAgent } from './service.ts';

const AgentPath = Type.Object({ slug: ProjectSlug, agent_id: Uuid });
const READ = { user: { scope: 'agents:read' }, project: 'viewer' } as const;
const ADMIN = { user: { freshMfa: true }, project: 'admin' } as const;

export const agentRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/projects/:slug/agents', detail: { tags: ['agents'] } })
    .get('', ({ request }) => listAgents(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: 'Live agents of the project (revoked ones are hidden)', access: READ, params: ProjectPath, ok: Type.Array(AgentPublic) }),
    })
    .post(
      '',
      async ({ request, body, set }) => {
        const grant = grantOf(request);
        set.status = 201;
        return mintAgent(ctx, grant.project.id, body.name, actorOf(ctx, request, grant.who));
      },
      {
        ...guarded(ctx, {
          summary: 'Mint an agent: the token and hmac_secret are in this answer once and never again; 409 conflict on a duplicate name',
          access: ADMIN,
          params: ProjectPath,
          body: Body({ name: Type.String({ minLength: 1, maxLength: 200 }) }),
          ok: AgentMintResponse,
          status: 201,
          errors: { 409: ['conflict'] },
        }),
      },
    )
    .get('/:agent_id', ({ request, params }) => getAgent(ctx.db, grantOf(request).project.id, params.agent_id), {
      ...guarded(ctx, { summary: 'One agent', access: READ, params: AgentPath, ok: AgentPublic, errors: { 404: ['not_found'] } }),
    })
    .delete(
      '/:agent_id',
      async ({ request, params }) => {
        const grant = grantOf(request);
        await revokeAgent(ctx, grant.project.id, params.agent_id, actorOf(ctx, request, grant.who));
        return { success: true as const };
      },
      {
        ...guarded(ctx, {
          summary: 'Revoke an agent: committed first, then its connections are closed; the token stops working',
          access: ADMIN,
          params: AgentPath,
          ok: Success,
          errors: { 404: ['not_found'] },
        }),
      },
    )
    .get('/:agent_id/health', ({ request, params }) => agentHealth(ctx.db, grantOf(request).project.id, params.agent_id), {
      ...guarded(ctx, {
        summary: 'At most 100 health samples, newest first; 404 for revoked or foreign agents',
        access: READ,
        params: AgentPath,
        ok: Type.Array(AgentHealthSample),
        errors: { 404: ['not_found'] },
      }),
    });
