// Task statistics at scale, and what the roll-up costs ingest (docs/benchmarks.md, "Task statistics").
//   bun bench/stats.ts [--pg] [tasks=1000000] [requests=200]
// A project with `tasks` tasks that finished over the last 7 days: the task rows written straight to
// the table (their events are not: no route reads them), their aggregates through the ingest path's
// own roll-up (src/stats/rollup.ts), fed each task's received/started/terminal events in calls of
// 500 tasks, oldest first, as uploads arrive. One maintenance pass follows, as the leader's would
// (minute rows past 48 h go, hour rows stay). Then each route is called `requests` times after 20
// warm-up calls, in-process through app.handle() with an administrator's session (the service as
// the API tests build it).
//   bun bench/stats.ts [--pg] --ingest [rounds=20] [names=1]
// The roll-up's share of the ingest store path, in-process, as bench/ingest-store.ts runs it (four
// uploads of 500 one-event frames per transaction, each a task.succeeded of a new task, spread over
// `names` task names). Each round times one such transaction through storeEventBatches (which rolls
// up) and one of the roll-up alone over another 2,000 such events, interleaved so a busy machine
// slows both alike; wall time and this process's CPU time are both reported.
import { Database } from 'bun:sqlite';
import { sql } from 'drizzle-orm';
import { bulkWrite, type BulkWrite } from '../src/db/bulk.ts';
import type { EventRecord } from '../src/ingest/events.ts';
import { isoMicros, nowMicros } from '../src/lib/clock.ts';
import { newTimeOrderedId } from '../src/lib/ids.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { pruneStats } from '../src/stats/jobs.ts';
import { rollupTaskEvents } from '../src/stats/rollup.ts';
import { testService } from '../tests/helpers/app.ts';
import { FAST_IDENTITY_ENV, setupAdmin } from '../tests/helpers/identity.ts';
import { dialectName, freshBench, percentile, usePostgres } from './lib/setup.ts';

if (process.argv.includes('--ingest')) {
  await measureRollupShare();
  process.exit(0);
}

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const TASKS = Number(args[0] ?? 1_000_000);
const REQUESTS = Number(args[1] ?? 200);
const PER_CALL = 500; // tasks per roll-up call (an upload of 500 frames)
const NAMES = 20;
const WEEK_US = 7 * 86_400_000_000;

// The service as the API tests build it (a fresh home and database, migrations applied), and its first administrator.
const svc = await testService({ dialect: usePostgres ? 'postgres' : 'sqlite', env: FAST_IDENTITY_ENV });
const { ctx, app } = svc;
const db = ctx.db;
const admin = await setupAdmin(svc, 'bench@example.com');
const cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
const project = (await admin.call('GET', '/api/v1/projects/default')).body as { id: string; slug: string };

const TASK_WRITE: BulkWrite = {
  table: 'tasks',
  columns: ['id', 'project_id', 'engine', 'task_id', 'name', 'queue', 'state', 'state_tier', 'state_at', 'exception', 'retry_count', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'worker_name', 'tags', 'created_at', 'updated_at'],
  json: new Set(['tags']),
  pgTypes: { state_tier: 'integer', retry_count: 'integer', runtime_ms: 'bigint' },
  conflict: 'ON CONFLICT DO NOTHING',
};

// A deterministic spread: runtimes log-uniform 5 ms .. 5 s, one task in 20 failing with one of 8 messages.
let seed = 42;
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
const EXCEPTIONS = ['TimeoutError', 'ValueError', 'KeyError', 'psycopg.OperationalError'];

const end = nowMicros();
const start = end - WEEK_US;
const t0 = performance.now();
for (let done = 0; done < TASKS; done += PER_CALL) {
  const rows: Record<string, unknown>[] = [];
  const records: EventRecord[] = [];
  for (let i = done; i < Math.min(TASKS, done + PER_CALL); i++) {
    const finished = Math.floor(start + ((i + 0.5) * WEEK_US) / TASKS);
    const runtime = Math.round(5 * 1000 ** random());
    const startedAt = finished - runtime * 1000;
    const failed = random() < 0.05;
    const name = `app.tasks.job_${i % NAMES}`;
    const taskId = crypto.randomUUID();
    const exception = failed ? EXCEPTIONS[i % EXCEPTIONS.length]! : null;
    const data = { task_name: name, queue: 'default', worker: `w${i % 4}@host`, ...(failed ? { exception, exception_message: `job ${i} failed on row ${i % 8} after ${runtime} ms` } : { runtime_ms: runtime }) };
    const rec = (kind: string, micros: number): EventRecord => ({ id: crypto.randomUUID(), engine: 'celery', kind, taskId, occurredAt: isoMicros(micros), occurredMicros: micros, data });
    records.push(rec('task.received', startedAt - 1000), rec('task.started', startedAt), rec(failed ? 'task.failed' : 'task.succeeded', finished));
    rows.push({
      id: newTimeOrderedId(),
      project_id: project.id,
      engine: 'celery',
      task_id: taskId,
      name,
      queue: 'default',
      state: failed ? 'failure' : 'success',
      state_tier: 1,
      state_at: isoMicros(finished),
      exception,
      retry_count: 0,
      received_at: isoMicros(startedAt - 1000),
      started_at: isoMicros(startedAt),
      finished_at: isoMicros(finished),
      runtime_ms: runtime,
      worker_name: `w${i % 4}@host`,
      tags: [],
      created_at: isoMicros(startedAt - 1000),
      updated_at: isoMicros(finished),
    });
  }
  await db.tx(async (tx) => {
    await bulkWrite(tx, TASK_WRITE, rows);
    await rollupTaskEvents(tx, project.id, records);
  });
  if ((done + PER_CALL) % 100_000 === 0) console.error(`seeded ${done + PER_CALL} tasks in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
const seedSeconds = (performance.now() - t0) / 1000;
/** Folds the seed's WAL into the file (a live installation's WAL holds seconds of writes, not a week's). */
function checkpoint(): void {
  if (ctx.database.dialect !== 'sqlite') return;
  const conn = new Database(ctx.database.path);
  conn.exec('PRAGMA busy_timeout = 60000');
  conn.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  conn.close();
}
checkpoint();
const pruned = await pruneStats(db, ctx.config);
const count = async (where = sql`1 = 1`) => Number((await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM task_aggregates WHERE ${where}`))[0]!.n);
const facts = {
  tasks: Number((await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM tasks`))[0]!.n),
  seed_seconds: Number(seedSeconds.toFixed(1)),
  minute_rows_pruned: pruned.minute_rows,
  minute_rows: await count(sql`span = 60`),
  hour_rows: await count(sql`span = 3600`),
  failure_groups: Number((await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM failure_groups`))[0]!.n),
};
if (db.dialect === 'sqlite') await db.tx((tx) => tx.run(sql`ANALYZE`));
else await db.run(sql`ANALYZE`);
checkpoint();
console.log(JSON.stringify({ bench: 'stats-seed', dialect: dialectName, ...facts }));

async function time(name: string, path: string): Promise<void> {
  const call = async () => {
    const res = await app.handle(new Request(`http://localhost${path}`, { headers: { host: 'localhost', cookie } }));
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.text();
  };
  for (let i = 0; i < 20; i++) await call();
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const t = performance.now();
    bytes = (await call()).length;
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const f = (x: number) => Number(x.toFixed(2));
  console.log(JSON.stringify({ bench: 'stats', dialect: dialectName, route: name, requests: REQUESTS, p50_ms: f(percentile(ms, 50)), p95_ms: f(percentile(ms, 95)), max_ms: f(ms[ms.length - 1]!), bytes }));
}

const base = `/api/v1/projects/${project.slug}`;
// The floor every project route pays (session, project and role look-ups, one read): the project itself.
await time('floor: GET /projects/{slug}', base);
await time('trends 7d (1h buckets), project', `${base}/trends?window=7d`);
await time('trends 7d (1h buckets), one task name', `${base}/trends?window=7d&task_name=app.tasks.job_3`);
await time('trends 30d (1d buckets), project', `${base}/trends?window=30d`);
await time('trends 24h (15m buckets), project', `${base}/trends?window=24h`);
await time('trends 24h (1m buckets), project', `${base}/trends?window=24h&bucket=1m`);
await time('stats 7d', `${base}/stats?window=7d`);
await time('stats 24h', `${base}/stats?window=24h`);
await time('failure-groups 7d', `${base}/failure-groups?window=7d`);
await time('home 7d', `/api/v1/home?window=7d`);

await svc.close();

/** --ingest: the roll-up's cost beside the whole store path (see the head of this file). */
async function measureRollupShare(): Promise<void> {
  const { readEvents, storeEventBatches } = await import('../src/ingest/service.ts');
  const { seedAgents } = await import('./lib/setup.ts');
  const { loadConfig } = await import('../src/config/load.ts');
  const { taskEvent } = await import('../tests/helpers/test-agent.ts');
  const rest = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const rounds = Number(rest[0] ?? 20);
  const names = Number(rest[1] ?? 1);
  const bench = await freshBench();
  const { projectId, agents } = await seedAgents(bench.env, 1);
  const agentId = agents[0]!.agentId;
  const db = openConfiguredDatabase(loadConfig({ env: bench.env }), { backgroundCheckpoints: true });
  let frameNo = 0;
  const upload = () =>
    Array.from({ length: 500 }, () => {
      const frameId = `ev_${++frameNo}`;
      const event = taskEvent({ task_id: crypto.randomUUID(), kind: 'task.succeeded', data: { task_name: `app.tasks.t${frameNo % names}`, queue: 'default', worker: 'w1@host', result: 3, runtime_ms: 12 } });
      return { frameId, records: readEvents({ events: [event] } as never, { projectId, agentId, frameId, nowMicros: nowMicros() }).records };
    });
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const spent = { store: { wall: 0, cpu: 0 }, rollup: { wall: 0, cpu: 0 } };
  const run = async (what: 'store' | 'rollup', fn: () => Promise<void>, count: boolean) => {
    const w = performance.now();
    const c = cpu();
    await fn();
    if (!count) return;
    spent[what].wall += performance.now() - w;
    spent[what].cpu += cpu() - c;
  };
  for (let r = 0; r < rounds + 3; r++) {
    const count = r >= 3; // three warm-up rounds
    const uploads = Array.from({ length: 4 }, upload);
    await run('store', () => db.tx(async (tx) => {
      for (const b of uploads) await storeEventBatches(tx, { projectId, agentId }, b, isoMicros(nowMicros()));
    }), count);
    const records = Array.from({ length: 4 }, upload).flatMap((u) => u.flatMap((b) => b.records));
    await run('rollup', () => db.tx((tx) => rollupTaskEvents(tx, projectId, records)), count);
  }
  await db.close();
  await bench.dropDatabase();
  const events = rounds * 2000;
  const us = (ms: number) => Number(((ms * 1000) / events).toFixed(2));
  const share = (k: 'wall' | 'cpu') => Number(((100 * spent.rollup[k]) / (spent.store[k] - spent.rollup[k])).toFixed(1));
  console.log(
    JSON.stringify({
      bench: 'stats-ingest',
      dialect: dialectName,
      names,
      events,
      store_us_per_event: { wall: us(spent.store.wall), cpu: us(spent.store.cpu) },
      rollup_us_per_event: { wall: us(spent.rollup.wall), cpu: us(spent.rollup.cpu) },
      rollup_cost_percent_of_store_without_it: { wall: share('wall'), cpu: share('cpu') },
    }),
  );
}
