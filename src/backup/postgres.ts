// PostgreSQL through its own tools: pg_dump writes a custom-format archive of
// svc's schema in the snapshot of a transaction of ours (so what the manifest
// says is what the archive holds), pg_restore reads one back into a schema
// whose predecessor was renamed aside. The tools come from PATH, or from the
// newest /usr/lib/postgresql/<version>/bin (Debian and Ubuntu packages).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { Db, Executor } from '../db/connect.ts';
import { Refused } from './errors.ts';

export class PgToolMissingError extends Refused {}

const PACKAGED = '/usr/lib/postgresql';

/** The path of a PostgreSQL client tool, or PgToolMissingError naming it. */
export function pgTool(name: 'pg_dump' | 'pg_restore', path = process.env.PATH ?? '', packaged = PACKAGED): string {
  const onPath = Bun.which(name, { PATH: path });
  if (onPath) return onPath;
  const versions = existsSync(packaged)
    ? readdirSync(packaged)
        .filter((v) => /^\d+(\.\d+)?$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const candidate = join(packaged, v, 'bin', name);
    if (existsSync(candidate)) return candidate;
  }
  throw new PgToolMissingError(
    `${name} is not installed (looked on PATH and in ${packaged}/*/bin): install the PostgreSQL client tools of your server's major version (Debian/Ubuntu: apt-get install postgresql-client)`,
  );
}

/** libpq query parameters passed through; postgres-js's `ssl=` becomes `sslmode=`. */
const LIBPQ_PARAMS = new Set(['host', 'hostaddr', 'port', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'sslcrl', 'connect_timeout', 'application_name', 'options', 'target_session_attrs', 'gssencmode', 'channel_binding']);

/** A libpq connection URI without the password (it goes in PGPASSWORD, never on a command line). */
export function libpqConnection(url: string): { dbname: string; env: Record<string, string> } {
  const u = new URL(url);
  const password = decodeURIComponent(u.password);
  u.password = '';
  u.protocol = 'postgresql:';
  for (const key of [...u.searchParams.keys()]) {
    if (key === 'ssl' || key === 'sslmode') {
      const v = u.searchParams.get(key)!;
      u.searchParams.delete(key);
      u.searchParams.set('sslmode', v === 'true' ? 'require' : v === 'false' ? 'disable' : v);
    } else if (!LIBPQ_PARAMS.has(key)) u.searchParams.delete(key);
  }
  return { dbname: u.toString(), env: password === '' ? {} : { PGPASSWORD: password } };
}

async function runTool(argv: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(argv, { env: { ...process.env, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

const lastLines = (text: string): string => text.trim().split('\n').slice(-5).join('\n');

/**
 * Dumps svc's schema to `to` (custom format). `facts` runs first in the same
 * repeatable-read transaction whose snapshot pg_dump then uses.
 */
export async function pgDump<T>(db: Db, to: string, facts: (tx: Executor) => Promise<T>): Promise<T> {
  if (db.target.dialect !== 'postgres') throw new Error('pgDump needs a PostgreSQL database');
  const tool = pgTool('pg_dump');
  const { dbname, env } = libpqConnection(db.target.url);
  return db.tx(async (tx) => {
    await tx.run(sql.raw('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY'));
    const [{ snapshot, schema }] = (await tx.all<{ snapshot: string; schema: string }>(sql`SELECT pg_export_snapshot() AS snapshot, current_schema() AS schema`)) as [
      { snapshot: string; schema: string },
    ];
    const result = await facts(tx);
    const r = await runTool([tool, '--format=custom', `--schema=${schema}`, `--snapshot=${snapshot}`, `--file=${to}`, `--dbname=${dbname}`], env);
    if (r.code !== 0) throw new Error(`pg_dump failed: ${lastLines(r.stderr)}`);
    return result;
  });
}

/** The schema a custom-format archive creates (from its table of contents); refuses an unreadable archive. */
export async function pgArchiveSchema(file: string): Promise<string | null> {
  const r = await runTool([pgTool('pg_restore'), '--list', file], {});
  if (r.code !== 0) throw new Error(`not a readable PostgreSQL archive: ${lastLines(r.stderr)}`);
  const line = r.stdout.split('\n').find((l) => /^\d+; \d+ \d+ SCHEMA - /.test(l));
  return line ? line.split(' ')[5]! : null;
}

/** Restores an archive into the (now absent) schema it was dumped from, in one transaction. */
export async function pgRestore(url: string, file: string): Promise<void> {
  const { dbname, env } = libpqConnection(url);
  const r = await runTool([pgTool('pg_restore'), '--no-owner', '--no-privileges', '--single-transaction', '--exit-on-error', `--dbname=${dbname}`, file], env);
  if (r.code !== 0) throw new Error(`pg_restore failed: ${lastLines(r.stderr)}`);
}

const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Renames svc's schema to `kept`, so a restore can create it anew (here
 * already, with `recreate`, for an archive that does not create it). */
export async function setSchemaAside(db: Db, schema: string, kept: string, recreate: boolean): Promise<void> {
  await db.tx(async (tx) => {
    await tx.run(sql.raw(`ALTER SCHEMA ${ident(schema)} RENAME TO ${ident(kept)}`));
    if (recreate) await tx.run(sql.raw(`CREATE SCHEMA ${ident(schema)}`));
  });
}

/** Undoes setSchemaAside: drops whatever a failed restore created and renames `kept` back. */
export async function putSchemaBack(db: Db, schema: string, kept: string): Promise<void> {
  await db.tx(async (tx) => {
    await tx.run(sql.raw(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`));
    await tx.run(sql.raw(`ALTER SCHEMA ${ident(kept)} RENAME TO ${ident(schema)}`));
  });
}

export async function currentSchema(db: Executor): Promise<string> {
  const [row] = await db.all<{ schema: string }>(sql`SELECT current_schema() AS schema`);
  return row!.schema;
}

/** `base`, or `base_2`, `base_3`, ... : the first schema name not taken. */
export async function unusedSchemaName(db: Executor, base: string): Promise<string> {
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}_${n}`;
    if ((await db.all(sql`SELECT 1 AS x FROM pg_namespace WHERE nspname = ${name}`)).length === 0) return name;
  }
}
