// Queries over svc's tables as a whole, for restore (is there anything in
// this database?) and reset (wipe every runtime table, keep the schema).
// "Runtime tables" are every table but `svc_migrations`; a table the
// migrations seed with rows (audit_maintenance's switch) gets those rows back
// after a wipe, so the wiped database is what the migrations left.
import { sql } from 'drizzle-orm';
import { allowWipe } from '../audit/maintenance.ts';
import type { Dialect, Executor, Tx } from '../db/connect.ts';
import { knownMigrations, listTables } from '../db/migrate.ts';

/** The migrations' seed rows: their `INSERT ... VALUES` statements, in order. An `INSERT ... SELECT` copies
 * rows a migration already had (a table rebuilt, an index filled) and is no seed: after a wipe there is
 * nothing to copy, and its source may be gone (a rebuilt table's old name). */
export function seedStatements(dialect: Dialect): string[] {
  return knownMigrations(dialect).flatMap((m) =>
    m.statements.filter((s) => /^\s*(--[^\n]*\n\s*)*INSERT\s+INTO\s/i.test(s) && /\bVALUES\b/i.test(s) && !/\bSELECT\b/i.test(s)),
  );
}

function seededTables(dialect: Dialect): Set<string> {
  const names = new Set<string>();
  for (const s of seedStatements(dialect)) {
    const m = /INSERT\s+INTO\s+"?([a-z0-9_]+)"?/i.exec(s);
    if (m) names.add(m[1]!.toLowerCase());
  }
  return names;
}

const q = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Every table but the migration stamps; tables the migrations seed come last. */
export async function runtimeTables(ex: Executor): Promise<string[]> {
  const seeded = seededTables(ex.dialect);
  const tables = (await listTables(ex)).filter((t) => t !== 'svc_migrations').sort();
  return [...tables.filter((t) => !seeded.has(t)), ...tables.filter((t) => seeded.has(t))];
}

/** True when no table holds a row beyond the migrations' own seed rows. */
export async function holdsNoData(ex: Executor): Promise<boolean> {
  const seeded = seededTables(ex.dialect);
  for (const table of await runtimeTables(ex)) {
    if (seeded.has(table)) continue;
    if ((await ex.all(sql.raw(`SELECT 1 AS x FROM ${q(table)} LIMIT 1`))).length > 0) return false;
  }
  return true;
}

/** Row counts of the given tables. */
export async function countTables(ex: Executor, tables: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) counts[table] = Number((await ex.all<{ n: number }>(sql.raw(`SELECT COUNT(*) AS n FROM ${q(table)}`)))[0]!.n);
  return counts;
}

/** Deletes every row of every runtime table in the caller's transaction and
 * puts the migrations' seed rows back. Returns the rows deleted per table. */
export async function wipeRuntimeTables(tx: Tx): Promise<Record<string, number>> {
  const tables = await runtimeTables(tx);
  const counts = await countTables(tx, tables);
  if (tx.dialect === 'postgres') {
    // TRUNCATE takes the tables together, whatever references what, and
    // fires no row triggers (the audit log's append-only guard is one).
    if (tables.length > 0) await tx.run(sql.raw(`TRUNCATE TABLE ${tables.map(q).join(', ')} RESTART IDENTITY`));
  } else {
    // Foreign keys are checked at commit, when every table is empty.
    await tx.run(sql.raw('PRAGMA defer_foreign_keys = ON'));
    await allowWipe(tx);
    for (const table of tables) await tx.run(sql.raw(`DELETE FROM ${q(table)}`));
  }
  for (const statement of seedStatements(tx.dialect)) await tx.run(sql.raw(statement));
  return counts;
}
