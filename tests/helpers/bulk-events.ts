// Fills a database with stored task events fast, in SQL (through JavaScript
// and the ingest path a gigabyte takes many minutes): `tasks` tasks of one
// agent with three events each (received, started, succeeded), random ids as
// Celery's, each event's payload padded to about `payloadBytes`.
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/connect.ts';

export async function seedTaskEvents(db: Db, o: { projectId: string; agentId: string; tasks: number; payloadBytes?: number; chunk?: number }): Promise<void> {
  const pg = db.dialect === 'postgres';
  const at = new Date().toISOString().replace('Z', '+00:00');
  const randomId = pg ? sql`gen_random_uuid()::text` : sql`lower(hex(randomblob(16)))`;
  const padding = 'x'.repeat(Math.max(0, (o.payloadBytes ?? 100) - 60));
  const payload = JSON.stringify({ task_name: 'app.tasks.add', queue: 'default', args: padding });
  const numbers = (n: number) =>
    pg ? sql`SELECT i FROM generate_series(1, ${n}) AS g(i)` : sql`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ${n}) SELECT i FROM g`;
  // In chunks: one transaction of a gigabyte would hold the whole WAL.
  const chunk = o.chunk ?? 50_000;
  for (let done = 0; done < o.tasks; done += chunk) {
    const n = Math.min(chunk, o.tasks - done);
    const marker = `seed-${crypto.randomUUID()}`;
    await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, name, queue, state, state_tier, state_at, tags, created_at, updated_at)
        SELECT ${randomId}, ${o.projectId}, 'celery', ${randomId}, ${marker}, 'default', 'success', 1, ${at}, '[]', ${at}, ${at} FROM (${numbers(n)}) AS g`);
      await tx.run(sql`INSERT INTO events (id, project_id, agent_id, engine, task_id, kind, occurred_at, received_at, payload, task_ref)
        SELECT ${randomId}, t.project_id, ${o.agentId}, 'celery', t.task_id, k.kind, ${at}, ${at}, ${payload}, t.id
        FROM tasks t CROSS JOIN (SELECT 'task.received' AS kind UNION ALL SELECT 'task.started' UNION ALL SELECT 'task.succeeded') AS k
        WHERE t.name = ${marker}`);
      await tx.run(sql`UPDATE tasks SET name = 'app.tasks.add' WHERE name = ${marker}`);
    });
  }
}
