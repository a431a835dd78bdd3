// /api/v1/projects/{slug}/agents: list (viewer), mint and revoke (project
// admin, browser session with a fresh MFA verification; API keys refused),
// health samples (viewer).
import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import { actorOf } from '../auth/actor.ts';
import { authorize } from '../auth/guards.ts';
import { Body } from '../http/schemas.ts';
import { projectAccess } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import { agentHealth, getAgent, listAgents, mintAgent, revokeAgent } from './service.ts';

const Slug = t.Object({ slug: t.String({ minLength: 1, maxLength: 63 }) });
const AgentPath = t.Object({ slug: t.String({ minLength: 1, maxLength: 63 }), agent_id: t.String({ format: 'uuid' }) });

export const agentRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/projects/:slug/agents', detail: { tags: ['agents'] } })
    .get(
      '',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { scope: 'agents:read' });
        const { project } = await projectAccess(ctx.db, who, params.slug, 'viewer');
        return listAgents(ctx.db, project.id);
      },
      { params: Slug, detail: { summary: 'Live agents of the project (revoked ones are hidden)' } },
    )
    .post(
      '',
      async ({ request, params, body, set }) => {
        const who = await authorize(ctx, request, { freshMfa: true });
        const { project } = await projectAccess(ctx.db, who, params.slug, 'admin');
        set.status = 201;
        return mintAgent(ctx, project.id, body.name, actorOf(ctx, request, who));
      },
      {
        params: Slug,
        body: Body({ name: Type.String({ minLength: 1, maxLength: 200 }) }),
        detail: { summary: 'Mint an agent: the token and hmac_secret are in this answer once and never again; 409 conflict on a duplicate name' },
      },
    )
    .get(
      '/:agent_id',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { scope: 'agents:read' });
        const { project } = await projectAccess(ctx.db, who, params.slug, 'viewer');
        return getAgent(ctx.db, project.id, params.agent_id);
      },
      { params: AgentPath },
    )
    .delete(
      '/:agent_id',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { freshMfa: true });
        const { project } = await projectAccess(ctx.db, who, params.slug, 'admin');
        await revokeAgent(ctx, project.id, params.agent_id, actorOf(ctx, request, who));
        return { success: true };
      },
      { params: AgentPath, detail: { summary: 'Revoke an agent: committed first, then its connections are closed; the token stops working' } },
    )
    .get(
      '/:agent_id/health',
      async ({ request, params }) => {
        const who = await authorize(ctx, request, { scope: 'agents:read' });
        const { project } = await projectAccess(ctx.db, who, params.slug, 'viewer');
        return agentHealth(ctx.db, project.id, params.agent_id);
      },
      { params: AgentPath, detail: { summary: 'At most 100 health samples, newest first; 404 for revoked or foreign agents' } },
    );
