// Agents against the compiled binary with two worker processes: the test
// process plays "another process" that issues commands and revokes agents in
// the shared database; the worker holding the agent's socket or waiting poll
// must still deliver (delivery sweep, 250 ms re-check) and kick.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent, revokeAgent } from '../../src/agents/service.ts';
import { getCommand, issueCommand } from '../../src/commands/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { taskEvent, TestAgent } from '../helpers/test-agent.ts';

let svc: RunningSvc;
let ctx: AppContext;
let agent: TestAgent;
let projectId: string;

beforeAll(async () => {
  setLogLevel('silent');
  const env = cleanEnv({ SVC_LOG_LEVEL: 'warn' });
  svc = await startSvc(env, ['--workers', '2', '--host', '127.0.0.1']);
  // Both processes answer before we start.
  await eventually(async () => (await fetch(`${svc.url}/api/v1/health/ready`)).status === 200, 15_000, 'readiness');
  const { loaded } = loadConfigMintingSecrets({ env });
  ctx = createContext(loaded, openConfiguredDatabase(loaded));
  projectId = (await insertProject(ctx.db)).id;
  const minted = await mintAgent(ctx, projectId, 'bin-agent', TEST_ACTOR);
  agent = new TestAgent({ baseUrl: svc.url, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId });
});
afterAll(async () => {
  await ctx?.db.close();
  await svc?.stop();
});

const issue = (targetId: string) =>
  issueCommand(ctx, { projectId, agentId: agent.agentId, action: 'cancel_task', targetType: 'task', targetId, payload: { engine: 'celery', task_id: targetId } }, TEST_ACTOR);

test('long-poll against the binary: events stored, a command issued by another process reaches a waiting poll', async () => {
  await eventually(async () => (await agent.probe()).status === 200, 10_000, 'probe');
  const up = await agent.upload([agent.eventBatch([taskEvent({ task_id: 'bin-1' })])]);
  expect(up.body).toMatchObject({ accepted: 1, rejected: 0 });
  // A large upload is decoded in the binary's decoding thread (an entry point of its own).
  const large = await agent.upload(Array.from({ length: 100 }, (_, i) => agent.eventBatch([taskEvent({ task_id: `bin-large-${i}` })])));
  expect(large.body).toEqual({ accepted: 100, rejected: 0, errors: [], error_code: null });
  const [stored] = await ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM tasks WHERE task_id LIKE 'bin-large-%'`);
  expect(Number(stored!.n)).toBe(100);
  expect(svc.stdout()).not.toMatch(/decoding thread failed/);
  const waiting = agent.poll({ wait: 20 });
  await Bun.sleep(300);
  const cmd = await issue('bin-1');
  const r = await waiting;
  expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([cmd.id]);
  expect(r.headers.get('x-svc-longpoll-worker')).toMatch(/^\d+$/);
});

test('WebSocket against the binary: a command issued elsewhere is pushed; a revoke elsewhere kicks the socket (4003)', async () => {
  const ws = await agent.connect();
  expect(ws.helloAck.payload.agent_id).toBe(agent.agentId);
  const cmd = await issue('bin-2');
  const frame = await ws.nextSigned(10_000);
  expect(frame).toMatchObject({ type: 'command', id: cmd.id });
  ws.send('command_result', { status: 'success', result: { ok: true }, error: null }, cmd.id);
  await eventually(async () => (await getCommand(ctx.db, projectId, cmd.id)).status === 'completed', 10_000, 'the result');
  await revokeAgent(ctx, projectId, agent.agentId, TEST_ACTOR);
  expect((await ws.closed).code).toBe(4003);
  expect((await agent.probe()).status).toBe(401);
});
