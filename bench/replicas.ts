// Several `dist/svc serve` replicas on one PostgreSQL under a fleet of agents (issue 19).
//   bun bench/replicas.ts [agents=5000] [seconds=30] [--replicas=1,2,3] [--events=10] [--every=5] [--commands=10]
// Needs SVC_TEST_PG_URL (an admin URL; a fresh database is created and dropped).
//
// Agents are minted once; then for each replica count R the replicas start on
// the same database and the agents connect, agent i to replica i mod R: odd
// ones over WebSocket (with --ws=0.5; so at R=2 one replica holds every socket
// and the other every long-poll) (hello, a heartbeat and an agent_status every 10 s, an
// event_batch of --events events every --every s, acknowledged by the server),
// even ones over long-poll (a probe, a poll held open (wait=30) at all times,
// an upload of a heartbeat and an event_batch of --events events every --every
// s). Each agent comes from an address of its own (X-Forwarded-For through
// SVC_TRUSTED_PROXIES=127.0.0.1). After a warm-up round the window of
// `seconds` measures: events stored per second (counted in the database),
// upload latency (long-poll: the request; WebSocket: batch sent to its ack),
// RSS and CPU of each replica, and command delivery: --commands a second,
// issued through the API of a random replica to a random agent, timed from
// the request sent to the agent holding the verified frame (the agent then
// acknowledges and answers it).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../src/agents/service.ts';
import { setLogLevel } from '../src/lib/log.ts';
import { TEST_ACTOR } from '../tests/helpers/agents.ts';
import type { Api } from '../tests/helpers/api-client.ts';
import { freshDatabase, startPostgres } from '../tests/helpers/postgres.ts';
import { Cluster, clusterSecrets } from '../tests/helpers/replicas.ts';
import { taskEvent, TestAgent, type WsAgent } from '../tests/helpers/test-agent.ts';
import { percentile, procStats } from './lib/setup.ts';

// Thousands of long-polls are open at once: Bun's fetch allows 256 requests in flight unless told otherwise.
if (!process.env.BUN_CONFIG_MAX_HTTP_REQUESTS) {
  const child = Bun.spawn([process.execPath, ...process.argv.slice(1)], {
    env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '65000' },
    stdio: ['inherit', 'inherit', 'inherit'],
  });
  process.exit(await child.exited);
}

setLogLevel('silent');
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const agentCount = Number(args[0] ?? 5000);
const seconds = Number(args[1] ?? 30);
const replicaCounts = flag('replicas', '1,2,3').split(',').map(Number);
const EVENTS = Number(flag('events', '10'));
const EVERY_MS = Number(flag('every', '5')) * 1000;
const COMMANDS_PER_SECOND = Number(flag('commands', '10'));
const HEARTBEAT_MS = 10_000;
/** The share of WebSocket agents (the rest long-poll), spread evenly over the indexes. */
const WS_SHARE = Number(flag('ws', '0.5'));
const isWs = (i: number) => Math.floor((i + 1) * WS_SHARE) > Math.floor(i * WS_SHARE);

const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  if (s.length === 0) return { n: 0 };
  return { n: s.length, p50: Number(percentile(s, 50).toFixed(1)), p99: Number(percentile(s, 99).toFixed(1)), max: Number(s[s.length - 1]!.toFixed(1)) };
};

// A private PostgreSQL server when the binaries are at hand (SVC_TEST_PG_BIN, as scripts/test sets):
// other work on a shared server would count against the replicas. Else a database on SVC_TEST_PG_URL.
const server = process.env.SVC_TEST_PG_BIN ? startPostgres() : null;
const database = await freshDatabase(server?.url);
/** The postmaster's pid (its backends are its children: procStats sums them). */
const postmaster = (): number | null => {
  if (!server) return null;
  const pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  for (const pid of pids) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.startsWith(`${process.env.SVC_TEST_PG_BIN}/postgres\0`) && cmd.includes(`-p\0${new URL(server.url).port}\0`)) return Number(pid);
    } catch {
      // gone
    }
  }
  return null;
};
const secrets = clusterSecrets();
const extra = { SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '10', SVC_DATABASE_POOL_SIZE: '20', SVC_LOG_LEVEL: 'warn', SVC_COMMAND_TIMEOUT_SECONDS: '600', SVC_WS_IDLE_TIMEOUT_SECONDS: '120' };
type Credentials = ConstructorParameters<typeof TestAgent>[0];
let minted: Omit<Credentials, 'baseUrl'>[] = [];
const results: Record<string, unknown>[] = [];

for (const R of replicaCounts) {
  const load0 = loadavg();
  const cluster = new Cluster(database.url, secrets, extra);
  await cluster.start(R);
  if (minted.length === 0) {
    const ctx = cluster.context();
    const projectId = await cluster.defaultProjectId();
    const t0 = performance.now();
    for (let i = 0; i < agentCount; i += 20) {
      const part = await Promise.all(
        Array.from({ length: Math.min(20, agentCount - i) }, (_, k) => mintAgent(ctx, projectId, `fleet-${i + k}`, TEST_ACTOR)),
      );
      minted.push(...part.map((m) => ({ token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId })));
    }
    console.error(`minted ${agentCount} agents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const admins: Api[] = await Promise.all(cluster.replicas.map((r) => cluster.admin(r)));
  const db = cluster.context().db;

  let stopping = false;
  let measuring = false;
  const uploadMs: number[] = [];
  const wsAckMs: number[] = [];
  const commandMs: number[] = [];
  let uploadErrors = 0;
  let commandErrors = 0;
  /** Requests (long-poll) and frames (WebSocket) sent in the window, by kind: the load is per request as much as per event. */
  const sent: Record<string, number> = {};
  const count = (kind: string) => {
    if (measuring) sent[kind] = (sent[kind] ?? 0) + 1;
  };
  /** Answers other than 200 (uploads) and 202 (commands), by status (0: no answer). */
  const refusals: Record<string, number> = {};
  /** Counted only while measuring (requests cut off by the replicas stopping at the end are not refusals). */
  const refused = (what: string, status: number) => {
    if (measuring) refusals[`${what} ${status}`] = (refusals[`${what} ${status}`] ?? 0) + 1;
  };
  // A command's frame often reaches its agent before the issuing call has its answer (and so its id):
  // whichever of the two comes second records the time from the request sent to the frame held.
  const issuedAt = new Map<string, number>();
  const seenAt = new Map<string, number>();
  const record = (ms: number) => {
    if (measuring) commandMs.push(ms);
  };
  const frameArrived = (id: string) => {
    const now = performance.now();
    const t0 = issuedAt.get(id);
    if (t0 === undefined) return void seenAt.set(id, now);
    issuedAt.delete(id);
    record(now - t0);
  };
  const timers: ReturnType<typeof setTimeout>[] = [];
  const agentOf = (i: number) => new TestAgent({ ...minted[i]!, baseUrl: cluster.replicas[i % R]!.url });
  const address = (i: number) => ({ 'x-forwarded-for': `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` });

  // --- WebSocket agents (odd indexes with --ws=0.5) ---
  const sockets: { i: number; ws: WsAgent }[] = [];
  const wsBatchSent = new Map<string, number>();
  const tConnect = performance.now();
  const wsIdx = Array.from({ length: agentCount }, (_, i) => i).filter(isWs);
  for (let j = 0; j < wsIdx.length; j += 100) {
    const part = await Promise.all(wsIdx.slice(j, j + 100).map(async (i) => ({ i, ws: await agentOf(i).connect({ headers: address(i), hello: { worker_id: `fleet-${i}` } }) })));
    sockets.push(...part);
  }
  for (const { ws } of sockets) {
    ws.ws.addEventListener('message', (e) => {
      const text = String(e.data);
      const type = /"type":"([a-z_]+)"/.exec(text)?.[1];
      if (type === 'command') {
        const frame = ws.verifier.verify(text);
        if (frame.kind !== 'signed' || frame.id === null) return;
        frameArrived(frame.id);
        ws.send('command_ack', { delivery_claim_token: null }, frame.id);
        ws.send('command_result', { status: 'success', result: {}, error: null, delivery_claim_token: null }, frame.id);
      } else if (type === 'event_batch_ack') {
        const acked = /"acked_id":"([^"]+)"/.exec(text)?.[1];
        const at = acked ? wsBatchSent.get(acked) : undefined;
        if (at !== undefined) {
          wsBatchSent.delete(acked!);
          if (measuring) wsAckMs.push(performance.now() - at);
        }
      }
    });
    // The helper's own inbox would keep every message: drop them.
    (ws as unknown as { inbox: string[] }).inbox.length = 0;
  }
  const drainInboxes = setInterval(() => {
    for (const { ws } of sockets) (ws as unknown as { inbox: string[] }).inbox.length = 0;
  }, 1000);
  for (const { i, ws } of sockets) {
    const beat = () => {
      if (stopping || ws.closeInfo) return;
      ws.send('heartbeat', { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} });
      ws.send('agent_status', { agent_version: '1.13.0', protocol_version: '2', buffer_depth: 0 });
      count('ws_heartbeat');
      count('ws_agent_status');
    };
    const upload = () => {
      if (stopping || ws.closeInfo) return;
      const id = `ev_${i}_${crypto.randomUUID().slice(0, 12)}`;
      wsBatchSent.set(id, performance.now());
      count('ws_event_batch');
      ws.send('event_batch', { events: Array.from({ length: EVENTS }, () => taskEvent({ task_id: crypto.randomUUID() })) }, id);
    };
    // The first beat and batch at a random offset within their period (not one period later): with
    // --every=30 most WebSocket agents would otherwise send no batch before the window ends.
    const every = (fn: () => void, ms: number) =>
      timers.push(setTimeout(() => (fn(), timers.push(setInterval(fn, ms))), Math.random() * ms));
    every(beat, HEARTBEAT_MS);
    every(upload, EVERY_MS);
  }

  // --- long-poll agents (even indexes with --ws=0.5) ---
  const pollers = Array.from({ length: agentCount }, (_, i) => i).filter((i) => !isWs(i)).map((i) => ({ i, agent: agentOf(i) }));
  for (let j = 0; j < pollers.length; j += 100) {
    await Promise.all(pollers.slice(j, j + 100).map(async ({ i, agent }) => {
      const r = await agent.probe({ headers: address(i) });
      if (r.status !== 200) throw new Error(`probe ${r.status}`);
    }));
  }
  const connectSeconds = (performance.now() - tConnect) / 1000;
  const loops: Promise<void>[] = [];
  for (const { i, agent } of pollers) {
    const answers: string[] = [];
    loops.push(
      (async () => {
        while (!stopping) {
          const r = await agent.poll({ wait: 30, headers: address(i) }).catch(() => null);
          count('lp_poll');
          if (!r || r.status !== 200) {
            await Bun.sleep(1000);
            continue;
          }
          for (const f of agent.verifyAll(r.body.frames)) {
            if (f.id === null) continue;
            frameArrived(f.id);
            answers.push(f.id);
          }
          if (answers.length > 0) {
            const ids = answers.splice(0);
            count('lp_upload_answers');
            await agent.upload(ids.flatMap((id) => [agent.ack(id), agent.result(id, 'success')]), address(i)).catch(() => null);
          }
        }
      })(),
    );
    loops.push(
      (async () => {
        await Bun.sleep(Math.random() * EVERY_MS);
        while (!stopping) {
          const next = performance.now() + EVERY_MS;
          const frames = [agent.heartbeat(), agent.eventBatch(Array.from({ length: EVENTS }, () => taskEvent({ task_id: crypto.randomUUID() })))];
          const t0 = performance.now();
          count('lp_upload_events');
          const r = await agent.upload(frames, address(i)).catch((e: Error) => {
            refused(`upload ${e.message.slice(0, 60)}`, 0);
            return null;
          });
          if (!r || r.status !== 200) {
            if (measuring) uploadErrors++;
            if (r) refused(`upload ${r.body?.error ?? ''}`, r.status);
          }
          else if (measuring) uploadMs.push(performance.now() - t0);
          await Bun.sleep(Math.max(0, next - performance.now()));
        }
      })(),
    );
  }

  // --- commands through the API ---
  const issuer = (async () => {
    let n = 0;
    while (!stopping) {
      const next = performance.now() + 1000 / COMMANDS_PER_SECOND;
      const agentId = minted[Math.floor(Math.random() * agentCount)]!.agentId;
      const admin = admins[n++ % R]!;
      const t0 = performance.now();
      count('api_command');
      void admin
        .call('POST', '/api/v1/projects/default/commands/cancel-task', {
          engine: 'celery',
          task_id: 'x',
          agent_id: agentId,
        })
        .then(
          (r) => {
            if (r.status !== 202) {
              refused(`command ${r.body?.error ?? ''}`, r.status);
              if (measuring) commandErrors++;
              return;
            }
            const id = r.body.id as string;
            const at = seenAt.get(id);
            if (at === undefined) return void issuedAt.set(id, t0);
            seenAt.delete(id);
            record(at - t0);
          },
          (e: Error) => {
            refused(`command ${e.message.slice(0, 60)}`, 0);
            if (measuring) commandErrors++;
          },
        );
      await Bun.sleep(Math.max(0, next - performance.now()));
    }
  })();

  // Warm-up: a full heartbeat round, then the window.
  await Bun.sleep(HEARTBEAT_MS + 2000);
  const [before] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events`);
  const cpu0 = cluster.replicas.map((r) => procStats(r.proc.pid).cpuSeconds);
  const client0 = process.cpuUsage();
  const pgPid = postmaster();
  const pg0 = pgPid ? procStats(pgPid).cpuSeconds : 0;
  const peak = cluster.replicas.map(() => 0);
  measuring = true;
  console.error(`replicas=${R}: window opens ${new Date().toISOString()}`);
  const w0 = performance.now();
  while (performance.now() - w0 < seconds * 1000) {
    await Bun.sleep(1000);
    cluster.replicas.forEach((r, k) => (peak[k] = Math.max(peak[k]!, procStats(r.proc.pid).rssMb)));
  }
  measuring = false;
  console.error(`replicas=${R}: window closes ${new Date().toISOString()}`);
  const wEnd = performance.now();
  const window = (wEnd - w0) / 1000;
  // Issued in the window, more than 10 s before its end, and never delivered.
  const undelivered = [...issuedAt.values()].filter((t0) => t0 >= w0 && t0 < wEnd - 10_000).length;
  const [after] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events`);
  const rss = cluster.replicas.map((r) => Math.round(procStats(r.proc.pid).rssMb));
  const cpu = cluster.replicas.map((r, k) => Number(((procStats(r.proc.pid).cpuSeconds - cpu0[k]!) / window).toFixed(2)));
  const client = process.cpuUsage(client0);
  const pgCpu = pgPid ? (procStats(pgPid).cpuSeconds - pg0) / window : null;
  const closedEarly = sockets.filter((s) => s.ws.closeInfo).length;
  // Why they closed: the close code and reason the bench's end of each socket saw.
  const closedBy: Record<string, number> = {};
  for (const { ws } of sockets) {
    if (!ws.closeInfo) continue;
    const why = `${ws.closeInfo.code} ${ws.closeInfo.reason}`.trim();
    closedBy[why] = (closedBy[why] ?? 0) + 1;
  }
  stopping = true;
  clearInterval(drainInboxes);
  for (const t of timers) clearTimeout(t), clearInterval(t);
  for (const s of sockets) s.ws.close();
  await Promise.all(cluster.replicas.map((r) => r.stop('SIGTERM')));
  if (process.env.BENCH_LOGS) cluster.replicas.forEach((r, k) => writeFileSync(`${process.env.BENCH_LOGS}/replicas-${R}-${k}.log`, r.stdout() + r.stderr()));
  await Promise.race([Promise.all([...loops, issuer]), Bun.sleep(5000)]);
  await cluster.stop();
  const load1 = loadavg();
  const result = {
    bench: 'replicas',
    replicas: R,
    agents: agentCount,
    ws_agents: sockets.length,
    longpoll_agents: pollers.length,
    connect_seconds: Number(connectSeconds.toFixed(1)),
    window_seconds: Number(window.toFixed(1)),
    events_per_second: Math.round((Number(after!.n) - Number(before!.n)) / window),
    offered_events_per_second: Math.round((agentCount * EVENTS) / (EVERY_MS / 1000)),
    upload_ms_longpoll: summary(uploadMs),
    batch_ack_ms_ws: summary(wsAckMs),
    upload_errors: uploadErrors,
    command_ms: summary(commandMs),
    command_errors: commandErrors,
    commands_undelivered: undelivered,
    rss_mb_per_replica: rss,
    peak_rss_mb_per_replica: peak.map(Math.round),
    cpu_cores_per_replica: cpu,
    postgres_cpu_cores: pgCpu === null ? null : Number(pgCpu.toFixed(2)),
    bench_client_cpu_cores: Number(((client.user + client.system) / 1e6 / window).toFixed(2)),
    sent_per_second: Object.fromEntries(Object.entries(sent).map(([k, n]) => [k, Number((n / window).toFixed(1))])),
    refusals,
    sockets_closed_early: closedEarly,
    sockets_closed_early_by: closedBy,
    loadavg_before: load0.map((x) => Number(x.toFixed(2))),
    loadavg_after: load1.map((x) => Number(x.toFixed(2))),
  };
  results.push(result);
  console.log(JSON.stringify(result));
}
await database.drop();
server?.destroy();
