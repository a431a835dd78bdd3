// The ingest store path alone, in-process: what one write transaction of the
// SQLite writer costs per event, without HTTP, decoding or the other threads.
//   bun bench/ingest-store.ts [--pg] [events=40000] [--stored=N] [--lifecycle]
// Each transaction holds four uploads (what group commit gathers from four
// agents), each 500 event_batch frames of one event: a task.succeeded of a new
// task with a random UUID id, as bench/agent-ingest.ts sends. Records are read
// the way the router reads them (content-derived ids) before the clock starts.
// --lifecycle: each task is reported three times instead (received, started,
// succeeded, each in a later transaction: bench/lib/task-events.ts).
// --stored=N: N events are stored first, untimed, through the same path (how
// the cost grows with the database).
// BENCH_PRE_SQL='DROP INDEX tasks_search; ...': run before the clock (what a part
// costs, switched off; docs/benchmarks.md).
// Besides the wall clock of the transactions it prints this process's CPU per
// event (cpu_us_per_event, upload set-up included) and, on PostgreSQL, the CPU
// of the server processes serving the bench's database (server_cpu_us_per_event):
// on a machine shared with other work these move less than the wall clock.
import { readEvents, storeEventBatches } from '../src/ingest/service.ts';
import { nowIso, nowMicros } from '../src/lib/clock.ts';
import { loadConfig } from '../src/config/load.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import type { PlainObject } from '../src/transport/json-convert.ts';
import { sql } from 'drizzle-orm';
import { dialectName, freshBench, procStats, seedAgents } from './lib/setup.ts';
import { TaskEvents } from './lib/task-events.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const events = Number(args[0] ?? 40_000);
const storedFirst = Number(process.argv.find((a) => a.startsWith('--stored='))?.split('=')[1] ?? 0);
const lifecycle = process.argv.includes('--lifecycle');
const UPLOADS = 4;
const FRAMES = 500;
const PER_TRANSACTION = UPLOADS * FRAMES;

const bench = await freshBench();
const { projectId, agents } = await seedAgents(bench.env, 1);
const agentId = agents[0]!.agentId;
// As `svc serve` opens it: WAL checkpoints in a thread of their own.
const db = openConfiguredDatabase(loadConfig({ env: bench.env }), { backgroundCheckpoints: true });
for (const q of (process.env.BENCH_PRE_SQL ?? '').split(';').filter((x) => x.trim())) await db.tx((tx) => tx.run(sql.raw(q)));

let frameNo = 0;
const stream = new TaskEvents(lifecycle);

/** One upload: FRAMES one-event batches, read as the router reads them. */
function upload() {
  return Array.from({ length: FRAMES }, () => {
    const frameId = `ev_${++frameNo}`;
    const payload = { events: [stream.next()] } as unknown as PlainObject;
    return { frameId, records: readEvents(payload, { projectId, agentId, frameId, nowMicros: nowMicros() }).records };
  });
}

/** Stores `count` events, a transaction per PER_TRANSACTION; returns the milliseconds spent in transactions. */
async function store(count: number): Promise<{ ms: number; cpuMicros: number }> {
  let spent = 0;
  const cpu0 = process.cpuUsage();
  for (let done = 0; done < count; done += PER_TRANSACTION) {
    // --lifecycle: only tasks stored by earlier transactions take their next step in this one.
    stream.nextBatch();
    const uploads = Array.from({ length: UPLOADS }, upload);
    const t0 = performance.now();
    await db.tx(async (tx) => {
      for (const batches of uploads) await storeEventBatches(tx, { projectId, agentId }, batches, nowIso());
    });
    spent += performance.now() - t0;
  }
  const cpu = process.cpuUsage(cpu0);
  // This process's CPU (the bench's setup of each upload included) moves less with the machine's load than the wall clock.
  return { ms: spent, cpuMicros: cpu.user + cpu.system };
}

/** PostgreSQL: CPU microseconds the server's processes serving this database have used (the server
 * runs on this machine; its work is most of the store path's there, and the wall clock moves with
 * the load of other processes more than CPU time does). */
async function serverCpuMicros(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (dialectName !== 'postgres') return out;
  const pids = await db.all<{ pid: number }>(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  for (const { pid } of pids) out.set(pid, procStats(pid).cpuSeconds * 1_000_000);
  return out;
}

await store(storedFirst);
const server0 = await serverCpuMicros();
const { ms, cpuMicros } = await store(events);
const server1 = await serverCpuMicros();
let serverMicros = 0;
for (const [pid, at] of server1) serverMicros += at - (server0.get(pid) ?? 0);
await db.close();
await bench.dropDatabase();
console.log(
  JSON.stringify({
    bench: 'ingest-store',
    dialect: dialectName,
    mode: lifecycle ? 'lifecycle' : 'insert-only',
    stored_first: storedFirst,
    events,
    us_per_event: Number(((ms * 1000) / events).toFixed(1)),
    events_per_second: Math.round(events / (ms / 1000)),
    cpu_us_per_event: Number((cpuMicros / events).toFixed(1)),
    ...(dialectName === 'postgres' ? { server_cpu_us_per_event: Number((serverMicros / events).toFixed(1)) } : {}),
  }),
);
