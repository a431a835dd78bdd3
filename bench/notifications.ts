// Notifications under ingest load, against the compiled binary (needs root:
// the webhook receiver runs in a network namespace on a public-looking address,
// as the tests' does).
//   bun bench/notifications.ts [--pg] [rounds=3] [uploads-per-agent=20]
// 1. Ingest rate with and without 50 active subscriptions, alternating, each
//    round on a fresh database: 4 long-poll agents upload batches of 500
//    frames (one event each, a new task's task.succeeded; every 20th a
//    task.failed). With subscriptions, 50 members are subscribed to
//    task.failed in the app and through a project webhook whose receiver
//    answers after 2 s. The rate is events stored over wall time.
// 2. Fire-to-delivery latency with a receiver that answers at once: one
//    failing task a request, 200 times; from the upload leaving to the
//    webhook request arriving at the receiver.
import { mintAgent } from '../src/agents/service.ts';
import { loadConfigMintingSecrets } from '../src/config/secrets.ts';
import { upgrade } from '../src/db/migrate.ts';
import { createProjectChannel, listSubscriptions, patchSubscription } from '../src/notifications/service.ts';
import { grantMembership, insertNewProject } from '../src/projects/service.ts';
import { createContext, openConfiguredDatabase } from '../src/server/compose.ts';
import { insertPreparedUser, prepareUser } from '../src/users/service.ts';
import { TEST_ACTOR } from '../tests/helpers/agents.ts';
import { FAST_IDENTITY_ENV } from '../tests/helpers/identity.ts';
import { startReceiver } from '../tests/helpers/outbound-netns.ts';
import { taskEvent, TestAgent } from '../tests/helpers/test-agent.ts';
import { dialectName, freshBench, percentile, startServer } from './lib/setup.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const rounds = Number(args[0] ?? 3);
const uploadsPerAgent = Number(args[1] ?? 20);
const AGENTS = 4;
const FRAMES = 500;
const SUBSCRIBERS = 50;

const receiver = await startReceiver();
await receiver.respond('/slow', { status: 200, delayMs: 2000 });

/** A fresh service with the agents, and with `subscribers` members subscribed to task.failed through a webhook. */
async function seed(env: Record<string, string>, subscribers: number, hookPath: string) {
  const { loaded } = loadConfigMintingSecrets({ env });
  const db = openConfiguredDatabase(loaded);
  await upgrade(db);
  const ctx = createContext(loaded, db);
  // The service's own path: the project gets its task.failed default, members get it when they join.
  const project = await db.tx((tx) => insertNewProject(tx, ctx, { slug: 'bench', name: 'bench' }, TEST_ACTOR));
  const agents = [];
  for (let i = 0; i < AGENTS; i++) {
    const m = await mintAgent(ctx, project.id, `bench-${i}`, TEST_ACTOR);
    agents.push({ token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId: project.id });
  }
  if (subscribers > 0) {
    const channel = await createProjectChannel(ctx.notifications, project, { name: 'receiver', type: 'webhook', config: { url: `http://${receiver.address}${hookPath}` } }, TEST_ACTOR);
    for (let i = 0; i < subscribers; i++) {
      const user = await prepareUser(ctx, { email: `member-${i}@example.com`, password: 'Bench-Password-123' });
      await db.tx(async (tx) => {
        await insertPreparedUser(tx, ctx, user, TEST_ACTOR);
        await grantMembership(tx, ctx, project.id, user.id, 'viewer', TEST_ACTOR);
      });
      const [sub] = await listSubscriptions(db, user.id, project.id);
      await patchSubscription(ctx.notifications, user.id, sub!.id, { project_channel_ids: [channel.id] }, TEST_ACTOR);
    }
  }
  await db.close();
  return agents;
}

const event = (i: number) =>
  i % 20 === 0
    ? taskEvent({ task_id: crypto.randomUUID(), kind: 'task.failed', data: { task_name: 'app.tasks.charge', exception: 'ValueError: declined' } })
    : taskEvent({ task_id: crypto.randomUUID(), kind: 'task.succeeded', data: { task_name: 'app.tasks.add', result: 3 } });

async function ingestRate(subscribers: number): Promise<{ rate: number; fires: number }> {
  const bench = await freshBench({ ...FAST_IDENTITY_ENV, SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true', SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '5' });
  const seeded = await seed(bench.env, subscribers, '/slow');
  const server = await startServer(bench.env);
  try {
    const agents = seeded.map((a) => new TestAgent({ ...a, baseUrl: server.url }));
    for (const a of agents) if ((await a.probe()).status !== 200) throw new Error('probe failed');
    let n = 0;
    const bodies = agents.map((a) => Array.from({ length: uploadsPerAgent }, () => JSON.stringify({ frames: Array.from({ length: FRAMES }, () => a.eventBatch([event(n++)])) })));
    const t0 = performance.now();
    let accepted = 0;
    await Promise.all(
      agents.map(async (a, i) => {
        for (const body of bodies[i]!) {
          const r = await a.uploadRaw(body);
          if (r.status !== 200) throw new Error(`upload ${r.status}`);
          accepted += r.body.accepted;
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { rate: accepted / seconds, fires: Math.ceil(n / 20) };
  } finally {
    await server.stop('SIGKILL');
    await bench.dropDatabase();
  }
}

async function latency(): Promise<number[]> {
  await receiver.respond('/fast', { status: 200 });
  const bench = await freshBench({ ...FAST_IDENTITY_ENV, SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true' });
  const [seeded] = await seed(bench.env, 1, '/fast');
  const server = await startServer(bench.env);
  try {
    const agent = new TestAgent({ ...seeded!, baseUrl: server.url });
    await agent.probe();
    const out: number[] = [];
    for (let i = 0; i < 200; i++) {
      const taskId = crypto.randomUUID();
      const body = JSON.stringify({ frames: [agent.eventBatch([taskEvent({ task_id: taskId, kind: 'task.failed', data: { task_name: 'app.tasks.charge' } })])] });
      const sent = Date.now();
      if ((await agent.uploadRaw(body)).status !== 200) throw new Error('upload failed');
      for (let tries = 0; ; tries++) {
        const hit = (await receiver.log()).find((s) => s.path === '/fast' && s.body.includes(taskId));
        if (hit) {
          out.push(hit.at - sent);
          break;
        }
        if (tries > 500) throw new Error('no delivery');
        await Bun.sleep(5);
      }
    }
    return out.sort((a, b) => a - b);
  } finally {
    await server.stop('SIGKILL');
    await bench.dropDatabase();
  }
}

try {
  const without: number[] = [];
  const withSubs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    without.push((await ingestRate(0)).rate);
    const w = await ingestRate(SUBSCRIBERS);
    withSubs.push(w.rate);
    console.log(`round ${r + 1}: without ${Math.round(without.at(-1)!)} ev/s, with ${SUBSCRIBERS} subscriptions ${Math.round(w.rate)} ev/s (${w.fires} task.failed fires)`);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `${dialectName}: ingest median without ${Math.round(med(without))} ev/s, with ${SUBSCRIBERS} subscriptions and a 2 s receiver ${Math.round(med(withSubs))} ev/s (${((med(withSubs) / med(without) - 1) * 100).toFixed(1)} %)`,
  );
  const lat = await latency();
  console.log(`${dialectName}: fire-to-delivery latency over ${lat.length} fires: p50 ${percentile(lat, 50)} ms, p99 ${percentile(lat, 99)} ms, max ${lat.at(-1)} ms`);
} finally {
  await receiver.stop();
}
