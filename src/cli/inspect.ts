// `svc check`, `svc doctor`, `svc status`: read-only looks at an installation.
// None of them creates the database or mints secrets.
import { sql } from 'drizzle-orm';
import { isIP } from 'node:net';
import { loadConfig, type LoadedConfig } from '../config/load.ts';
import { SETTINGS, SETTING_NAMES } from '../config/settings.ts';
import type { Db } from '../db/connect.ts';
import { appliedMigrations, listTables } from '../db/migrate.ts';
import { redactDatabaseUrl } from '../db/url.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { VERSION } from '../version.ts';
import { CliError, err, out } from './kit.ts';

/** Exit code when settings or the database fail a check. */
export const CHECK_FAILED = 2;

export async function withReadOnlyDb<T>(loaded: LoadedConfig, fn: (db: Db) => Promise<T>): Promise<T> {
  let db: Db;
  try {
    db = openConfiguredDatabase(loaded, { create: false });
  } catch (e) {
    throw new CliError(`database: ${(e as Error).message}`, CHECK_FAILED);
  }
  try {
    await db.ping().catch((e: Error) => {
      throw new CliError(`database: not answering (${describeDbError(e)})`, CHECK_FAILED);
    });
    return await fn(db);
  } finally {
    await db.close().catch(() => {});
  }
}

function describeDbError(e: Error): string {
  const code = (e as { code?: string }).code;
  return code ? `${code}: ${e.message}` : e.message;
}

async function revisionOf(db: Db): Promise<string | null> {
  const applied = await appliedMigrations(db);
  return applied && applied.length > 0 ? applied[applied.length - 1]!.revision : null;
}

async function runCheck(loaded: LoadedConfig): Promise<{ counts: Record<string, number | null> }> {
  out('configuration: ok');
  return withReadOnlyDb(loaded, async (db) => {
    out(`database: ok (${redactDatabaseUrl(loaded.database)})`);
    const revision = await revisionOf(db);
    out(`migration revision: ${revision ?? 'none (no revision table yet)'}`);
    return { counts: await rowCounts(db) };
  });
}

export async function checkCommand(): Promise<number> {
  await runCheck(loadConfig());
  return 0;
}

const COUNTED: [label: string, table: string][] = [
  ['users', 'users'],
  ['projects', 'projects'],
  ['agents', 'agents'],
  ['tasks', 'tasks'],
  ['sessions', 'sessions'],
  ['audit rows', 'audit_log'],
];

async function rowCounts(db: Db): Promise<Record<string, number | null>> {
  const present = new Set(await listTables(db));
  const counts: Record<string, number | null> = {};
  for (const [label, table] of COUNTED) {
    counts[label] = present.has(table) ? Number((await db.all<{ n: number }>(sql.raw(`SELECT COUNT(*) AS n FROM ${table}`)))[0]!.n) : null;
  }
  return counts;
}

export async function statusCommand(): Promise<number> {
  const loaded = loadConfig();
  return withReadOnlyDb(loaded, async (db) => {
    out(`version: ${VERSION}`);
    out(`migration revision: ${(await revisionOf(db)) ?? 'none'}`);
    out(`environment: ${loaded.config.SVC_ENVIRONMENT}`);
    out(`database: ${redactDatabaseUrl(loaded.database)}`);
    out(`home: ${loaded.paths.home}`);
    for (const [label, n] of Object.entries(await rowCounts(db))) out(`${label}: ${n ?? '-'}`);
    return 0;
  });
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export async function doctorCommand(): Promise<number> {
  const loaded = loadConfig();
  let code = 0;
  let counts: Record<string, number | null> = {};
  try {
    counts = (await runCheck(loaded)).counts;
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    err(`svc: ${e.message}`);
    code = e.exitCode;
  }
  const { config, sources } = loaded;
  const warnings: string[] = [];
  if (config.SVC_ENVIRONMENT === 'dev' && !LOOPBACK.has(config.SVC_BIND_HOST) && !(isIP(config.SVC_BIND_HOST) && config.SVC_BIND_HOST.startsWith('127.'))) {
    warnings.push(`dev environment bound to non-loopback address ${config.SVC_BIND_HOST}`);
  }
  if (config.SVC_DEBUG_HOST_ERRORS) warnings.push('host-error debugging is on (SVC_DEBUG_HOST_ERRORS): refused Host values are echoed');
  const minted = SETTING_NAMES.filter((n) => SETTINGS[n].meta.minted && sources[n] === 'secret.env');
  if (minted.length > 0) {
    warnings.push(`secrets were auto-minted into ${loaded.paths.secretEnv} (${minted.join(', ')}): back this file up with the database`);
  }
  if (config.SVC_METRICS_PUBLIC) warnings.push('/metrics is public (SVC_METRICS_PUBLIC=true)');
  for (const what of ['users', 'projects', 'agents']) {
    if (counts[what] === 0 || counts[what] === null) warnings.push(`no ${what} yet`);
  }
  for (const w of warnings) out(`warning: ${w}`);
  if (warnings.length === 0) out('no warnings');
  return code;
}
