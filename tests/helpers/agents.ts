// Agent test helpers: projects inserted directly, agents minted through the
// service layer, and an in-process service listening on a loopback port so
// agents talk real HTTP and WebSocket to it.
import { eq, sql, type SQL } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import type { Actor } from '../../src/auth/actor.ts';
import { issueCommand, type IssueCommandInput } from '../../src/commands/service.ts';
import type { Db } from '../../src/db/connect.ts';
import { nowIso } from '../../src/lib/clock.ts';
import { agentWebSocketOptions } from '../../src/transport/routes.ts';
import { startAgentJobs } from '../../src/transport/jobs.ts';
import { testService, type TestService, type TestServiceOptions } from './app.ts';
import type { AppContext } from '../../src/server/context.ts';
import { TestAgent } from './test-agent.ts';

export const TEST_ACTOR: Actor = { user_id: null, api_key_id: null, source_ip: '127.0.0.1', user_agent: 'agent-tests' };

export async function insertProject(db: Db, slug = `p-${crypto.randomUUID().slice(0, 8)}`): Promise<{ id: string; slug: string }> {
  const now = nowIso();
  const id = crypto.randomUUID();
  await db.tx((tx) =>
    tx.q.insert(tx.t.projects).values({ id, slug, name: slug, description: '', is_active: true, created_at: now, updated_at: now, archived_at: null }),
  );
  return { id, slug };
}

export async function archiveProjectRow(db: Db, id: string): Promise<void> {
  const now = nowIso();
  await db.tx((tx) => tx.q.update(tx.t.projects).set({ is_active: false, archived_at: now }).where(eq(tx.t.projects.id, id)));
}

/** Mints an agent through the service and returns a TestAgent holding its credentials. */
export async function mintTestAgent(svc: TestService, projectId: string, baseUrl: string, name = `agent-${crypto.randomUUID().slice(0, 6)}`): Promise<TestAgent> {
  const minted = await mintAgent(svc.ctx, projectId, name, TEST_ACTOR);
  return new TestAgent({ baseUrl, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId });
}

export interface LiveService extends TestService {
  baseUrl: string;
  /** Starts the transports' background jobs (sweeps, timeouts) as `svc serve` does. */
  startJobs(): Promise<void>;
}

/** A test service listening on 127.0.0.1 with a real peer address (no substitution). */
export async function liveService(options: TestServiceOptions = {}): Promise<LiveService> {
  const svc = await testService(options);
  svc.app.listen({ hostname: '127.0.0.1', port: 0, idleTimeout: 120, websocket: agentWebSocketOptions(svc.ctx.config) });
  const server = svc.app.server!;
  svc.ctx.server = server;
  svc.ctx.peerAddress = (request) => server.requestIP(request)?.address ?? null;
  svc.ctx.lifecycle.onShutdown('http', async () => {
    await svc.ctx.agentTransport.closeAllSockets(200);
    await svc.app.stop(true);
  });
  return Object.assign(svc, {
    baseUrl: `http://127.0.0.1:${server.port}`,
    startJobs: () => startAgentJobs(svc.ctx),
  });
}

/** Polls `check` every few ms until it is true (or fails after `ms`). */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(2);
  }
}

/** A test service with one project and one agent minted in it (storage tests). */
export async function agentFixture(name = 'agent'): Promise<{ svc: TestService; project: { id: string; slug: string }; agentId: string }> {
  const svc = await testService();
  const project = await insertProject(svc.ctx.db);
  const agentId = (await mintAgent(svc.ctx, project.id, name, TEST_ACTOR)).agent.id;
  return { svc, project, agentId };
}

/** A listening test service with one project and a TestAgent minted in it (transport tests). */
export async function liveAgentFixture(env: Record<string, string> = {}): Promise<{ svc: LiveService; project: { id: string; slug: string }; agent: TestAgent }> {
  const svc = await liveService({ env });
  const project = await insertProject(svc.ctx.db);
  const agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  return { svc, project, agent };
}

export const countRows = async (db: Db, table: string, where: SQL = sql`1 = 1`): Promise<number> =>
  Number((await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM ${sql.raw(table)} WHERE ${where}`))[0]!.n);

/** Issues a command (a cancel_task of celery task t1 unless `fields` say otherwise). */
export const issueTestCommand = (ctx: AppContext, projectId: string, agentId: string | null, fields: Partial<IssueCommandInput> = {}) =>
  issueCommand(ctx, { projectId, agentId, action: 'cancel_task', targetType: 'task', targetId: 'celery:t1', payload: { engine: 'celery', task_id: 't1' }, ...fields }, TEST_ACTOR);
