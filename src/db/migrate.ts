// Forward-only migrations. Each numbered file runs in one transaction with
// its row in `svc_migrations`; concurrent starters (several workers, several
// replicas) serialise on the SQLite write lock or a PostgreSQL advisory lock
// and re-check inside the transaction, so a migration is applied once.
import { sql } from 'drizzle-orm';
import { sha256Hex } from '../lib/crypto.ts';
import { nowIso } from '../lib/clock.ts';
import type { Db, Executor } from './connect.ts';
import { MIGRATIONS } from './migrations.ts';

export interface Migration {
  revision: string;
  name: string;
  statements: string[];
  checksum: string;
}

export interface AppliedMigration {
  revision: string;
  name: string;
  checksum: string;
  applied_at: string;
}

export class MigrationError extends Error {}

const BREAK = '--> statement-breakpoint';
/** Arbitrary constant: the PostgreSQL advisory lock key for migrations. */
const PG_MIGRATION_LOCK = 0x73766331;

export function knownMigrations(dialect: Db['dialect']): Migration[] {
  return MIGRATIONS.map((m) => {
    const text = dialect === 'sqlite' ? m.sqlite : m.postgres;
    return {
      revision: m.revision,
      name: m.name,
      statements: text
        .split(BREAK)
        .map((s) => s.trim())
        .filter((s) => s.replace(/--[^\n]*\n?/g, '').trim() !== ''),
      checksum: sha256Hex(text),
    };
  });
}

export const headRevision = (): string => MIGRATIONS[MIGRATIONS.length - 1]!.revision;

/** Serialises schema changes across processes (SQLite: the write lock already does). */
async function lockMigrations(ex: Executor): Promise<void> {
  if (ex.dialect === 'postgres') await ex.run(sql`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK})`);
}

async function ensureTable(ex: Executor): Promise<void> {
  // Concurrent CREATE TABLE IF NOT EXISTS races on PostgreSQL's catalog: lock first.
  await lockMigrations(ex);
  await ex.run(
    sql.raw(
      'CREATE TABLE IF NOT EXISTS svc_migrations (revision TEXT PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)',
    ),
  );
}

async function tableExists(db: Executor, name: string): Promise<boolean> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.all(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${name}`)
      : await db.all(sql`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${name}`);
  return rows.length > 0;
}

/** Applied migrations in revision order; empty when the table is missing. */
export async function appliedMigrations(db: Executor): Promise<AppliedMigration[] | null> {
  if (!(await tableExists(db, 'svc_migrations'))) return null;
  return db.all<AppliedMigration>(sql.raw('SELECT revision, name, checksum, applied_at FROM svc_migrations ORDER BY revision'));
}

export interface SchemaState {
  applied: AppliedMigration[];
  /** Revisions applied here that this build does not know (a newer svc wrote them). */
  unknown: AppliedMigration[];
  pending: Migration[];
  current: string | null;
  head: string;
}

export async function schemaState(db: Db): Promise<SchemaState> {
  const applied = (await appliedMigrations(db)) ?? [];
  const known = knownMigrations(db.dialect);
  const appliedSet = new Set(applied.map((a) => a.revision));
  const knownSet = new Set(known.map((k) => k.revision));
  return {
    applied,
    unknown: applied.filter((a) => !knownSet.has(a.revision)),
    pending: known.filter((k) => !appliedSet.has(k.revision)),
    current: applied.length > 0 ? applied[applied.length - 1]!.revision : null,
    head: headRevision(),
  };
}

/** Applies every pending migration up to `target` (default head). Returns the revisions applied. */
export async function upgrade(db: Db, target: string = headRevision()): Promise<string[]> {
  const known = knownMigrations(db.dialect);
  if (!known.some((m) => m.revision === target)) throw new MigrationError(`unknown revision ${target}`);
  await db.tx(async (tx) => ensureTable(tx));
  const state = await schemaState(db);
  if (state.unknown.length > 0) {
    throw new MigrationError(
      `the database has revision ${state.unknown[state.unknown.length - 1]!.revision}, which this svc does not know (it was migrated by a newer release); upgrade svc, or run \`svc migrate sync\``,
    );
  }
  const done: string[] = [];
  for (const m of known) {
    if (m.revision > target) break;
    const applied = await db.tx(async (tx) => {
      await lockMigrations(tx);
      const present = await tx.all(sql`SELECT revision FROM svc_migrations WHERE revision = ${m.revision}`);
      if (present.length > 0) return false;
      for (const statement of m.statements) await tx.run(sql.raw(statement));
      await tx.run(
        sql`INSERT INTO svc_migrations (revision, name, checksum, applied_at) VALUES (${m.revision}, ${m.name}, ${m.checksum}, ${nowIso()})`,
      );
      return true;
    });
    if (applied) done.push(m.revision);
  }
  return done;
}

/** Tables created by this build's migrations (parsed from their CREATE TABLE statements). */
export function knownTables(dialect: Db['dialect']): Set<string> {
  const names = new Set<string>(['svc_migrations']);
  for (const m of knownMigrations(dialect)) {
    for (const s of m.statements) {
      for (const match of s.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z0-9_]+)"?/gi)) names.add(match[1]!.toLowerCase());
      // A table rebuilt under a new name and renamed back (SQLite's way to change a primary key) is one table.
      for (const match of s.matchAll(/ALTER TABLE "?([a-z0-9_]+)"? RENAME TO "?([a-z0-9_]+)"?/gi)) {
        names.delete(match[1]!.toLowerCase());
        names.add(match[2]!.toLowerCase());
      }
    }
  }
  return names;
}

/** Ordinary tables: on SQLite not virtual tables (the task search index) nor their shadow tables,
 * which belong to their index and go with it. */
export async function listTables(db: Executor): Promise<string[]> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.all<{ name: string }>(sql`SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%'`)
      : await db.all<{ name: string }>(sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`);
  return rows.map((r) => r.name);
}

export interface SyncResult {
  removedStamps: string[];
  droppedTables: string[];
}

/** Re-stamps a database whose head this build does not know: stamps of
 * unknown revisions are removed, so this build's head becomes current. With
 * `dropNewerTables`, tables this build does not know are dropped too. */
export async function sync(db: Db, dropNewerTables: boolean): Promise<SyncResult> {
  await db.tx(async (tx) => ensureTable(tx));
  const state = await schemaState(db);
  const known = knownTables(db.dialect);
  const result: SyncResult = { removedStamps: [], droppedTables: [] };
  await db.tx(async (tx) => {
    for (const u of state.unknown) {
      await tx.run(sql`DELETE FROM svc_migrations WHERE revision = ${u.revision}`);
      result.removedStamps.push(u.revision);
    }
    if (dropNewerTables) {
      for (const table of await listTables(tx)) {
        if (known.has(table.toLowerCase())) continue;
        await tx.run(sql.raw(`DROP TABLE IF EXISTS "${table.replace(/"/g, '')}"${tx.dialect === 'postgres' ? ' CASCADE' : ''}`));
        result.droppedTables.push(table);
      }
    }
  });
  return result;
}
