// Who may use the agent transports, checked in this order on both long-poll
// routes and the WebSocket connect:
//   1. SVC_AGENT_IP_ALLOWLIST (before the token is read): 403 ip_denied / close 4403
//   2. the per-IP bucket of 600 per minute shared with WebSocket connects: 429 / close 4429
//   3. the bearer token against every accepted master: 401 invalid agent token / close 4401
//   4. the project must not be archived: 403 project_inactive / close 4401
// Refusal audit rows are written at most once per ten minutes per address
// (auth.ip_denied, agent.auth.bearer_failed) or per agent (agent.auth.project_inactive);
// svc_auth_ip_denied_total{surface} counts every address refusal.
import { authenticateAgentToken, type AuthenticatedAgent } from '../agents/service.ts';
import type { AuditEntry } from '../audit/service.ts';
import { ApiError, tooManyRequests } from '../http/errors.ts';
import { requestIpOf } from '../http/request.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { listHas } from '../lib/net.ts';
import type { AppContext } from '../server/context.ts';
import { parseBearer } from './credentials.ts';

const log = logger('agent.access');

/** A refused agent request: the HTTP answer, and the close code the WebSocket gets instead. */
export class Refusal {
  constructor(
    readonly error: ApiError,
    readonly wsCode: number,
  ) {}
}

export const INVALID_AGENT_TOKEN = 'invalid agent token';

export const invalidToken = () => new ApiError(401, 'invalid_agent_token', INVALID_AGENT_TOKEN, {}, { 'www-authenticate': 'Bearer' }, INVALID_AGENT_TOKEN);
export const projectInactive = () =>
  new ApiError(403, 'project_inactive', 'the project of this agent is archived', { surface: 'agent' }, {}, 'project inactive');

/** Writes a refusal row before the refusal is answered; a failure to write never turns the refusal into an error. */
async function audit(ctx: AppContext, entry: AuditEntry): Promise<void> {
  await ctx.audit.record(ctx.db, entry).catch((e) => log.error({ action: entry.action, err: describeError(e) }, 'refusal audit row not written'));
}

/** Steps 1-2: the address. Returns the client address, or the refusal. */
export async function screenAddress(ctx: AppContext, request: Request, route: string): Promise<{ ip: string | null } | Refusal> {
  const ip = requestIpOf(ctx, request);
  const rt = ctx.agentTransport;
  if (rt.allowlist && (ip === null || !listHas(rt.allowlist, ip))) {
    const denied = ctx.metrics.counter('svc_auth_ip_denied_total', 'Requests refused by an address allow-list, by surface.', ['surface']);
    denied.inc({ surface: 'agent' });
    if (rt.refusals.shouldAudit(`ip:${ip}`)) {
      await audit(ctx, {
        action: 'auth.ip_denied',
        result: 'denied',
        target_type: 'agent_transport',
        target_id: route,
        source_ip: ip,
        metadata: { surface: 'agent', route },
      });
    }
    return new Refusal(new ApiError(403, 'ip_denied', 'this address may not use the agent transports', { surface: 'agent' }), 4403);
  }
  const key = (ip ?? 'unknown').slice(0, 120);
  if (!rt.connectBucket.take(key)) {
    const wait = rt.connectBucket.retryAfterSeconds(key);
    return new Refusal(tooManyRequests(wait, `too many requests; please try again in ${wait} seconds (agent-connect)`), 4429);
  }
  return { ip };
}

export interface Admitted {
  auth: AuthenticatedAgent;
  ip: string | null;
}

/** Steps 3-4: the token and the project. */
export async function admitAgent(
  ctx: AppContext,
  request: Request,
  ip: string | null,
  route: string,
  surface: 'ws' | 'longpoll',
): Promise<Admitted | Refusal> {
  const auth = await authenticateAgentToken(ctx, parseBearer(request.headers.get('authorization')));
  if (!auth) {
    if (surface === 'ws' && ctx.agentTransport.refusals.shouldAudit(`bearer:${ip}`)) {
      await audit(ctx, {
        action: 'agent.auth.bearer_failed',
        result: 'denied',
        target_type: 'agent_transport',
        target_id: route,
        source_ip: ip,
        metadata: { route },
      });
    }
    return new Refusal(invalidToken(), 4401);
  }
  if (!auth.projectActive) {
    await noteProjectInactive(ctx, auth.agent.id, auth.agent.project_id, ip, route);
    return new Refusal(projectInactive(), 4401);
  }
  return { auth, ip };
}

/** The archived-project refusal's audit row (also used when a wait finds the project archived). */
export async function noteProjectInactive(ctx: AppContext, agentId: string, projectId: string, ip: string | null, route: string): Promise<void> {
  if (!ctx.agentTransport.refusals.shouldAudit(`inactive:${agentId}`)) return;
  await audit(ctx, {
    action: 'agent.auth.project_inactive',
    result: 'denied',
    target_type: 'agent',
    target_id: agentId,
    project_id: projectId,
    source_ip: ip,
    metadata: { agent_id: agentId, project_id: projectId, address: ip, route },
  });
}
