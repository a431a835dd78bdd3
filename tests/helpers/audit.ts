// Audit test helpers: raw tampering the way someone with database access
// would do it (bypassing the append-only triggers), and chain snapshots.
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/connect.ts';
import type { AuditService } from '../../src/audit/service.ts';

const SQLITE_TRIGGERS = ['audit_log_no_update', 'audit_log_no_delete'];

/** Runs raw statements with the append-only triggers out of the way, as an
 * attacker with database access can; the triggers are put back after. */
export async function tamper(db: Db, statements: string[]): Promise<void> {
  await db.tx(async (tx) => {
    if (tx.dialect === 'postgres') {
      await tx.run(sql.raw('ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only'));
      for (const s of statements) await tx.run(sql.raw(s));
      await tx.run(sql.raw('ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only'));
      return;
    }
    const defs = await tx.all<{ sql: string }>(
      sql`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${sql.join(SQLITE_TRIGGERS.map((n) => sql`${n}`), sql`, `)})`,
    );
    for (const n of SQLITE_TRIGGERS) await tx.run(sql.raw(`DROP TRIGGER ${n}`));
    for (const s of statements) await tx.run(sql.raw(s));
    for (const d of defs) await tx.run(sql.raw(d.sql));
  });
}

export async function appendMany(db: Db, audit: AuditService, n: number, prefix = 'test.action'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const row = await audit.record(db, { action: `${prefix}.${i % 3}`, target_type: 'thing', target_id: String(i), metadata: { i, note: 'é ✓' } });
    ids.push(row.id);
  }
  return ids;
}

export async function orderedIds(db: Db): Promise<string[]> {
  const rows = await db.all<{ id: string }>(sql`SELECT id FROM audit_log ORDER BY occurred_at, id`);
  return rows.map((r) => r.id);
}
