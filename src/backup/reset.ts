// `svc reset`: every runtime table wiped in one transaction (the schema and
// the migration stamps stay), the new audit chain starting with a row that
// says who reset the installation. With --nuke-secrets (embedded SQLite only)
// the database and the secret file (and a self-signed TLS pair) are retired
// instead into a recoverable bundle under $SVC_HOME/retired/<operation>/,
// with a manifest listing each file's SHA-256 and the manifest's own digest
// beside it; the next `svc serve` mints fresh ones. `svc recovery
// destroy-retired-installation` removes a bundle, given its operation id and
// manifest digest.
import { Database } from 'bun:sqlite';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AuditService } from '../audit/service.ts';
import { cliActor } from '../auth/actor.ts';
import type { LoadedConfig } from '../config/load.ts';
import { SETTINGS, SETTING_NAMES } from '../config/settings.ts';
import type { Db } from '../db/connect.ts';
import { appliedMigrations, schemaState } from '../db/migrate.ts';
import { nowIso } from '../lib/clock.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { VERSION } from '../version.ts';
import { sha256File, syncDir } from './archive.ts';
import { Refused } from './errors.ts';
import { assertNotInUse, moveDatabase, moveFile } from './sqlite.ts';
import { wipeRuntimeTables } from './store.ts';

export interface ResetOutcome {
  tables: number;
  rows: number;
}

async function openInstalled(loaded: LoadedConfig): Promise<Db> {
  if (loaded.database.dialect === 'sqlite') {
    if (!existsSync(loaded.database.path)) throw new Refused(`no database at ${loaded.database.path}: nothing to reset`);
    assertNotInUse(loaded.database.path);
  }
  const db = openConfiguredDatabase(loaded, { create: false });
  try {
    const state = await schemaState(db);
    if (state.applied.length === 0) throw new Refused('the configured database is not a provisioned svc database (no migrations applied): nothing to reset');
    if (state.unknown.length > 0) throw new Refused(`the database was migrated by a newer svc (${state.unknown.map((u) => u.revision).join(', ')}); reset it with that svc`);
    return db;
  } catch (e) {
    await db.close().catch(() => {});
    throw e;
  }
}

/** Wipes every runtime table; the audit chain starts over with an `installation.reset` row. */
export async function resetInstallation(loaded: LoadedConfig): Promise<ResetOutcome> {
  if (loaded.config.SVC_AUDIT_CHAIN_SECRET === '') throw new Refused('SVC_AUDIT_CHAIN_SECRET is not set (svc serve mints it on first boot)');
  const audit = AuditService.fromConfig(loaded.config);
  const db = await openInstalled(loaded);
  let deleted: Record<string, number>;
  try {
    deleted = await db.tx(async (tx) => {
      const counts = await wipeRuntimeTables(tx);
      const rows = Object.values(counts).reduce((a, b) => a + b, 0);
      await audit.append(tx, { ...cliActor(), action: 'installation.reset', target_type: 'installation', metadata: { tables: Object.keys(counts).length, rows_deleted: rows } });
      return counts;
    });
  } finally {
    await db.close();
  }
  if (loaded.database.dialect === 'sqlite') {
    // Give the freed pages back to the file system.
    const conn = new Database(loaded.database.path, { create: false });
    try {
      conn.exec('VACUUM');
    } finally {
      conn.close();
    }
  }
  return { tables: Object.keys(deleted).length, rows: Object.values(deleted).reduce((a, b) => a + b, 0) };
}

// --- retired installations ----------------------------------------------------------

export const RETIRED_FORMAT = 'svc-retired-installation';
const MANIFEST = 'manifest.json';
const DIGEST = 'manifest.json.sha256';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const retiredRoot = (loaded: LoadedConfig): string => join(loaded.paths.home, 'retired');

export interface RetiredFile {
  name: string;
  original_path: string;
  bytes: number;
  sha256: string;
}

export interface RetiredManifest {
  format: typeof RETIRED_FORMAT;
  format_version: 1;
  operation: string;
  retired_at: string;
  svc_version: string;
  by: string;
  database: { dialect: 'sqlite'; revision: string | null; original_path: string };
  files: RetiredFile[];
}

export interface RetiredBundle {
  operation: string;
  dir: string;
  digest: string;
  manifest: RetiredManifest;
  /** Secrets that come from the environment, which a bundle cannot retire. */
  fromEnvironment: string[];
}

/** Files under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

/** Retires the SQLite database, the secret file and a self-signed TLS pair into a bundle. */
export async function retireInstallation(loaded: LoadedConfig): Promise<RetiredBundle> {
  if (loaded.database.dialect !== 'sqlite') {
    throw new Refused(
      '--nuke-secrets retires an embedded SQLite installation; with PostgreSQL take a backup (svc backup), drop and re-create the database and move the secret file away yourself (`svc reset --force` alone wipes the tables)',
    );
  }
  const dbPath = loaded.database.path;
  const { secretEnv, tlsDir } = loaded.paths;
  const haveDb = existsSync(dbPath);
  if (!haveDb && !existsSync(secretEnv)) throw new Refused(`neither a database at ${dbPath} nor a secret file at ${secretEnv}: nothing to retire`);
  let revision: string | null = null;
  if (haveDb) {
    assertNotInUse(dbPath); // also folds the WAL into the file
    const db = openConfiguredDatabase(loaded, { create: false });
    try {
      const applied = await appliedMigrations(db);
      revision = applied && applied.length > 0 ? applied[applied.length - 1]!.revision : null;
    } finally {
      await db.close();
    }
    assertNotInUse(dbPath);
  }
  const operation = crypto.randomUUID();
  const dir = join(retiredRoot(loaded), operation);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const moved: { name: string; from: string }[] = [];
  if (haveDb) {
    moveDatabase(dbPath, join(dir, 'svc.db'));
    moved.push({ name: 'svc.db', from: dbPath });
  }
  if (existsSync(secretEnv)) {
    moveFile(secretEnv, join(dir, 'secret.env'));
    moved.push({ name: 'secret.env', from: secretEnv });
  }
  if (existsSync(tlsDir)) {
    renameSync(tlsDir, join(dir, 'tls'));
    for (const f of filesUnder(join(dir, 'tls'))) moved.push({ name: relative(dir, f), from: join(tlsDir, relative(join(dir, 'tls'), f)) });
  }
  const manifest: RetiredManifest = {
    format: RETIRED_FORMAT,
    format_version: 1,
    operation,
    retired_at: nowIso(),
    svc_version: VERSION,
    by: cliActor().user_agent ?? 'svc-cli',
    database: { dialect: 'sqlite', revision, original_path: dbPath },
    files: moved.map(({ name, from }) => ({ name, original_path: from, bytes: statSync(join(dir, name)).size, sha256: sha256File(join(dir, name)) })),
  };
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  const digest = sha256Hex(text);
  writeFileSync(join(dir, MANIFEST), text, { mode: 0o600, flag: 'wx' });
  writeFileSync(join(dir, DIGEST), `${digest}  ${MANIFEST}\n`, { mode: 0o600, flag: 'wx' });
  syncDir(dir);
  const fromEnvironment = SETTING_NAMES.filter((n) => SETTINGS[n].meta.minted && loaded.sources[n] === 'env');
  return { operation, dir, digest, manifest, fromEnvironment };
}

export interface RetiredEntry {
  operation: string;
  dir: string;
  digest: string;
  manifest: RetiredManifest | null;
}

function readBundle(dir: string, operation: string): RetiredEntry {
  const path = join(dir, MANIFEST);
  if (!existsSync(path)) return { operation, dir, digest: '', manifest: null };
  const text = readFileSync(path, 'utf8');
  let manifest: RetiredManifest | null = null;
  try {
    manifest = JSON.parse(text);
  } catch {
    manifest = null;
  }
  return { operation, dir, digest: sha256Hex(text), manifest };
}

/** The bundles under $SVC_HOME/retired, oldest first. */
export function listRetired(loaded: LoadedConfig): RetiredEntry[] {
  const root = retiredRoot(loaded);
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => UUID.test(name))
    .map((name) => readBundle(join(root, name), name))
    .sort((a, b) => (a.manifest?.retired_at ?? '').localeCompare(b.manifest?.retired_at ?? ''));
}

export const isOperationId = (text: string): boolean => UUID.test(text);

/** Removes the bundle of `operation` when `digest` is its manifest's SHA-256. */
export function destroyRetired(loaded: LoadedConfig, operation: string, digest: string): RetiredEntry {
  const dir = join(retiredRoot(loaded), operation);
  if (!existsSync(dir)) throw new Refused(`there is no retired installation ${operation} under ${retiredRoot(loaded)}`);
  const entry = readBundle(dir, operation);
  if (!entry.manifest || entry.manifest.format !== RETIRED_FORMAT || entry.manifest.operation !== operation) {
    throw new Refused(`${dir} holds no readable manifest of operation ${operation}; nothing was removed`);
  }
  if (entry.digest !== digest.toLowerCase()) {
    throw new Refused(`the manifest digest of ${operation} is not ${digest} (see ${join(dir, DIGEST)}); nothing was removed`);
  }
  rmSync(dir, { recursive: true, force: true });
  return entry;
}
