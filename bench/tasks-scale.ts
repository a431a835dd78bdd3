// The task explorer at scale: search and list pages over 1,000,000 stored tasks.
//   bun bench/tasks-scale.ts [--pg] [--tasks=1000000] [--runs=40] [--keep] [--reuse=<state.json>]
// Seeds the tasks in SQL at migration 0009 (generated rows in 100,000-row
// transactions: names, queues, states, priorities, workers, args, kwargs,
// results and exceptions with realistic spreads, chains of five every 50
// tasks, seven days of first-seen times; and a second project of 5,000 tasks
// of the same kind), then times migration 0010 on them
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
import { dialectName, freshBench, percentile, usePostgres } from './lib/setup.ts';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const TASKS = Number(arg('tasks') ?? 1_000_000);
const RUNS = Number(arg('runs') ?? 40);
const CHUNK = 100_000;
const SMALL = 5_000;
const reuse = arg('reuse');

interface State {
  env: Record<string, string>;
  projectId: string;
  /** A second project of SMALL tasks (the sorts of a small project among a large one's). */
  smallId: string;
  tasks: number;
  seedSeconds: number;
  migrateSeconds: number;
  laterMigrationsSeconds: number;
}

/** The seed's SQL helpers for the dialect. */
function dialectSql(pg: boolean) {
  const hex = (expr: string, width: number) => (pg ? `lpad(to_hex(${expr}), ${width}, '0')` : `printf('%0${width}x', ${expr})`);
  const lit = (v: string) => `'${v.replaceAll("'", "''")}'`;
  const pick = (values: string[], expr: string) =>
    pg ? `(ARRAY[${values.map(lit).join(', ')}])[(${expr}) + 1]` : `json_extract(${lit(JSON.stringify(values))}, '$[' || (${expr}) || ']')`;
  const ts = (msExpr: string) =>
    pg
      ? `to_char(to_timestamp((${msExpr}) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') || '000+00:00'`
      : `strftime('%Y-%m-%dT%H:%M:%f', (${msExpr}) / 1000.0, 'unixepoch') || '000+00:00'`;
  const div = (a: string, b: number) => (pg ? `((${a}) / ${b})` : `((${a}) / ${b})`);
  /** A task id: a UUID-shaped text computed from the task's number (so a chain can name its parent). */
  const taskId = (i: string) =>
    [
      hex(`((${i}) * 2654435761) % 4294967296`, 8),
      `'-'`,
      hex(`((${i}) * 40503 + 12345) % 65536`, 4),
      `'-4'`,
      hex(`((${i}) * 97 + 7) % 4096`, 3),
      `'-'`,
      hex(`((${i}) * 31337) % 16384 + 32768`, 4),
      `'-'`,
      hex(`((${i}) * 2246822519 + 3266489917) % 4294967296`, 8),
      hex(`((${i}) * 668265263) % 65536`, 4),
    ].join(' || ');
  return { hex, pick, ts, div, taskId };
}

const NAMES_MODULES = ['billing', 'mail', 'images', 'reports', 'sync'];
const NAMES_VERBS = ['charge_card', 'send_email', 'resize_image', 'build_report', 'refresh_cache', 'notify_user', 'export_rows', 'import_feed'];

/** Tasks numbered first..first+tasks-1 (task numbers are unique across projects: they make row ids). */
async function seed(db: Db, projectId: string, tasks: number, baseMs: number, first = 1): Promise<void> {
  const pg = db.dialect === 'postgres';
  const { hex, pick, ts, div, taskId } = dialectSql(pg);
  const terminal = `s < 96`; // success, failure, retry (not terminal, but started), revoked
  for (let lo = first; lo < first + tasks; lo += CHUNK) {
    const hi = Math.min(first + tasks - 1, lo + CHUNK - 1);
    const series = pg ? `SELECT g AS i FROM generate_series(${lo}::bigint, ${hi}::bigint) AS g` : `WITH RECURSIVE g(i) AS (SELECT ${lo} UNION ALL SELECT i + 1 FROM g WHERE i < ${hi}) SELECT i FROM g`;
    const json = (text: string) => (pg ? `(${text})::jsonb` : text);
    const state = `CASE WHEN s < 88 THEN 'success' WHEN s < 94 THEN 'failure' WHEN s < 95 THEN 'retry' WHEN s < 96 THEN 'revoked' WHEN s < 97 THEN 'started' WHEN s < 98 THEN 'received' ELSE 'pending' END`;
    const ms = `(${baseMs} + i * 600)`;
    const runtime = `((i * 2654435761) % 5000)`;
    const text = `
      SELECT
        ${hex(div(ms, 65536), 8)} || '-' || ${hex(`${ms} % 65536`, 4)} || '-7000-8000-' || ${hex('i', 12)} AS id,
        '${projectId}' AS project_id, 'celery' AS engine, ${taskId('i')} AS task_id,
        'app.' || ${pick(NAMES_MODULES, 'i % 5')} || '.' || ${pick(NAMES_VERBS, `${div('i', 5)} % 8`)} AS name,
        ${pick(['default', 'billing', 'mail', 'images'], 'i % 4')} AS queue,
        ${state} AS state,
        CASE WHEN s < 94 OR (s >= 95 AND s < 96) THEN 1 ELSE 0 END AS state_tier,
        ${ts(ms)} AS state_at,
        CASE WHEN p < 5 THEN 'critical' WHEN p < 20 THEN 'high' WHEN p < 90 THEN 'normal' ELSE 'low' END AS priority,
        ${json(`'["order-' || ((i * 7919) % 400000) || '", ' || (i % 1000) || ', "sku-' || ((i * 31) % 5000) || '"]'`)} AS args,
        ${json(`'{"user_id": "user-' || ((i * 13) % 50000) || '", "region": "' || ${pick(['eu-west', 'us-east', 'ap-south'], 'i % 3')} || '"}'`)} AS kwargs,
        CASE WHEN s < 88 THEN ${json(`'{"status": "ok", "count": ' || (i % 97) || '}'`)} END AS result,
        CASE WHEN s >= 88 AND s < 94 THEN ${pick(
          ['ConnectionError: timed out talking to db-', "KeyError: 'sku-", 'ValueError: invalid amount ', 'TimeoutError: upstream took too long after ', 'PermissionError: token expired for user-'],
          `${div('i', 20)} % 5`,
        )} || (i % 5000) END AS exception,
        CASE WHEN s >= 88 AND s < 94 THEN 'Traceback (most recent call last):' END AS traceback,
        ${ts(ms)} AS received_at,
        CASE WHEN s < 97 THEN ${ts(`${ms} + 5`)} END AS started_at,
        CASE WHEN ${terminal} AND s <> 94 THEN ${ts(`${ms} + 5 + ${runtime}`)} END AS finished_at,
        CASE WHEN ${terminal} AND s <> 94 THEN ${runtime} END AS runtime_ms,
        'celery@worker-' || (i % 8) AS worker_name,
        CASE WHEN i % 50 BETWEEN 1 AND 4 THEN ${taskId('i - 1')} END AS parent_task_id,
        CASE WHEN i % 50 BETWEEN 1 AND 4 THEN ${taskId('i - i % 50')} END AS root_task_id,
        ${ts(ms)} AS created_at
      FROM (SELECT i, (i * 7919) % 100 AS s, (i * 31) % 100 AS p FROM (${series}) AS n) AS r`;
    await db.tx((tx) =>
      tx.run(
        sql.raw(`INSERT INTO tasks (id, project_id, engine, task_id, name, queue, state, state_tier, state_at, priority, args, kwargs, result, exception, traceback,
          received_at, started_at, finished_at, runtime_ms, worker_name, parent_task_id, root_task_id, created_at, retry_count, tags, updated_at)
          SELECT id, project_id, engine, task_id, name, queue, state, state_tier, state_at, priority, args, kwargs, result, exception, traceback,
          received_at, started_at, finished_at, runtime_ms, worker_name, parent_task_id, root_task_id, created_at, 0, ${pg ? `'[]'::jsonb` : `'[]'`}, created_at FROM (${text}) AS t`),
      ),
    );
    process.stderr.write(`seeded ${hi}\n`);
  }
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

async function timed(db: Db, projectId: string, queries: () => TaskQuery, run = (q: TaskQuery) => listTasks(db, projectId, { limit: 50, ...q }).then((p) => p.items.length)): Promise<number[]> {
  const out: number[] = [];
  for (let r = -2; r < RUNS; r++) {
    const q = queries();
    const t0 = performance.now();
    const n = await run(q);
    const ms = performance.now() - t0;
    if (r >= 0) out.push(ms);
    if (n === 0 && !q.q?.includes('zzq') && q.state !== 'failure') throw new Error(`no rows for ${JSON.stringify(q)}`);
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
  await seed(db, projectId, TASKS, baseMs);
  await seed(db, smallId, SMALL, baseMs, TASKS + 1);
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

// The small project's sorts: its 5,000 tasks among the large one's million.
const smallLists: Record<string, () => TaskQuery> = {};
for (const sort of ['runtime_ms', 'name', 'finished_at'] as const) {
  smallLists[`small project: ${sort} desc, first page`] = () => ({ sort });
  const deep = await deepCursor(db, state.smallId, sort, 'desc', 0.9);
  smallLists[`small project: ${sort} desc, 90% deep`] = () => ({ sort, cursor: deep });
}

const results: Record<string, Record<string, ReturnType<typeof summary>>> = { search: {}, list: {}, other: {} };
const all = { search: [] as number[], list: [] as number[] };
for (const [kind, table, project] of [['search', searches, projectId], ['list', lists, projectId], ['list', smallLists, state.smallId]] as const) {
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
  const ms = await timed(db, projectId, () => ({}), () => workerStateCounts(db, projectId, 'celery@worker-3', since(), WORKER_COUNT_SCAN).then((c) => c.scanned + 1));
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
