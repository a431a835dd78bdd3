// How long `svc serve` spends migrating a database full of task events.
//   bun bench/migration.ts [--pg] [events=1000000] [--from=0007]
// Migrates a fresh database to revision --from, stores `events` events of
// events/3 tasks (three events a task, random ids, as Celery's), then times
// the upgrade to this build's head, as serve runs it at start.
import { sql } from 'drizzle-orm';
import { loadConfigMintingSecrets } from '../src/config/secrets.ts';
import { headRevision, upgrade } from '../src/db/migrate.ts';
import { openConfiguredDatabase } from '../src/server/compose.ts';
import { insertProject } from '../tests/helpers/agents.ts';
import { dialectName, freshBench, usePostgres } from './lib/setup.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const events = Number(args[0] ?? 1_000_000);
const from = process.argv.find((a) => a.startsWith('--from='))?.split('=')[1] ?? '0007';

const bench = await freshBench();
const db = openConfiguredDatabase(loadConfigMintingSecrets({ env: bench.env }).loaded);
await upgrade(db, from);
const { id: projectId } = await insertProject(db, 'bench');
const agentId = crypto.randomUUID();
const at = new Date().toISOString().replace('Z', '+00:00');
// Generated in SQL: a million rows through JavaScript would take longer than the migration.
const randomId = usePostgres ? sql`gen_random_uuid()::text` : sql`lower(hex(randomblob(16)))`;
const count = (n: number) =>
  usePostgres ? sql`SELECT i FROM generate_series(1, ${n}) AS g(i)` : sql`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ${n}) SELECT i FROM g`;
await db.tx(async (tx) => {
  await tx.run(sql`INSERT INTO agents (id, project_id, name, token_hash, created_at, updated_at, state) VALUES (${agentId}, ${projectId}, 'bench', 'x', ${at}, ${at}, 'offline')`);
  await tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, state, state_tier, state_at, tags, created_at, updated_at)
    SELECT ${randomId}, ${projectId}, 'celery', ${randomId}, 'success', 1, ${at}, '[]', ${at}, ${at} FROM (${count(Math.ceil(events / 3))}) AS n`);
  await tx.run(sql`INSERT INTO events (id, project_id, agent_id, engine, task_id, kind, occurred_at, received_at, payload)
    SELECT ${randomId}, ${projectId}, ${agentId}, 'celery', t.task_id, k.kind, ${at}, ${at}, '{"task_name":"app.tasks.add","queue":"default"}'
    FROM tasks t CROSS JOIN (SELECT 'task.received' AS kind UNION ALL SELECT 'task.started' UNION ALL SELECT 'task.succeeded') AS k`);
});
const [stored] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events`);
const t0 = performance.now();
const applied = await upgrade(db);
const seconds = (performance.now() - t0) / 1000;
await db.close();
await bench.dropDatabase();
console.log(JSON.stringify({ bench: 'migration', dialect: dialectName, from, to: headRevision(), applied, events: Number(stored!.n), seconds: Number(seconds.toFixed(1)) }));
