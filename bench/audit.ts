// Audit log figures: append rate, verify rate, activity page latency.
//   bun bench/audit.ts [--rows 1000000] [--appends 20000]
//   SVC_BENCH_PG_URL=postgres://... bun bench/audit.ts --dialect postgres
// Appends: one transaction per row through AuditService.record (what every
// privileged action pays). Verify: `verifyChain` over every row, in the
// calling thread, spread over a thread per core, and through `dist/svc audit verify`. Activity:
// GET /api/v1/activity through the real app (session cookie, in-process),
// p50/p95 over repeated requests for several query shapes, with --rows rows.
import { Database } from 'bun:sqlite';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { appendRows } from '../src/audit/chain.ts';
import { ON_THE_COMMAND_LINE, verifyChain } from '../src/audit/verify.ts';
import { loadConfigMintingSecrets } from '../src/config/secrets.ts';
import { upgrade } from '../src/db/migrate.ts';
import { ManualClock, setClock } from '../src/lib/clock.ts';
import { setLogLevel } from '../src/lib/log.ts';
import { buildServiceApp, createContext, openConfiguredDatabase } from '../src/server/compose.ts';
import { mintSetupToken } from '../src/setup/service.ts';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
};
const ROWS = Number(arg('rows', '1000000'));
const APPENDS = Number(arg('appends', '20000'));
const dialect = arg('dialect', 'sqlite');

setLogLevel('silent');
const home = mkdtempSync(join(tmpdir(), 'svc-bench-audit-'));
const env: Record<string, string> = {
  SVC_HOME: home,
  SVC_ARGON2_MEMORY_KIB: '8192',
  SVC_ARGON2_TIME_COST: '1',
  SVC_LOGIN_MIN_DURATION_MS: '0',
};
if (dialect === 'postgres') env.SVC_DATABASE_URL = process.env.SVC_BENCH_PG_URL ?? '';
const { loaded } = loadConfigMintingSecrets({ env });
// Opened as `svc serve` opens it (WAL checkpoints in a background thread).
const db = openConfiguredDatabase(loaded, { backgroundCheckpoints: true });
await upgrade(db);
const ctx = createContext(loaded, db);
ctx.lifecycle.ready = true;
ctx.peerAddress = () => '127.0.0.1';
const app = buildServiceApp(ctx);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

// Set up an admin (session) and two projects.
const { token } = (await mintSetupToken(ctx))!;
const setup = await app.handle(
  new Request('http://localhost/api/v1/setup/complete', {
    method: 'POST',
    headers: { host: 'localhost', 'content-type': 'application/json' },
    body: JSON.stringify({ token, email: 'bench@example.com', password: 'Bench-Password-123' }),
  }),
);
const cookie = setup.headers
  .getSetCookie()
  .map((c) => c.split(';')[0])
  .join('; ');
const projectId = ((await setup.json()) as { project: { id: string } }).project.id;

console.log(`dialect: ${dialect}, rows: ${ROWS}`);

// 1. Append rate.
let t0 = performance.now();
for (let i = 0; i < APPENDS; i++) await ctx.audit.record(db, { action: 'bench.append', target_id: String(i), project_id: i % 2 ? projectId : null, metadata: { i } });
let secs = (performance.now() - t0) / 1000;
console.log(`append: ${APPENDS} rows, one transaction each, ${(APPENDS / secs).toFixed(0)} rows/s`);

// 2. Fill to ROWS quickly (batches of 5,000 per transaction) for verify and activity.
const ACTIONS = ['task.failed', 'task.succeeded', 'user.updated', 'agent.token.minted', 'command.issue.retry_task', 'auth.login'];
t0 = performance.now();
let filled = APPENDS + 2;
while (filled < ROWS) {
  const n = Math.min(5000, ROWS - filled);
  await db.tx((tx) =>
    appendRows(
      tx,
      ctx.audit.keyring,
      Array.from({ length: n }, (_, k) => ({
        action: ACTIONS[(filled + k) % ACTIONS.length]!,
        target_type: 'task',
        target_id: String(filled + k),
        project_id: (filled + k) % 3 === 0 ? null : projectId,
        source_ip: '10.0.0.1',
        metadata: { n: filled + k },
      })),
    ),
  );
  filled += n;
}
const [count] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log`);
console.log(`fill: ${Number(count!.n)} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s (batches of 5,000)`);
if (db.dialect === 'sqlite') await db.tx((tx) => tx.run(sql`ANALYZE`));
else await db.run(sql`ANALYZE audit_log`);
// Fold the fill's WAL into the file before timing anything: a live installation's WAL holds
// seconds of writes, not a million rows, and its checkpoint would compete for the cores.
if (loaded.database.dialect === 'sqlite') {
  const conn = new Database(loaded.database.path);
  conn.exec('PRAGMA busy_timeout = 60000');
  conn.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  conn.close();
}

// 3. Verify rate: in this thread, then as `svc audit verify` runs it (a thread per core).
for (const options of [{}, ON_THE_COMMAND_LINE]) {
  t0 = performance.now();
  const report = await verifyChain(db, ctx.audit.keyring, options);
  secs = (performance.now() - t0) / 1000;
  console.log(`verify (threads: ${report.threads}): ${report.rowsVerified} rows, clean=${report.clean}, ${(report.rowsVerified / secs).toFixed(0)} rows/s (${secs.toFixed(2)} s)`);
}

// 4. Activity page latency. (The service clock is driven by hand from here on,
// only to step over the per-user rate limit; timings use performance.now().)
const clock = new ManualClock(Date.now() * 1000);
setClock(clock);
async function measure(label: string, path: string, runs = 200): Promise<void> {
  const times: number[] = [];
  let cursor = '';
  clock.advance(61_000);
  for (let i = 0; i < runs + 10; i++) {
    const t = performance.now();
    const res = await app.handle(new Request(`http://localhost${path}${cursor}`, { headers: { host: 'localhost', cookie } }));
    const body = (await res.json()) as { items: unknown[]; next_before_cursor: string | null };
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    if (i >= 10) times.push(performance.now() - t);
    if (label.includes('paging')) cursor = body.next_before_cursor ? `&before_cursor=${encodeURIComponent(body.next_before_cursor)}` : '';
    // Stay within the 60 requests/min per user by moving the service clock a minute on.
    if ((i + 1) % 55 === 0) clock.advance(61_000);
  }
  console.log(`activity ${label}: p50 ${pct(times, 50).toFixed(2)} ms, p95 ${pct(times, 95).toFixed(2)} ms`);
}
await measure('first page (admin, limit 50)', '/api/v1/activity?limit=50');
await measure('paging back (limit 50)', '/api/v1/activity?limit=50');
await measure('project filter', '/api/v1/activity?limit=50&project_slug=default');
await measure('action prefix "task."', '/api/v1/activity?limit=50&action_prefix=task.');
await measure('rare action prefix', '/api/v1/activity?limit=50&action_prefix=agent.token');

await db.close();

// 5. Verify as operators run it: `dist/svc audit verify` (built by `bun build.ts`), a process of
// its own, start-up included, once this process has closed the database (so this process's
// background checkpoint of the fill is not competing for the cores).
const bin = join(import.meta.dir, '../dist/svc');
if (existsSync(bin)) {
  t0 = performance.now();
  const run = Bun.spawnSync([bin, 'audit', 'verify'], { env: { SVC_HOME: home, PATH: process.env.PATH ?? '', ...(env.SVC_DATABASE_URL ? { SVC_DATABASE_URL: env.SVC_DATABASE_URL } : {}) } });
  secs = (performance.now() - t0) / 1000;
  const said = run.stderr.toString().trim();
  const rows = Number(/(\d+) rows verified/.exec(said)?.[1] ?? 0);
  console.log(`verify (dist/svc audit verify, exit ${run.exitCode}): ${said}; ${(rows / secs).toFixed(0)} rows/s (${secs.toFixed(2)} s)`);
}

rmSync(home, { recursive: true, force: true });
