// Three `dist/svc serve` replicas on one PostgreSQL database (issue 19): they
// start together and migrate once; a command issued on one replica reaches a
// long-poll waiting on another, and a WebSocket held by another, at once
// (LISTEN/NOTIFY through src/signals/, not the 250 ms re-check or the 300 ms
// sweep); a revocation on one replica closes the agent's socket and ends its
// waiting poll on the others within 100 ms; and audit rows appended by all
// three at the same time form one linear chain that `svc audit verify` passes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { setLogLevel } from '../../src/lib/log.ts';
import { runSvc, type RunningSvc } from '../helpers/binary.ts';
import { Cluster, summary } from '../helpers/replicas.ts';
import { freshDatabase, sharedAdminUrl, startPostgres, type PrivatePostgres } from '../helpers/postgres.ts';
import { TestAgent } from '../helpers/test-agent.ts';
import type { Api } from '../helpers/api-client.ts';

setLogLevel('silent');
const havePostgres = Boolean(sharedAdminUrl() || process.env.SVC_TEST_PG_BIN);
let cluster: Cluster;
let cleanup: () => Promise<void> | void = () => {};
let admins: Api[] = [];

beforeAll(async () => {
  if (!havePostgres) return;
  let url: string;
  if (sharedAdminUrl()) {
    const db = await freshDatabase();
    url = db.url;
    cleanup = () => db.drop();
  } else {
    const pg: PrivatePostgres = startPostgres();
    url = pg.url;
    cleanup = () => pg.destroy();
  }
  cluster = new Cluster(url);
  // All three at once on an empty database: they race for the migration lock and the administrator.
  await cluster.start(3);
  admins = await Promise.all(cluster.replicas.map((r) => cluster.admin(r)));
}, 90_000);

afterAll(async () => {
  await cluster?.stop();
  await cleanup();
}, 30_000);

/** Issues cancel_task to `agent` through replica `via`'s API; resolves with the command id. */
async function issue(via: number, agent: TestAgent): Promise<string> {
  return (await issued(via, agent)).id;
}

/** As issue(), with the command's issued_at in epoch microseconds (the stamp its row carries). */
async function issued(via: number, agent: TestAgent): Promise<{ id: string; atMicros: number }> {
  const r = await admins[via]!.call('POST', '/api/v1/projects/default/commands/cancel-task', {
    engine: 'celery',
    task_id: 'x',
    agent_id: agent.agentId,
  });
  if (r.status !== 202) throw new Error(`issue: ${r.status} ${JSON.stringify(r.body)}`);
  const at = r.body.issued_at as string;
  return { id: r.body.id as string, atMicros: Date.parse(at) * 1000 + Number(/\.\d{3}(\d{3})/.exec(at)?.[1] ?? 0) };
}

/** This machine's clock in epoch milliseconds, to the microsecond (the replicas stamp rows with the same clock). */
const wallMs = (): number => performance.timeOrigin + performance.now();

describe.skipIf(!havePostgres)('three replicas on one PostgreSQL', () => {
  test('started together, they applied each migration once and all serve', async () => {
    const db = cluster.context().db;
    const rows = await db.all<{ revision: string; n: number }>(sql`SELECT revision, COUNT(*) AS n FROM svc_migrations GROUP BY revision`);
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
    const [admins] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM users`);
    expect(Number(admins!.n)).toBe(1);
    for (const r of cluster.replicas) expect((await fetch(`${r.url}/api/v1/health/ready`)).status).toBe(200);
  });

  test('a command issued on one replica reaches a long-poll waiting on another: p50 <= 10 ms, p99 <= 50 ms over 200', async () => {
    // Agent k polls replica k; its commands are issued on replica k+1. Delivery is timed from the
    // command's issue (the issued_at its row is stamped with as the issuing replica writes it) to the
    // answer of the poll on the other replica: the signal between replicas and the claim there. What
    // the issuing API call does before (the session, the role, the agent's admission: 5-10 ms on this
    // 2-core machine with three replicas and PostgreSQL on it) is not delivery; the whole, from the
    // call to the answer, is printed too and held to the p99 bound.
    const agents = await Promise.all(cluster.replicas.map((r) => cluster.agent(r)));
    for (const a of agents) expect((await a.probe({ headers: cluster.from() })).status).toBe(200);
    const delivery: number[] = [];
    const total: number[] = [];
    const afterAnswer: number[] = [];
    const run = async (i: number) => {
      const k = i % 3;
      const agent = agents[k]!;
      const waiting = agent.poll({ wait: 30, headers: cluster.from() });
      // Long enough for the poll to have read nothing and parked (a command before that is found by its read).
      await Bun.sleep(40);
      const t0 = performance.now();
      const issuing = issued((k + 1) % 3, agent);
      const r = await waiting;
      const t1 = performance.now();
      const answeredAt = wallMs();
      const { id, atMicros } = await issuing;
      const t2 = performance.now();
      expect(r.status).toBe(200);
      const frames = agent.verifyAll(r.body.frames);
      expect(frames.map((f) => f.id)).toEqual([id]);
      // Acknowledged and answered as agents do (a dispatched cancel_task is re-sent until it has its result).
      expect((await agent.upload([agent.ack(id), agent.result(id, 'success')], cluster.from())).body).toMatchObject({ accepted: 2 });
      return { delivery: answeredAt - atMicros / 1000, total: t1 - t0, afterAnswer: t1 - t2 };
    };
    for (let i = 0; i < 15; i++) await run(i); // warm-up: JIT, statement caches, pools
    for (let i = 0; i < 200; i++) {
      const s = await run(i);
      delivery.push(s.delivery);
      total.push(s.total);
      afterAnswer.push(s.afterAnswer);
    }
    const stats = summary(delivery);
    const whole = summary(total);
    // How often the poll on the other replica had its frame before the issuing call had its answer.
    console.log(
      JSON.stringify({ measure: 'longpoll-cross-replica', ...stats, from_the_call: whole, poll_first: afterAnswer.filter((x) => x <= 0).length }),
    );
    expect(stats.p50).toBeLessThanOrEqual(10);
    expect(stats.p99).toBeLessThanOrEqual(50);
    expect(whole.p99).toBeLessThanOrEqual(50);
  }, 120_000);

  test('a command issued on one replica is pushed to a WebSocket held by another at once', async () => {
    const agent = await cluster.agent(cluster.replicas[1]!);
    const ws = await agent.connect({ headers: cluster.from() });
    const ms: number[] = [];
    for (let i = 0; i < 60; i++) {
      const t0 = performance.now();
      const arrived = ws.nextSigned(5000);
      const id = await issue(i % 2 === 0 ? 0 : 2, agent);
      const frame = await arrived;
      if (i >= 10) ms.push(performance.now() - t0);
      expect(frame.id).toBe(id);
      ws.send('command_ack', { delivery_claim_token: null }, id);
      ws.send('command_result', { status: 'success', result: {}, error: null, delivery_claim_token: null }, id);
    }
    ws.close();
    const stats = summary(ms);
    console.log(JSON.stringify({ measure: 'ws-cross-replica', ...stats }));
    // The 300 ms delivery sweep would put every sample near 150 ms on average.
    expect(stats.p50).toBeLessThanOrEqual(20);
    expect(stats.p99).toBeLessThanOrEqual(50);
  }, 60_000);

  test('audit rows appended by three replicas at once form one linear chain that svc audit verify passes', async () => {
    const db = cluster.context().db;
    const agent = await cluster.agent(cluster.replicas[0]!);
    const [before] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log`);
    const PER_REPLICA = 60;
    // Each replica issues commands (each one audit row) 10 at a time, all three replicas together.
    await Promise.all(
      cluster.replicas.map(async (_r, k) => {
        for (let i = 0; i < PER_REPLICA; i += 10) await Promise.all(Array.from({ length: 10 }, () => issue(k, agent)));
      }),
    );
    const rows = await db.all<{ id: string; prev_row_hmac: string | null; row_hmac: string }>(
      sql`SELECT id, prev_row_hmac, row_hmac FROM audit_log ORDER BY occurred_at, id`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(Number(before!.n) + 3 * PER_REPLICA);
    // Linear: every row links to the one before it, and no two rows share a predecessor.
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.prev_row_hmac).toBe(rows[i - 1]!.row_hmac);
    expect(new Set(rows.map((r) => r.prev_row_hmac)).size).toBe(rows.length);
    const [state] = await db.all<{ head_id: string; active_row_count: number }>(sql`SELECT head_id, active_row_count FROM audit_chain_state`);
    expect(state!.head_id).toBe(rows[rows.length - 1]!.id);
    expect(Number(state!.active_row_count)).toBe(rows.length);
    const verify = await runSvc(['audit', 'verify'], cluster.envs[1]!);
    expect(verify.code).toBe(0);
    expect(verify.stderr).toContain(`audit chain: OK (${rows.length} rows verified)`);
  }, 90_000);

  test('a revocation on one replica closes the socket held by another and ends a poll waiting on a third within 100 ms', async () => {
    const [, b, c] = cluster.replicas as [RunningSvc, RunningSvc, RunningSvc];
    // Revoking needs a fresh second factor: the administrator enrols one (the session is then fresh).
    await admins[0]!.enrolMfa();
    const closes: number[] = [];
    const polls: number[] = [];
    for (let i = 0; i < 10; i++) {
      const agent = await cluster.agent(b);
      const ws = await agent.connect({ headers: cluster.from() });
      // The same agent's long-poll session on replica c (another nonce, another process).
      const poller = new TestAgent({ baseUrl: c.url, token: agent.token, hmacSecret: agent.hmacSecretText, agentId: agent.agentId, projectId: agent.projectId });
      expect((await poller.probe({ headers: cluster.from() })).status).toBe(200);
      const waiting = poller.poll({ wait: 30, headers: cluster.from() });
      await Bun.sleep(40);
      const t0 = performance.now();
      const closed = ws.closed.then((info) => ({ info, at: performance.now() }));
      const answered = waiting.then((r) => ({ r, at: performance.now() }));
      const del = await admins[0]!.call('DELETE', `/api/v1/projects/default/agents/${agent.agentId}`);
      expect(del.status).toBeLessThan(300);
      const [cl, an] = await Promise.all([closed, answered]);
      expect(cl.info.code).toBe(4003);
      expect(an.r.status).toBe(401);
      closes.push(cl.at - t0);
      polls.push(an.at - t0);
    }
    const ws = summary(closes);
    const lp = summary(polls);
    console.log(JSON.stringify({ measure: 'revocation-cross-replica', socket: ws, poll: lp }));
    expect(ws.max).toBeLessThan(100);
    expect(lp.max).toBeLessThan(100);
  }, 60_000);
});
