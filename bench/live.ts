// Live update latency: from an agent's upload of a task event to an open dashboard tab holding the notice
// that names it, with many tabs open.
//   bun bench/live.ts [--pg] [--workers N] [--stored=N] [tabs=100] [uploads=200]
// The compiled dist/svc serves (one process, or N with --workers on SQLite); this process plays the tabs
// (WebSockets to /api/v1/live with the administrator's session cookie, each subscribed to the project's task
// notices) and one long-poll agent. Two phases:
//   spaced     one upload (one event) every 250 ms: a lone change, sent at once (the coalescing window's
//              leading edge)
//   sustained  uploads back to back, 50 events each: coalescing merges what arrives within 100 ms
// For each upload and each tab, the time from sending the upload to the tab holding a notice with its task id.
// --pg needs SVC_TEST_PG_URL (an admin URL; a fresh database is created).
// --stored=N: the project holds N tasks before the clock (bench/lib/seed-tasks.ts; PostgreSQL analysed after),
// so ingest writes into a table and indexes of that size.
import { LiveTab, type LiveMessage } from '../tests/helpers/live-tab.ts';
import { STRONG_PASSWORD } from '../tests/helpers/identity.ts';
import { taskEvent, TestAgent } from '../tests/helpers/test-agent.ts';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config/load.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { seedTasks } from './lib/seed-tasks.ts';
import { dialectName, freshBench, percentile, procStats, seedAgents, startServer } from './lib/setup.ts';

const args = process.argv.slice(2);
const workersAt = args.indexOf('--workers');
const workers = workersAt >= 0 ? Number(args[workersAt + 1]) : 1;
const positional = args.filter((a, i) => !a.startsWith('--') && i !== workersAt + 1);
const stored = Number(args.find((a) => a.startsWith('--stored='))?.split('=')[1] ?? 0);
const tabCount = Number(positional[0] ?? 100);
const uploads = Number(positional[1] ?? 200);
const ADMIN = { email: 'bench@example.com', password: STRONG_PASSWORD };

const bench = await freshBench({
  SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
  SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
  SVC_ARGON2_MEMORY_KIB: '8192',
  SVC_ARGON2_TIME_COST: '1',
  SVC_LOGIN_MIN_DURATION_MS: '0',
  // One user holds every tab here (the default allows 20 per user and process).
  SVC_LIVE_MAX_CONNECTIONS_PER_USER: String(tabCount + 10),
  // Uploads come from this one address: more than the 600 a minute one address may make.
  SVC_TRUSTED_PROXIES: '127.0.0.1',
});
const { agents, projectId } = await seedAgents(bench.env, 1);
let seedSeconds = 0;
if (stored > 0) {
  const t0 = performance.now();
  const db = openConfiguredDatabase(loadConfig({ env: bench.env }));
  // First seen over the time before now, one task every 600 ms, as tasks-scale seeds them.
  await seedTasks(db, projectId, stored, Date.now() - stored * 600 - 60_000);
  if (db.dialect === 'postgres') await db.run(sql`ANALYZE tasks`);
  await db.close();
  seedSeconds = (performance.now() - t0) / 1000;
}
const svc = await startServer(bench.env, workers);
let requests = 0;
const fromAddress = () => ({ 'x-forwarded-for': `10.78.${(++requests >> 8) & 255}.${requests & 255}` });

try {
  // Ready when every process says so (new connections land on either).
  const readyWorkers = new Set<string>();
  for (let i = 0; readyWorkers.size < workers; i++) {
    const r = await fetch(`${svc.url}/api/v1/health/ready`, { headers: { connection: 'close' } });
    if (r.status === 200) readyWorkers.add(r.headers.get('x-svc-worker') ?? '0');
    if (i > 400) throw new Error('svc never became ready');
    await Bun.sleep(25);
  }
  const login = await fetch(`${svc.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
  const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');

  // Uploads by their marker task id: when sent (performance.now) and when answered (Date.now, comparable with a
  // notice's `at`). A notice names the upload's marker, or says `more` (ids were cut): then it covers every
  // upload answered before the server sent it (stored and reported by then; counting it here overstates the
  // latency of an upload an earlier notice had already covered, never understates it).
  const sent = new Map<string, { t0: number; answeredAt: number }>();
  const order: string[] = [];
  const latencies: number[][] = [[], []];
  const roundTrips: number[][] = [[], []];
  let phase = 0;
  const tabs: LiveTab[] = [];
  const perWorker = new Map<number, number>();
  for (let i = 0; i < tabCount; i++) {
    const tab = await LiveTab.open(svc.url, cookie);
    perWorker.set(tab.messages[0]!.worker, (perWorker.get(tab.messages[0]!.worker) ?? 0) + 1);
    const sub = await tab.subscribe('bench', ['task']);
    if (sub.type !== 'subscribed') throw new Error(`subscribe: ${JSON.stringify(sub)}`);
    const delivered = new Set<string>();
    let next = 0; // uploads before this one (in sending order) are delivered to this tab
    const record = (id: string, now: number) => {
      const u = sent.get(id);
      if (!u || delivered.has(id)) return;
      delivered.add(id);
      latencies[phase]!.push(now - u.t0);
    };
    tab.ws.addEventListener('message', (e) => {
      const m = JSON.parse(String(e.data)) as LiveMessage;
      if (m.type !== 'task') return;
      const now = performance.now();
      for (const id of m.ids as string[]) record(id, now);
      if (m.more) {
        const at = Date.parse(m.at);
        for (; next < order.length; next++) {
          const u = sent.get(order[next]!)!;
          if (u.answeredAt === 0 || u.answeredAt > at) break;
          record(order[next]!, now);
        }
      }
    });
    tabs.push(tab);
  }
  const agent = new TestAgent({ baseUrl: svc.url, ...agents[0]! });
  await agent.probe({ headers: fromAddress() });

  const cpu0 = procStats(svc.proc.pid!).cpuSeconds;
  // Spaced: one event per upload, one upload every 250 ms.
  const spaced = Math.min(uploads, 80);
  for (let i = 0; i < spaced; i++) {
    const id = `spaced-${i}`;
    const u = { t0: performance.now(), answeredAt: 0 };
    sent.set(id, u);
    order.push(id);
    const r = await agent.upload([agent.eventBatch([taskEvent({ task_id: id })])], fromAddress());
    u.answeredAt = Date.now();
    roundTrips[phase]!.push(performance.now() - u.t0);
    if (r.status !== 200) throw new Error(`upload: ${r.status} ${JSON.stringify(r.body)}`);
    await Bun.sleep(250);
  }
  await Bun.sleep(500);
  // Sustained: back-to-back uploads of 50 events; the first event's id stands for the upload.
  phase = 1;
  const started = performance.now();
  for (let i = 0; i < uploads; i++) {
    const ids = Array.from({ length: 50 }, (_, k) => `sus-${i}-${k}`);
    const u = { t0: performance.now(), answeredAt: 0 };
    sent.set(ids[0]!, u);
    order.push(ids[0]!);
    const r = await agent.upload([agent.eventBatch(ids.map((task_id) => taskEvent({ task_id })))], fromAddress());
    u.answeredAt = Date.now();
    roundTrips[phase]!.push(performance.now() - u.t0);
    if (r.status !== 200) throw new Error(`upload: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const sustainedSeconds = (performance.now() - started) / 1000;
  await Bun.sleep(1000);
  const cpu = procStats(svc.proc.pid!).cpuSeconds - cpu0;
  const notices = tabs.reduce((n, t) => n + t.notices('task').length, 0) / tabs.length;

  const row = (name: string, ms: number[], expected: number) => {
    const s = [...ms].sort((a, b) => a - b);
    return {
      phase: name,
      samples: s.length,
      expected,
      p50_ms: Number(percentile(s, 50).toFixed(1)),
      p95_ms: Number(percentile(s, 95).toFixed(1)),
      max_ms: Number(s[s.length - 1]!.toFixed(1)),
    };
  };
  console.log(
    JSON.stringify(
      {
        database: dialectName,
        workers,
        stored_tasks: stored,
        seed_seconds: Number(seedSeconds.toFixed(1)),
        tabs: tabCount,
        tabs_per_worker: Object.fromEntries(perWorker),
        spaced: { ...row('spaced', latencies[0]!, spaced * tabCount), upload_round_trip: row('uploads', roundTrips[0]!, spaced) },
        sustained: {
          ...row('sustained', latencies[1]!, uploads * tabCount),
          upload_round_trip: row('uploads', roundTrips[1]!, uploads),
          events_per_second: Math.round((uploads * 50) / sustainedSeconds),
        },
        notices_per_tab: Number(notices.toFixed(1)),
        server_cpu_seconds: Number(cpu.toFixed(2)),
      },
      null,
      2,
    ),
  );
  for (const t of tabs) t.close();
} finally {
  await svc.stop();
  await bench.dropDatabase();
}
