// The task explorer at scale: search and list pages over 1,000,000 stored tasks.
//   bun bench/tasks-scale.ts [--pg] [--tasks=1000000] [--runs=40] [--keep] [--reuse=<state.json>]
// Seeds the tasks in SQL at migration 0009 (generated rows in 100,000-row
// transactions: names, queues, states, priorities, workers, args, kwargs,
// results and exceptions with realistic spreads, chains of five every 50
// tasks, seven days of first-seen times; a second project of 5,000 tasks
// of the same kind and a third of 20,000), then times migration 0010 on them
// (the search index's backfill and the sort indexes) and the later ones up to
// this build's (0020 makes SQLite's index again; the bench then makes it as
// ingest would have, two entries for a finished task), then measures through
// the service function the route calls (src/tasks/explorer.ts listTasks, 50
// rows a page, highlights included): each search and each list page `runs`
// times after two warm-up calls. PostgreSQL (--pg, server from
// SVC_TEST_PG_URL) is analysed after the migration, as autovacuum would.
// --keep leaves the database (in a new directory under the temporary directory) and writes its
// settings to a state file that --reuse=<file> measures again without seeding.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { loadConfigMintingSecrets } from '../src/config/secrets.ts';
import type { Db } from '../src/db/connect.ts';
import { upgrade } from '../src/db/migrate.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { listTasks, WORKER_COUNT_SCAN, type TaskQuery } from '../src/tasks/explorer.ts';
import { workerStateCounts } from '../src/tasks/explorer-store.ts';
import { encodeCursor, SORT_SPECS, SORTS, tieOf, type Order, type Sort } from '../src/tasks/paging.ts';
import { insertProject } from '../tests/helpers/agents.ts';
import { dialectSql, seedTasks } from './lib/seed-tasks.ts';
import { dialectName, freshBench, percentile, usePostgres } from './lib/setup.ts';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const TASKS = Number(arg('tasks') ?? 1_000_000);
const RUNS = Number(arg('runs') ?? 40);
const SMALL = 5_000;
/** A third project, too large to be sorted from its own rows, walked through the indexes of every project's tasks. */
const MID = 20_000;
const reuse = arg('reuse');

interface State {
  env: Record<string, string>;
  projectId: string;
  /** A second project of SMALL tasks (the sorts of a small project among a large one's). */
  smallId: string;
  /** A third of MID tasks (absent from states kept before it: then looked up by its slug, seeded when missing). */
  midId?: string;
  tasks: number;
  seedSeconds: number;
  migrateSeconds: number;
  laterMigrationsSeconds: number;
}

/** The id of task number i (as the seed writes it). */
async function taskIdOf(db: Db, i: number): Promise<string> {
  const { taskId } = dialectSql(db.dialect === 'postgres');
  return (await db.all<{ t: string }>(sql.raw(`SELECT ${taskId(db.dialect === 'postgres' ? `${i}::bigint` : String(i))} AS t`)))[0]!.t;
}

function summary(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  return { p50: Number(percentile(s, 50).toFixed(2)), p95: Number(percentile(s, 95).toFixed(2)), max: Number(s[s.length - 1]!.toFixed(2)) };
}

async function timed(db: Db, projectId: string, queries: () => TaskQuery, run = (q: TaskQuery) => listTasks(db, projectId, { limit: 50, ...q }).then((p) => (p.scan_limited ? Math.max(1, p.items.length) : p.items.length))): Promise<number[]> {
  const out: number[] = [];
  for (let r = -2; r < RUNS; r++) {
    const q = queries();
    const t0 = performance.now();
    const n = await run(q);
    const ms = performance.now() - t0;
    if (r >= 0) out.push(ms);
    // A page finds something, or says where its walk stopped (scan_limited), unless nothing can match.
    if (n === 0 && !q.q?.includes('zzq') && !q.name?.includes('zzq') && q.state !== 'failure') throw new Error(`no rows for ${JSON.stringify(q)}`);
  }
  return out;
}

/** A cursor at `fraction` of the way through the sort (read once with OFFSET, untimed). */
async function deepCursor(db: Db, projectId: string, sort: Sort, order: Order, fraction: number, where = ''): Promise<string> {
  const spec = SORT_SPECS[sort];
  const tie = tieOf(sort, db.dialect);
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  const nullsLast = spec.nullable ? `(${spec.columns[0]} IS NULL), ` : '';
  const [count] = await db.all<{ n: number }>(sql.raw(`SELECT count(*) AS n FROM tasks WHERE project_id = '${projectId}'${where}`));
  const offset = Math.floor(Number(count!.n) * fraction);
  const [row] = await db.all<Record<string, unknown>>(
    sql.raw(`SELECT ${spec.columns.join(', ')}, ${tie} AS tie FROM tasks WHERE project_id = '${projectId}'${where} ORDER BY ${nullsLast}${[...spec.columns, tie].map((c) => `${c} ${dir}`).join(', ')} LIMIT 1 OFFSET ${offset}`),
  );
  const key = spec.columns.map((c) => (row![c] === null ? null : c === 'runtime_ms' ? Number(row![c]) : (row![c] as string)));
  return encodeCursor({ kind: 'key', sort, order, key, id: tie === 'rowid' ? Number(row!.tie) : (row!.tie as string) });
}

let state: State;
let db: Db;
let drop: () => Promise<void> = async () => {};
if (reuse) {
  state = JSON.parse(readFileSync(reuse, 'utf8')) as State;
  db = openConfiguredDatabase(loadConfigMintingSecrets({ env: state.env }).loaded);
} else {
  // --keep: a home outside the temporary directories (those go when the process ends).
  const home = process.argv.includes('--keep') ? mkdtempSync(join(tmpdir(), 'tasks-scale-')) : null;
  const bench = await freshBench(home ? { SVC_HOME: home } : {});
  drop = bench.dropDatabase;
  db = openConfiguredDatabase(loadConfigMintingSecrets({ env: bench.env }).loaded);
  await upgrade(db, '0009');
  const { id: projectId } = await insertProject(db, 'bench');
  const baseMs = Date.now() - TASKS * 600 - 60_000;
  const { id: smallId } = await insertProject(db, 'small');
  const t0 = performance.now();
  await seedTasks(db, projectId, TASKS, baseMs);
  await seedTasks(db, smallId, SMALL, baseMs, TASKS + 1);
  await seedTasks(db, (await insertProject(db, 'mid')).id, MID, baseMs, TASKS + SMALL + 1);
  const seedSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await upgrade(db, '0010');
  const migrateSeconds = (performance.now() - t1) / 1000;
  const t2 = performance.now();
  await upgrade(db);
  const laterMigrationsSeconds = (performance.now() - t2) / 1000;
  if (db.dialect === 'sqlite') {
    // The migration makes one search entry a task; ingest makes a finished task two (src/tasks/store.ts
    // indexForSearch): the first from what task.received carried, the completion entry when its result
    // or exception came. Searches read what ingest makes.
    await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO tasks_fts (tasks_fts) VALUES ('delete-all')`);
      await tx.run(sql`INSERT INTO tasks_fts (rowid, name, args, kwargs) SELECT 2 * rowid, name, args, kwargs FROM tasks`);
      await tx.run(sql`INSERT INTO tasks_fts (rowid, name, args, kwargs, result, exception)
        SELECT 2 * rowid + 1, name, args, kwargs, result, exception FROM tasks WHERE result IS NOT NULL OR exception IS NOT NULL`);
    });
  }
  if (db.dialect === 'postgres') await db.run(sql`VACUUM ANALYZE tasks`);
  state = { env: bench.env, projectId, smallId, tasks: TASKS, seedSeconds, migrateSeconds, laterMigrationsSeconds };
  if (home) {
    writeFileSync(join(home, 'tasks-scale.json'), JSON.stringify(state));
    process.stderr.write(`kept: --reuse=${join(home, 'tasks-scale.json')}\n`);
  }
}
const { projectId } = state;
// The mid project: seeded after the migrations when a kept state lacks it (its rows then get their search
// entries from the triggers, which the lists below do not use).
const midId = await (async () => {
  const [row] = await db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'mid'`);
  if (row) return row.id;
  const { id } = await insertProject(db, 'mid');
  await seedTasks(db, id, MID, Date.now() - MID * 600, 2_000_000);
  if (db.dialect === 'postgres') await db.run(sql`ANALYZE tasks`);
  return id;
})();
const rnd = (n: number) => 1 + Math.floor(Math.random() * n);

const searches: Record<string, () => TaskQuery> = {};
const ids = await Promise.all(Array.from({ length: 50 }, () => taskIdOf(db, rnd(state.tasks))));
const anyId = () => ids[Math.floor(Math.random() * ids.length)]!;
searches['task id, exact'] = () => ({ q: anyId() });
searches['task id, first 8 characters'] = () => ({ q: anyId().slice(0, 8) });
searches['order id in args (1-3 tasks)'] = () => ({ q: `order-${(rnd(state.tasks) * 7919) % 400_000}` });
searches['user id in kwargs (~20 tasks)'] = () => ({ q: `user-${(rnd(state.tasks) * 13) % 50_000}` });
searches['exception word (1.2%)'] = () => ({ q: 'ConnectionError' });
searches['exception phrase (1.2%)'] = () => ({ q: '"timed out"' });
searches['name word (12.5%)'] = () => ({ q: 'charge_card' });
searches['word in every task'] = () => ({ q: 'app' });
searches['prefix, rare (tim*: exceptions)'] = () => ({ q: 'tim*' });
searches['prefix of a common word (charg*)'] = () => ({ q: 'charg*' });
searches['task id, first 5 characters'] = () => ({ q: anyId().slice(0, 5) });
searches['two words'] = () => ({ q: 'billing charge' });
searches['common word + state=failure'] = () => ({ q: 'order', state: 'failure' });
searches['rare word + state=failure'] = () => ({ q: `sku-${(rnd(state.tasks) * 31) % 5000}`, state: 'failure' });
searches['word pair no task of the state holds (sku-0, state=failure)'] = () => ({ q: 'sku-0', state: 'failure' });
searches['word pair in ~20 tasks, one word in every task (user-5)'] = () => ({ q: 'user-5' });
searches['phrase only other states hold ("status ok", state=failure)'] = () => ({ q: '"status ok"', state: 'failure' });
searches['no match'] = () => ({ q: 'zzqnothing' });
searches['name word, sorted by runtime'] = () => ({ q: 'charge_card', sort: 'runtime_ms' });

const lists: Record<string, () => TaskQuery> = {};
for (const sort of SORTS) {
  for (const order of ['desc', 'asc'] as const) {
    lists[`${sort} ${order}, first page`] = () => ({ sort, order });
    const deep = await deepCursor(db, projectId, sort, order, 0.9);
    lists[`${sort} ${order}, 90% deep`] = () => ({ sort, order, cursor: deep });
  }
}
const deepFailures = await deepCursor(db, projectId, 'created_at', 'desc', 0.9, " AND state = 'failure'");
lists['state=failure, first page'] = () => ({ state: 'failure' });
lists['state=failure, 90% deep'] = () => ({ state: 'failure', cursor: deepFailures });
lists['priority=critical, first page'] = () => ({ priority: 'critical' });
lists['priority=critical,high by finished_at'] = () => ({ priority: 'critical,high', sort: 'finished_at' });
lists['queue=billing by runtime, first page'] = () => ({ queue: 'billing', sort: 'runtime_ms' });
// Selective filters the sort's index does not hold: a page walks the index past the rows that do not match.
const deepRevoked = await deepCursor(db, projectId, 'runtime_ms', 'desc', 0.9, " AND state = 'revoked'");
lists['state=revoked (1%) by runtime, first page'] = () => ({ state: 'revoked', sort: 'runtime_ms' });
lists['state=revoked (1%) by runtime, 90% deep'] = () => ({ state: 'revoked', sort: 'runtime_ms', cursor: deepRevoked });
const deepWorker = await deepCursor(db, projectId, 'created_at', 'desc', 0.9, " AND worker_name = 'celery@worker-3'");
lists['worker=celery@worker-3, 90% deep'] = () => ({ worker: 'celery@worker-3', cursor: deepWorker });
const deepName = await deepCursor(db, projectId, 'created_at', 'desc', 0.9, " AND lower(name) LIKE '%mail.send_email%'");
lists['name contains (2.5%), first page'] = () => ({ name: 'mail.send_email' });
lists['name contains (2.5%), 90% deep'] = () => ({ name: 'mail.send_email', cursor: deepName });
lists['queue=images, state=failure, worker-3 (0.25%)'] = () => ({ queue: 'images', state: 'failure', worker: 'celery@worker-3' });
lists['name matching no task'] = () => ({ name: 'zzq-no-such-task' });
const dayAgo = new Date(Date.now() - 86_400_000);
const window = (from: Date) => ({ since: from.toISOString().replace('Z', '000+00:00'), until: new Date(from.getTime() + 3_600_000).toISOString().replace('Z', '000+00:00') });
lists['one hour a day ago (since/until)'] = () => window(dayAgo);

// The small project's sorts: its 5,000 tasks among the large one's million.
const smallLists: Record<string, () => TaskQuery> = {};
for (const sort of ['runtime_ms', 'name', 'finished_at'] as const) {
  smallLists[`small project: ${sort} desc, first page`] = () => ({ sort });
  const deep = await deepCursor(db, state.smallId, sort, 'desc', 0.9);
  smallLists[`small project: ${sort} desc, 90% deep`] = () => ({ sort, cursor: deep });
}

// The small project's searches (its own matches, not the newest of every project's).
const smallSearches: Record<string, () => TaskQuery> = {
  'small project: name word': () => ({ q: 'charge_card' }),
  'small project: exception word': () => ({ q: 'ConnectionError' }),
  'small project: word in every task': () => ({ q: 'app' }),
  'small project: name word, sorted by runtime': () => ({ q: 'charge_card', sort: 'runtime_ms' }),
  'small project: prefix (charg*)': () => ({ q: 'charg*' }),
};

// The mid project: filters its slim sorts' indexes do not hold (the walk's budget counts every project's entries).
const midLists: Record<string, () => TaskQuery> = {
  'mid project: name matching no task, by runtime': () => ({ name: 'zzq-no-such-task', sort: 'runtime_ms' }),
  'mid project: state=revoked by runtime': () => ({ state: 'revoked', sort: 'runtime_ms' }),
  'mid project: runtime_ms desc, first page': () => ({ sort: 'runtime_ms' }),
};

const results: Record<string, Record<string, ReturnType<typeof summary>>> = { search: {}, list: {}, other: {} };
const all = { search: [] as number[], list: [] as number[] };
for (const [kind, table, project] of [['search', searches, projectId], ['search', smallSearches, state.smallId], ['list', lists, projectId], ['list', smallLists, state.smallId], ['list', midLists, midId]] as const) {
  for (const [name, query] of Object.entries(table)) {
    const ms = await timed(db, project, query);
    results[kind]![name] = summary(ms);
    all[kind].push(...ms);
    process.stderr.write(`${kind} ${name}: ${JSON.stringify(results[kind]![name])}\n`);
  }
}
// A worker's detail: the counts of its tasks by state over an hour and a day (the part that reads
// tasks: at most WORKER_COUNT_SCAN of the newest).
for (const hours of [1, 24]) {
  const since = () => new Date(Date.now() - hours * 3_600_000).toISOString().replace('Z', '000+00:00');
  const ms = await timed(db, projectId, () => ({}), () => workerStateCounts(db, projectId, { name: 'celery@worker-3', engine: 'celery' }, since(), WORKER_COUNT_SCAN).then((c) => c.scanned + 1));
  results.other![`worker detail, ${hours} h window`] = summary(ms);
  process.stderr.write(`other worker detail ${hours} h: ${JSON.stringify(results.other![`worker detail, ${hours} h window`])}\n`);
}
await db.close();
if (!process.argv.includes('--keep') && !reuse) await drop();
console.log(
  JSON.stringify({
    bench: 'tasks-scale',
    dialect: dialectName,
    postgres: usePostgres,
    tasks: state.tasks,
    runs: RUNS,
    seed_seconds: Number(state.seedSeconds.toFixed(1)),
    migration_0010_seconds: Number(state.migrateSeconds.toFixed(1)),
    later_migrations_seconds: Number(state.laterMigrationsSeconds.toFixed(1)),
    search_all: summary(all.search),
    list_all: summary(all.list),
    ...results,
  }),
);
