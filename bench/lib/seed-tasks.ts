// Stored tasks generated in SQL, for the benches that need a large table (tasks-scale, live): names,
// queues, states, priorities, workers, args, kwargs, results and exceptions with realistic spreads, chains
// of five every 50 tasks, one task every 600 ms of first-seen time. Written straight into the tasks table in
// 100,000-row transactions (no events, no search entries on SQLite: PostgreSQL's trigger computes vectors).
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/connect.ts';

const CHUNK = 100_000;

/** The seed's SQL helpers for the dialect. */
export function dialectSql(pg: boolean) {
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
export async function seedTasks(db: Db, projectId: string, tasks: number, baseMs: number, first = 1): Promise<void> {
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

