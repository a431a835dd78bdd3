// Memory and CPU of the compiled binary holding many WebSocket agents that
// heartbeat like z4j agents do (a heartbeat and an agent_status frame every
// 10 s, each agent's first at a random offset).
//   bun bench/ws-agents.ts [--pg] [agents=1000] [seconds=60]
// Agents connect through a trusted proxy address with distinct
// X-Forwarded-For values, as they would from distinct hosts (the per-IP
// connect bucket allows 600 a minute per address). Reports the server's RSS
// and CPU (all its processes) over the steady window after every agent is
// connected, and the frames it answered.
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config/load.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { TestAgent, type WsAgent } from '../tests/helpers/test-agent.ts';
import { dialectName, freshBench, procStats, seedAgents, startServer } from './lib/setup.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const count = Number(args[0] ?? 1000);
const seconds = Number(args[1] ?? 60);
const HEARTBEAT_MS = 10_000;

const bench = await freshBench({ SVC_TRUSTED_PROXIES: '127.0.0.1' });
const seeded = await seedAgents(bench.env, count);
const server = await startServer(bench.env);
const idle = procStats(server.proc.pid);

const sockets: WsAgent[] = [];
const t0 = performance.now();
for (let i = 0; i < seeded.agents.length; i += 50) {
  const part = seeded.agents.slice(i, i + 50).map((a, k) => {
    const agent = new TestAgent({ ...a, baseUrl: server.url });
    const n = i + k;
    return agent.connect({ headers: { 'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` }, hello: { worker_id: `bench-${n}` } });
  });
  sockets.push(...(await Promise.all(part)));
}
const connectSeconds = (performance.now() - t0) / 1000;
if (sockets.some((s) => s.closeInfo)) throw new Error('some agents were refused');

let sent = 0;
const timers = sockets.map((ws) => {
  const beat = () => {
    ws.send('heartbeat', { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} });
    ws.send('agent_status', { agent_version: '1.13.0', protocol_version: '2', buffer_depth: 0, current_session_age_seconds: 12.5 });
    sent += 2;
  };
  const first = setTimeout(() => {
    beat();
    timers2.push(setInterval(beat, HEARTBEAT_MS));
  }, Math.random() * HEARTBEAT_MS);
  return first;
});
const timers2: ReturnType<typeof setInterval>[] = [];

// Let the first round of heartbeats settle, then measure a steady window.
await Bun.sleep(HEARTBEAT_MS + 2000);
const start = procStats(server.proc.pid);
const sentBefore = sent;
let peakRss = start.rssMb;
const w0 = performance.now();
while (performance.now() - w0 < seconds * 1000) {
  await Bun.sleep(1000);
  peakRss = Math.max(peakRss, procStats(server.proc.pid).rssMb);
}
const end = procStats(server.proc.pid);
const window = (performance.now() - w0) / 1000;
for (const t of timers) clearTimeout(t);
for (const t of timers2) clearInterval(t);
const closedEarly = sockets.filter((s) => s.closeInfo).length;
for (const s of sockets) s.close();
await server.stop();

const db = openConfiguredDatabase(loadConfig({ env: bench.env }));
const [samples] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM agent_health_samples`);
await db.close();
await bench.dropDatabase();
console.log(
  JSON.stringify({
    bench: 'ws-agents',
    dialect: dialectName,
    agents: count,
    connect_seconds: Number(connectSeconds.toFixed(1)),
    window_seconds: Number(window.toFixed(0)),
    frames_per_second: Math.round((sent - sentBefore) / window),
    idle_rss_mb: Math.round(idle.rssMb),
    steady_rss_mb: Math.round(end.rssMb),
    peak_rss_mb: Math.round(peakRss),
    cpu_percent: Number((((end.cpuSeconds - start.cpuSeconds) / window) * 100).toFixed(1)),
    closed_during_window: closedEarly,
    health_samples: Number(samples!.n),
  }),
);
