// SQLite files for backup, restore and reset: a consistent snapshot of a
// database in use, the check that no other process has a database open, and
// moving a database (with whatever WAL it still has) aside or into place.
import { Database } from 'bun:sqlite';
import { copyFileSync, existsSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { syncDir } from './archive.ts';
import { Refused } from './errors.ts';

/** Another process has the database open. */
export class DatabaseInUseError extends Refused {}

/** The files SQLite keeps beside a database in WAL mode. */
const SIDE_FILES = ['-wal', '-shm'] as const;

/**
 * A consistent copy of the database at `path` into the new file `to` (mode
 * 0600), while other processes keep writing. `VACUUM INTO` on a connection of
 * its own: one read transaction, so the copy is the database as of one
 * commit; in WAL mode writers never wait for a reader, so the service's
 * writes go on (its checkpoints cannot pass the snapshot until the copy ends,
 * so its WAL grows meanwhile). The copy is compacted (no free pages).
 */
export function snapshotSqlite(path: string, to: string, busyTimeoutMs: number): void {
  if (!existsSync(path)) throw new Error(`no database at ${path}`);
  // An empty file of our own, so the copy is private from its first byte (VACUUM INTO accepts an empty file).
  writeFileSync(to, '', { mode: 0o600, flag: 'wx' });
  const conn = new Database(path, { create: false });
  try {
    conn.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    // Pages read by the copy are read once: keep the page cache small.
    conn.exec('PRAGMA cache_size = -8192');
    // The copy is an intermediate file (the backup file is synced once written): with
    // synchronous on, VACUUM INTO would sync it too, writing every page to disk twice.
    conn.exec('PRAGMA synchronous = OFF');
    conn.query('VACUUM INTO ?').run(to);
  } finally {
    conn.close();
  }
}

/**
 * Fails with DatabaseInUseError when another connection (svc serve, another
 * command) has the database at `path` open. An exclusive lock taken in
 * EXCLUSIVE locking mode; on release SQLite copies the WAL back into the
 * file and removes it, so the database is one file afterwards.
 */
export function assertNotInUse(path: string, what = 'the database'): void {
  const conn = new Database(path, { create: false });
  try {
    conn.exec('PRAGMA busy_timeout = 0');
    conn.exec('PRAGMA locking_mode = EXCLUSIVE');
    try {
      conn.exec('BEGIN EXCLUSIVE');
      conn.exec('COMMIT');
    } catch (e) {
      if (/locked|busy/i.test((e as Error).message)) {
        throw new DatabaseInUseError(`${what} at ${path} is in use by another process (is svc serve running?); stop it first`);
      }
      throw e;
    }
  } finally {
    conn.close();
  }
}

/** Renames a file, copying it across file systems when a rename cannot. */
export function moveFile(from: string, to: string): void {
  if (existsSync(to)) throw new Error(`${to} exists`);
  try {
    renameSync(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    copyFileSync(from, to);
    unlinkSync(from);
  }
}

/** Moves the database `from` (and a WAL or shared-memory file it still has) to `to`. */
export function moveDatabase(from: string, to: string): void {
  moveFile(from, to);
  for (const side of SIDE_FILES) if (existsSync(from + side)) moveFile(from + side, to + side);
  syncDir(dirname(from));
  if (dirname(to) !== dirname(from)) syncDir(dirname(to));
}

/** Removes a database file and its side files, when present. */
export function removeDatabase(path: string): void {
  for (const p of [path, ...SIDE_FILES.map((s) => path + s)]) if (existsSync(p)) unlinkSync(p);
}

/** Bytes of the database file and its WAL. */
export const databaseBytes = (path: string): number => [path, `${path}-wal`].reduce((n, p) => n + (existsSync(p) ? statSync(p).size : 0), 0);

/** SQLite's own structural check of a database file ("ok", or what is wrong). */
export function quickCheck(path: string): string {
  let conn: Database;
  try {
    conn = new Database(path, { readonly: true });
  } catch (e) {
    return (e as Error).message;
  }
  try {
    const rows = conn.query('PRAGMA quick_check').all() as { quick_check: string }[];
    return rows.map((r) => r.quick_check).join('; ');
  } catch (e) {
    return (e as Error).message;
  } finally {
    conn.close();
  }
}
