// What the database is: engine, version, size on disk and connections, for
// the system and deep health reports.
import { statSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Db } from './connect.ts';

export interface DatabaseInfo {
  type: 'sqlite' | 'postgres';
  version: string;
  /** SQLite: the file and its WAL; PostgreSQL: pg_database_size of this database. */
  size_bytes: number;
  /** SQLite: this process's own (writer, reader); PostgreSQL: backends connected to this database. */
  connections: number;
  checkpoints: ReturnType<Db['checkpoints']>;
}

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

export async function databaseInfo(db: Db): Promise<DatabaseInfo> {
  if (db.dialect === 'sqlite') {
    const [row] = await db.all<{ v: string }>(sql`SELECT sqlite_version() AS v`);
    const path = db.target.dialect === 'sqlite' ? db.target.path : '';
    return { type: 'sqlite', version: row!.v, size_bytes: fileSize(path) + fileSize(`${path}-wal`), connections: 2, checkpoints: db.checkpoints() };
  }
  const [row] = await db.all<{ v: string; size: number; conns: number }>(
    sql`SELECT current_setting('server_version') AS v, pg_database_size(current_database()) AS size,
          (SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()) AS conns`,
  );
  return { type: 'postgres', version: row!.v, size_bytes: Number(row!.size), connections: Number(row!.conns), checkpoints: 'none' };
}
