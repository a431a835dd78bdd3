// Long-poll ingest throughput of the compiled binary, in events per second.
//   bun bench/agent-ingest.ts [--pg] [agents=4] [uploads-per-agent=20] [--workers=N] [--warmup=uploads-per-agent] [--lifecycle]
// Prints the rate, svc CPU (all threads, and per thread name) and the benchmark's own CPU.
// Each agent probes, then uploads batches of 500 frames with one event per
// frame (what z4j agents send), each a task.succeeded of a new task whose id
// is a random UUID as Celery's are (ids counting up would land side by side in
// the task-id indexes and flatter them), one request in flight per agent. Frames are
// signed before the clock starts so the figure is the server's. The rate is
// events stored (counted in the database afterwards) over wall time.
// --warmup=N: each agent first sends N untimed uploads (a cold process spends
// part of its first seconds compiling); their events are not counted.
// --lifecycle: each task is reported three times instead (received, started,
// succeeded, each in a later upload of its agent: bench/lib/task-events.ts).
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config/load.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { TestAgent } from '../tests/helpers/test-agent.ts';
import { dialectName, freshBench, procStats, seedAgents, startServer, threadCpu, threadCpuSpent } from './lib/setup.ts';
import { TaskEvents } from './lib/task-events.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const agentCount = Number(args[0] ?? 4);
const uploadsPerAgent = Number(args[1] ?? 20);
const FRAMES = 500;

const bench = await freshBench();
const seeded = await seedAgents(bench.env, agentCount);
const workers = Number(process.argv.find((a) => a.startsWith('--workers='))?.split('=')[1] ?? 1);
const server = await startServer(bench.env, workers);
const agents = seeded.agents.map((a) => new TestAgent({ ...a, baseUrl: server.url }));
for (const a of agents) if ((await a.probe()).status !== 200) throw new Error('probe failed');

// Warm-up, untimed: each agent's first uploads run while the JIT compiles the
// hot paths (a service that has been up for a while is past this).
const warmup = Number(process.argv.find((a) => a.startsWith('--warmup='))?.split('=')[1] ?? 0);
const lifecycle = process.argv.includes('--lifecycle');
const streams = new Map(agents.map((a) => [a, new TaskEvents(lifecycle)]));
const batch = (a: TestAgent) => {
  const stream = streams.get(a)!;
  stream.nextBatch();
  return JSON.stringify({ frames: Array.from({ length: FRAMES }, () => a.eventBatch([stream.next()])) });
};
let warmAccepted = 0;
const warmBodies = agents.map((a) => Array.from({ length: warmup }, () => batch(a)));
// Sign everything up front (well inside the 60 s freshness window).
const bodies = agents.map((a) => Array.from({ length: uploadsPerAgent }, () => batch(a)));
await Promise.all(
  agents.map(async (a, i) => {
    for (const body of warmBodies[i]!) {
      const r = await a.uploadRaw(body);
      if (r.status !== 200) throw new Error(`warm-up upload ${r.status}`);
      warmAccepted += r.body.accepted;
    }
  }),
);
const before = procStats(server.proc.pid);
const threadsBefore = threadCpu(server.proc.pid);
const clientBefore = process.cpuUsage();
const t0 = performance.now();
let accepted = 0;
await Promise.all(
  agents.map(async (a, i) => {
    for (const body of bodies[i]!) {
      const r = await a.uploadRaw(body);
      if (r.status !== 200) throw new Error(`upload ${r.status}: ${JSON.stringify(r.body)}`);
      accepted += r.body.accepted;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
const after = procStats(server.proc.pid);
const threads = threadCpuSpent(threadsBefore, threadCpu(server.proc.pid));
const client = process.cpuUsage(clientBefore);
await server.stop();

const db = openConfiguredDatabase(loadConfig({ env: bench.env }));
const [row] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events`);
const [tasks] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM tasks`);
await db.close();
await bench.dropDatabase();
// Warm-up events (each stored: fresh tasks) are not part of the timed run.
const stored = Number(row!.n) - warmAccepted;
console.log(
  JSON.stringify({
    bench: 'agent-ingest',
    dialect: dialectName,
    mode: lifecycle ? 'lifecycle' : 'insert-only',
    agents: agentCount,
    events: stored,
    // Insert-only: every warm-up event made a task of its own.
    tasks: Number(tasks!.n) - (lifecycle ? 0 : warmAccepted),
    warmup_events: warmAccepted,
    accepted,
    seconds: Number(seconds.toFixed(2)),
    events_per_second: Math.round(stored / seconds),
    server_cpu_seconds: Number((after.cpuSeconds - before.cpuSeconds).toFixed(1)),
    server_rss_mb: Math.round(after.rssMb),
    server_thread_cpu_seconds: threads,
    bench_cpu_seconds: Number(((client.user + client.system) / 1e6).toFixed(2)),
  }),
);
