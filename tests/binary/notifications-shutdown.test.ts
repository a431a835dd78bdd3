// Stopping the compiled binary while a notification is being sent: SIGTERM
// lets the send finish and its delivery row is written before the database
// closes (the notifications hook runs after the HTTP server has stopped and
// before the database goes). The receiver is a test host in a network
// namespace that answers after a delay (tests/helpers/outbound-netns.ts).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createProjectChannel, createSubscription } from '../../src/notifications/service.ts';
import { findProjectById } from '../../src/projects/service.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { STRONG_PASSWORD } from '../helpers/identity.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';
import { taskEvent, TestAgent } from '../helpers/test-agent.ts';

const noHost = unavailable();
if (noHost) console.warn(`SKIPPED notification shutdown test: ${noHost}`);

let host: Receiver | undefined;
let svc: RunningSvc | undefined;
let ctx: AppContext | undefined;

beforeAll(async () => {
  if (noHost) return;
  setLogLevel('silent');
  host = await startReceiver();
}, 60_000);
afterAll(async () => {
  await ctx?.db.close();
  await svc?.stop('SIGKILL');
  await host?.stop();
});

test.skipIf(Boolean(noHost))('SIGTERM during a slow send: the send finishes and its delivery row is written before the database closes', async () => {
  await host!.respond('/slow', { status: 200, body: 'ok', delayMs: 2500 });
  const env = cleanEnv({
    SVC_LOG_LEVEL: 'warn',
    SVC_BOOTSTRAP_ADMIN_EMAIL: 'boot@example.com',
    SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD,
    SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true',
    SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '20',
  });
  svc = await startSvc(env, ['--host', '127.0.0.1']);
  await eventually(async () => (await fetch(`${svc!.url}/api/v1/health/ready`)).status === 200, 15_000, 'readiness');
  // The test process plays an administrator working in the same database.
  const { loaded } = loadConfigMintingSecrets({ env });
  ctx = createContext(loaded, openConfiguredDatabase(loaded));
  const project = (await findProjectById(ctx.db, (await insertProject(ctx.db)).id))!;
  const [admin] = await ctx.db.all<{ id: string }>(sql`SELECT id FROM users WHERE email = 'boot@example.com'`);
  const channel = await createProjectChannel(ctx.notifications, project, { name: 'slow', type: 'webhook', config: { url: `http://${host!.address}/slow` } }, TEST_ACTOR);
  await createSubscription(ctx.notifications, admin!.id, { project_id: project.id, trigger: 'task.failed', project_channel_ids: [channel.id] }, TEST_ACTOR);
  const minted = await mintAgent(ctx, project.id, 'shutdown-agent', TEST_ACTOR);
  const agent = new TestAgent({ baseUrl: svc.url, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId: project.id });
  agent.newSession();
  expect((await agent.probe()).status).toBe(200);

  const taskId = `stopping-${crypto.randomUUID()}`;
  const up = await agent.upload([agent.eventBatch([taskEvent({ kind: 'task.failed', task_id: taskId, data: { task_name: 'billing.charge' } })])]);
  expect(up.status).toBe(200);
  // The receiver has the request and is still holding its answer when the service is told to stop.
  await eventually(async () => (await host!.log()).some((s) => s.path === '/slow' && s.body.includes(taskId)), 10_000, 'the send to reach the receiver');
  expect(await svc.stop('SIGTERM')).toBe(0);

  const rows = await ctx.db.all<{ status: string; response_code: number | null; task_id: string; error: string | null }>(
    sql`SELECT status, response_code, task_id, error FROM notification_deliveries WHERE channel_id = ${channel.id}`,
  );
  expect(rows).toEqual([{ status: 'sent', response_code: 200, task_id: taskId, error: null }]);
  // The inbox row was committed before the send began.
  const [inbox] = await ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM user_notifications WHERE user_id = ${admin!.id} AND project_id = ${project.id}`);
  expect(Number(inbox!.n)).toBe(1);
}, 90_000);
