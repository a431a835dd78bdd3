// `svc backup` of a large SQLite database while the service keeps ingesting.
//   bun bench/backup.ts [gigabytes=1] [agents=6] [--rounds=3] [--phase=15] [--nice=N]
// Fills a fresh home's database with stored task events in SQL (three events
// a task, payloads of about 600 bytes) until it holds `gigabytes`, starts
// dist/svc serve, and keeps `agents` long-poll agents uploading batches of 500
// frames (one event each, signed as they are sent, one request in flight per
// agent; each from an address of its own through X-Forwarded-For, as the
// per-address limit of 600 requests a minute would otherwise cap the rate at
// 5,000 events a second). After a 5 s warm-up, each round is --phase seconds
// of ingest alone, then one `dist/svc backup` to its end (under `nice -n N`
// with --nice). The machine's speed drifts within minutes, so each backup is
// compared with the ingest-alone window just before it. Prints per round the
// backup's time (the snapshot until svc backup reports it, then the file),
// the WAL's largest size, and for each window the events stored per second and
// the upload latency.
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config/load.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { seedTaskEvents } from '../tests/helpers/bulk-events.ts';
import { binaryPath } from '../tests/helpers/binary.ts';
import { tempDir } from '../tests/helpers/home.ts';
import { taskEvent, TestAgent } from '../tests/helpers/test-agent.ts';
import { freshBench, percentile, seedAgents, startServer } from './lib/setup.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const gigabytes = Number(args[0] ?? 1);
const agentCount = Number(args[1] ?? 6);
const rounds = flag('rounds', 3);
const phaseSeconds = flag('phase', 15);
const nice = process.argv.some((a) => a.startsWith('--nice=')) ? flag('nice', 10) : null;
const FRAMES = 500;

const bench = await freshBench({ SVC_TRUSTED_PROXIES: '127.0.0.1' });
const seeded = await seedAgents(bench.env, agentCount);
const dbFile = join(bench.env.SVC_HOME!, 'svc.db');
const size = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

// Fill: 50,000 tasks (150,000 events) a round until the database holds the target.
const fillStart = performance.now();
{
  const db = openConfiguredDatabase(loadConfig({ env: bench.env }));
  const stored = async () => Number((await db.all<{ n: number }>(sql`SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()`))[0]!.n);
  while ((await stored()) < gigabytes * 1024 ** 3) {
    await seedTaskEvents(db, { projectId: seeded.projectId, agentId: seeded.agents[0]!.agentId, tasks: 50_000, payloadBytes: 600 });
    process.stderr.write(`filled ${Math.round((await stored()) / 1024 ** 2)} MB in ${Math.round((performance.now() - fillStart) / 1000)} s\n`);
  }
  await db.close();
}
const fillSeconds = (performance.now() - fillStart) / 1000;

const server = await startServer(bench.env);
const agents = seeded.agents.map((a) => new TestAgent({ ...a, baseUrl: server.url }));
for (const a of agents) if ((await a.probe()).status !== 200) throw new Error('probe failed');

interface Upload {
  at: number;
  ms: number;
  events: number;
}
const uploads: Upload[] = [];
let stopping = false;
const body = (a: TestAgent) =>
  JSON.stringify({
    frames: Array.from({ length: FRAMES }, () =>
      a.eventBatch([taskEvent({ task_id: crypto.randomUUID(), data: { task_name: 'app.tasks.add', queue: 'default', worker: 'w1@host', result: 3, runtime_ms: 12 } })]),
    ),
  });
const loops = agents.map(async (a, i) => {
  const from = { 'x-forwarded-for': `10.0.0.${i + 1}` };
  while (!stopping) {
    const text = body(a);
    const t0 = performance.now();
    const r = await a.uploadRaw(text, from);
    if (r.status !== 200) throw new Error(`upload ${r.status}: ${JSON.stringify(r.body)}`);
    uploads.push({ at: performance.now(), ms: performance.now() - t0, events: r.body.accepted });
  }
});

// The WAL's size, sampled every 100 ms.
let walMax = 0;
const walSampler = setInterval(() => (walMax = Math.max(walMax, size(`${dbFile}-wal`))), 100);

function window(from: number, to: number) {
  const inside = uploads.filter((u) => u.at > from && u.at <= to);
  const ms = inside.map((u) => u.ms).sort((a, b) => a - b);
  return {
    seconds: Number(((to - from) / 1000).toFixed(1)),
    events_per_second: Math.round(inside.reduce((n, u) => n + u.events, 0) / ((to - from) / 1000)),
    upload_ms_p50: Math.round(percentile(ms, 50) ?? 0),
    upload_ms_max: Math.round(ms[ms.length - 1] ?? 0),
  };
}

/** Runs svc backup; returns when it started, reported its snapshot, and ended. */
async function backup(output: string): Promise<{ from: number; snapshot: number; to: number; walAtSnapshot: number }> {
  const from = performance.now();
  const proc = Bun.spawn([...(nice === null ? [] : ['nice', '-n', String(nice)]), binaryPath(), 'backup', '-o', output], { env: bench.env, stdout: 'ignore', stderr: 'pipe' });
  // Read as written: its "snapshot taken in X s; writing ..." line ends the snapshot.
  let stderr = '';
  let snapshot = 0;
  let walAtSnapshot = 0;
  const decoder = new TextDecoder();
  const reader = proc.stderr.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    stderr += decoder.decode(r.value, { stream: true });
    if (!snapshot && stderr.includes('snapshot taken in')) {
      snapshot = performance.now();
      walAtSnapshot = walMax;
    }
  }
  if ((await proc.exited) !== 0) throw new Error(`svc backup failed: ${stderr}`);
  return { from, snapshot, to: performance.now(), walAtSnapshot };
}

await Bun.sleep(5000); // warm-up: the JIT compiles the hot paths
const dir = tempDir('svc-bench-backup-');
const results = [];
for (let round = 1; round <= rounds; round++) {
  const aloneFrom = performance.now();
  await Bun.sleep(phaseSeconds * 1000);
  walMax = 0;
  const databaseMb = Math.round(size(dbFile) / 1024 ** 2);
  const output = join(dir, `backup-${round}.tar`);
  const b = await backup(output);
  const fileMb = Math.round(size(output) / 1024 ** 2);
  rmSync(output);
  const alone = window(aloneFrom, b.from);
  const snapshot = window(b.from, b.snapshot);
  const file = window(b.snapshot, b.to);
  const during = window(b.from, b.to);
  results.push({
    round,
    database_mb: databaseMb,
    backup_file_mb: fileMb,
    backup_seconds: Number(((b.to - b.from) / 1000).toFixed(1)),
    snapshot_seconds: Number(((b.snapshot - b.from) / 1000).toFixed(1)),
    wal_max_mb_snapshot: Math.round(b.walAtSnapshot / 1024 ** 2),
    wal_max_mb_backup: Math.round(walMax / 1024 ** 2),
    alone,
    during_snapshot: snapshot,
    during_file: file,
    during_backup_vs_alone: Number((during.events_per_second / alone.events_per_second).toFixed(2)),
  });
}
stopping = true;
await Promise.all(loops);
clearInterval(walSampler);
await server.stop();
await bench.dropDatabase();
console.log(JSON.stringify({ bench: 'backup', gigabytes, agents: agentCount, nice, fill_seconds: Math.round(fillSeconds), rounds: results }, null, 1));
