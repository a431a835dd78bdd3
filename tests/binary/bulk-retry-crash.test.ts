// A bulk retry of 5,000 failed tasks survives `kill -9` of the compiled svc
// halfway: a long-poll test agent answers every retry it is sent while svc
// runs the job; svc is killed when about half the items are issued and started
// again on the same home and port; the job then finishes, and no task was ever
// sent two retry commands (the agent's own count and the database agree).
// The job is started and followed over the API as an operator would, signed in
// as the administrator svc created at first boot; the test process reads the
// database file only to mint the agent and to see the job while svc is down.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { mintAgent } from '../../src/agents/service.ts';
import { getBulkJob } from '../../src/bulk/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { sql } from 'drizzle-orm';
import { TEST_ACTOR } from '../helpers/agents.ts';
import { Api } from '../helpers/api-client.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';
import { taskEvent, TestAgent } from '../helpers/test-agent.ts';

const TASKS = 5000;
const ADMIN = { email: 'ops@example.com', password: STRONG_PASSWORD };
let svc: RunningSvc | null = null;
let ctx: AppContext;
let env: Record<string, string>;
let port: number;

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

const start = async () => {
  svc = await startSvc(env, ['--host', '127.0.0.1', '--port', String(port)]);
  await eventually(async () => (await fetch(`${svc!.url}/api/v1/health/ready`)).status === 200, 15_000, 'readiness');
};

beforeAll(async () => {
  setLogLevel('silent');
  env = cleanEnv({
    ...FAST_IDENTITY_ENV,
    SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    SVC_LOG_LEVEL: 'warn',
    SVC_BULK_RETRY_MAX_IN_FLIGHT: '50',
    // Retries whose answer was lost with the killed process end as timeouts, soon.
    SVC_COMMAND_TIMEOUT_SECONDS: '15',
    SVC_AGENT_OFFLINE_TIMEOUT_SECONDS: '300',
  });
  port = freePort();
  const { loaded } = loadConfigMintingSecrets({ env });
  ctx = createContext(loaded, openConfiguredDatabase(loaded));
  await upgrade(ctx.db);
});
afterAll(async () => {
  await svc?.stop('SIGKILL');
  await ctx?.db.close();
});

test(`a bulk retry of ${TASKS} tasks survives kill -9 halfway: it finishes after the restart, no task retried twice`, async () => {
  await start();
  const [project] = await ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`);
  const api = new Api(svc!.url);
  await api.login(ADMIN.email, ADMIN.password);
  const jobs = '/api/v1/projects/default/bulk-jobs';
  const minted = await mintAgent(ctx, project!.id, 'crash-agent', TEST_ACTOR);
  const agent = new TestAgent({ baseUrl: svc!.url, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId: project!.id });
  expect((await agent.probe()).status).toBe(200);
  // 5,000 failed tasks, reported by the agent as z4j agents do.
  const taskIds = Array.from({ length: TASKS }, (_, i) => `crash-${i}`);
  const frames: string[] = [];
  for (let i = 0; i < TASKS; i += 500) {
    frames.push(agent.eventBatch(taskIds.slice(i, i + 500).map((id) => taskEvent({ kind: 'task.failed', task_id: id, data: { task_name: 'app.tasks.crash', exception: 'ValueError: boom' } }))));
  }
  expect((await agent.upload(frames)).body).toMatchObject({ accepted: frames.length, rejected: 0 });

  // The agent: claims retries (its retry contract covers celery), answers each, counts what it was sent.
  const sent = new Map<string, Set<string>>();
  let stop = false;
  const answering = (async () => {
    while (!stop) {
      try {
        const polled = await agent.poll({ wait: 1, max_frames: 200, contracts: 'celery=1' });
        if (polled.status === 409) {
          agent.newSession();
          await agent.probe();
          continue;
        }
        if (polled.status !== 200) throw new Error(`poll ${polled.status}`);
        const cmds = agent.verifyAll(polled.body.frames);
        for (const c of cmds) {
          const taskId = String((c.payload as any).parameters.task_id);
          (sent.get(taskId) ?? sent.set(taskId, new Set()).get(taskId)!).add(c.id!);
        }
        if (cmds.length > 0) {
          const answers = cmds.flatMap((c) => [agent.ack(c.id!), agent.result(c.id!, 'success', { new_task_id: `re-${(c.payload as any).parameters.task_id}` })]);
          // Re-sent until svc takes them (it may be down for a moment).
          for (;;) {
            const up = await agent.upload(answers).catch(() => null);
            if (up?.status === 200 && up.body.accepted === answers.length) break;
            if (up?.status === 409) {
              agent.newSession();
              await agent.probe().catch(() => null);
            }
            await Bun.sleep(200);
          }
        }
      } catch {
        await Bun.sleep(200);
        agent.newSession();
        await agent.probe().catch(() => null);
      }
    }
  })();

  const created = await api.call('POST', jobs, { kind: 'retry', filter: { name: 'app.tasks.crash', state: 'failure' }, agent_id: agent.agentId });
  expect(created.status).toBe(201);
  const job = created.body;
  expect(job.progress.total).toBe(TASKS);
  const progress = async () => {
    const r = await api.call('GET', `${jobs}/${job.id}`);
    expect(r.status).toBe(200);
    return r.body;
  };
  await eventually(async () => (await progress()).progress.issued >= TASKS / 2, 120_000, 'half the items issued');
  svc!.proc.kill('SIGKILL');
  await svc!.proc.exited;
  const atKill = await getBulkJob(ctx.db, project!.id, job.id);
  expect(atKill.status).toBe('running');
  expect(atKill.progress.issued).toBeLessThan(TASKS);
  await Bun.sleep(500);
  await start();
  // The session outlives the process (sessions are stored): the same sign-in follows the job.
  await eventually(async () => (await progress()).status === 'completed', 180_000, 'the job to finish after the restart');
  stop = true;
  await answering;

  const done = await progress();
  // Every item ended with its own command (first page of the per-task results).
  const items = await api.call('GET', `${jobs}/${job.id}/items?limit=1000`);
  expect(items.status).toBe(200);
  expect(items.body.items).toHaveLength(1000);
  for (const it of items.body.items) {
    expect(['succeeded', 'failed']).toContain(it.status);
    expect(it.command_id).not.toBeNull();
  }
  expect(done.progress).toMatchObject({ total: TASKS, queued: 0, in_flight: 0, skipped: 0 });
  expect(done.progress.succeeded + done.progress.failed).toBe(TASKS);
  // Only retries whose answer died with the process may have failed (timed out); none was sent twice.
  const twice = [...sent].filter(([, ids]) => ids.size > 1);
  expect(twice).toEqual([]);
  expect(sent.size).toBeGreaterThanOrEqual(done.progress.succeeded);
  await svc!.stop();
  const file = new Database(join(env.SVC_HOME!, 'svc.db'), { readonly: true });
  try {
    const dup = file.query(`SELECT target_id, COUNT(*) AS n FROM commands WHERE action = 'retry_task' GROUP BY target_id HAVING COUNT(*) > 1`).all();
    expect(dup).toEqual([]);
    const [{ n }] = file.query(`SELECT COUNT(DISTINCT target_id) AS n FROM commands WHERE action = 'retry_task'`).all() as [{ n: number }];
    expect(n).toBe(TASKS);
  } finally {
    file.close();
  }
  console.log(`bulk retry crash: killed at ${atKill.progress.issued} issued (${atKill.progress.succeeded} answered); after restart ${done.progress.succeeded} succeeded, ${done.progress.failed} failed (answers lost with the process)`);
}, 400_000);
