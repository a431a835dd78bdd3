// `svc backup` and `svc restore`: the rules.
//
// Backup: a consistent snapshot of the configured database while svc serve
// keeps writing (SQLite: VACUUM INTO on a connection of its own; PostgreSQL:
// pg_dump in a snapshot of ours), wrapped with its manifest (archive.ts)
// into a new file private to its owner; an existing destination is refused.
//
// Restore: nothing is touched until the backup has been checked as far as it
// can be on its own: a readable svc backup of this dialect, not newer than
// this svc, its payload intact (SHA-256), its chain signed by a key this
// installation holds. The target must be a provisioned svc database at this
// svc's head (an empty or foreign database is refused: `svc migrate upgrade
// head` provisions one). The payload is then brought to this svc's head
// (forward-only migrations), refused when it holds no data or its audit chain
// does not verify, and put in place; the database it replaces is kept beside
// it (SQLite: `<file>.pre-restore-<time>`; PostgreSQL: the schema renamed
// `<schema>_pre_restore_<time>`) and put back should any step fail.
import { existsSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AuditChainError } from '../audit/chain.ts';
import { Keyring } from '../audit/keyring.ts';
import { AuditService } from '../audit/service.ts';
import { countRows, loadState } from '../audit/store.ts';
import { ON_THE_COMMAND_LINE, verifyChain } from '../audit/verify.ts';
import { cliActor } from '../auth/actor.ts';
import type { LoadedConfig } from '../config/load.ts';
import { openDatabase, type Db, type Executor } from '../db/connect.ts';
import { appliedMigrations, headRevision, knownMigrations, listTables, schemaState, upgrade } from '../db/migrate.ts';
import { redactDatabaseUrl } from '../db/url.ts';
import { nowIso } from '../lib/clock.ts';
import { hmacHex } from '../lib/crypto.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { VERSION } from '../version.ts';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, besideTemp, extractPayload, openBackupFile, payloadName, writeBackupFile, type BackupManifest } from './archive.ts';
import { currentSchema, pgArchiveSchema, pgDump, pgRestore, putSchemaBack, setSchemaAside, unusedSchemaName } from './postgres.ts';
import { assertNotInUse, moveDatabase, quickCheck, removeDatabase, snapshotSqlite } from './sqlite.ts';
import { Refused } from './errors.ts';
import { countTables, holdsNoData } from './store.ts';

/** Fingerprint of a master secret (a keyed digest: says nothing about the secret). */
export const secretFingerprint = (secret: string): string | null => (secret === '' ? null : hmacHex(secret, 'svc/backup/secret-fingerprint/v1'));

interface SnapshotFacts {
  revision: string | null;
  audit: BackupManifest['audit'];
}

async function factsOf(ex: Executor): Promise<SnapshotFacts> {
  const applied = await appliedMigrations(ex);
  const tables = new Set(await listTables(ex));
  const state = tables.has('audit_chain_state') ? await loadState(ex) : null;
  return {
    revision: applied && applied.length > 0 ? applied[applied.length - 1]!.revision : null,
    audit: { state_key_id: state?.state_key_id ?? null, rows: tables.has('audit_log') ? await countRows(ex) : 0 },
  };
}

export interface BackupOutcome {
  path: string;
  manifest: BackupManifest;
  /** Seconds the consistent snapshot took (what a running service notices). */
  snapshotSeconds: number;
  seconds: number;
}

/** Takes a backup of the configured database into the new file `output`. */
export async function backupDatabase(loaded: LoadedConfig, output: string, extra: { rollback_to?: string } = {}, say: (line: string) => void = () => {}): Promise<BackupOutcome> {
  const dest = resolve(output);
  if (existsSync(dest)) throw new Refused(`${dest} exists; svc backup never overwrites a file (choose a new name)`);
  if (!existsSync(dirname(dest)) || !statSync(dirname(dest)).isDirectory()) throw new Refused(`directory ${dirname(dest)} does not exist`);
  const { database, config } = loaded;
  const t0 = performance.now();
  const takenAt = nowIso();
  const payload = besideTemp(dest, 'payload');
  let facts: SnapshotFacts;
  let snapshotSeconds: number;
  try {
    if (database.dialect === 'sqlite') {
      if (!existsSync(database.path)) throw new Refused(`no database at ${database.path} (nothing to back up)`);
      snapshotSqlite(database.path, payload, config.SVC_SQLITE_BUSY_TIMEOUT_MS);
      snapshotSeconds = (performance.now() - t0) / 1000;
      const copy = openDatabase({ dialect: 'sqlite', path: payload }, { create: false });
      try {
        facts = await factsOf(copy);
      } finally {
        await copy.close();
      }
    } else {
      const db = openConfiguredDatabase(loaded, { poolSize: 1 });
      try {
        // pg_dump keeps the mode of the file it overwrites: private from the start.
        writeFileSync(payload, '', { mode: 0o600, flag: 'wx' });
        facts = await pgDump(db, payload, factsOf);
      } finally {
        await db.close().catch(() => {});
      }
      snapshotSeconds = (performance.now() - t0) / 1000;
    }
    say(`snapshot taken in ${snapshotSeconds.toFixed(1)} s; writing ${dest}`);
    const manifest = writeBackupFile(dest, payload, payloadName(database.dialect), (p) => ({
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      svc_version: VERSION,
      dialect: database.dialect,
      revision: facts.revision,
      created_at: takenAt,
      payload: p,
      audit: facts.audit,
      secret_fingerprint: secretFingerprint(config.SVC_SECRET),
      ...extra,
    }));
    return { path: dest, manifest, snapshotSeconds, seconds: (performance.now() - t0) / 1000 };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new Refused(`${dest} appeared while the backup was being taken; svc backup never overwrites a file`);
    throw e;
  } finally {
    removeDatabase(payload);
  }
}

export interface RestoreOutcome {
  manifest: BackupManifest;
  /** Migrations applied to bring the backup to this svc's head. */
  migrated: string[];
  rowsVerified: number;
  counts: Record<string, number>;
  /** Where the replaced database is kept. */
  kept: string;
  warnings: string[];
}

/** The time as 20261126T064801Z (for names of what a restore keeps). */
const stamp = (): string => new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

/** Checks the backup file against this installation, before anything is touched. */
function checkBackupFile(loaded: LoadedConfig, file: string, keyring: Keyring): { backup: ReturnType<typeof openBackupFile>; warnings: string[] } {
  if (!existsSync(file)) throw new Refused(`${file}: no such file`);
  if (!statSync(file).isFile()) throw new Refused(`${file} is not a file`);
  const backup = openBackupFile(file);
  const m = backup.manifest;
  const dialect = loaded.database.dialect;
  if (m.dialect !== dialect) {
    throw new Refused(`the backup holds a ${m.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} database but this installation uses ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}; restore it into an installation of the same kind`);
  }
  if (m.revision !== null && !knownMigrations(dialect).some((k) => k.revision === m.revision)) {
    throw new Refused(
      m.revision > headRevision()
        ? `the backup is at migration revision ${m.revision}, newer than this svc (${headRevision()}, svc ${VERSION}; the backup was taken by svc ${m.svc_version}): restore it with that svc or a newer one`
        : `the backup is at migration revision ${m.revision}, which this svc does not know`,
    );
  }
  if (m.audit.state_key_id && !keyring.get(m.audit.state_key_id)) {
    throw new Refused(
      `the backup's audit chain is signed with key ${m.audit.state_key_id.slice(0, 12)}…, which this installation does not hold (SVC_AUDIT_CHAIN_SECRET / SVC_AUDIT_CHAIN_PREVIOUS_SECRETS): ` +
        'copy the secret file (secret.env) of the installation the backup was taken from into this one first',
    );
  }
  const warnings: string[] = [];
  const fingerprints = [loaded.config.SVC_SECRET, ...loaded.config.SVC_PREVIOUS_SECRETS].map(secretFingerprint);
  if (m.secret_fingerprint && !fingerprints.includes(m.secret_fingerprint)) {
    warnings.push('the backup was taken under another SVC_SECRET: its agent tokens, sessions and API keys will not be accepted here (copy the source installation\'s secret.env, or mint agents anew)');
  }
  return { backup, warnings };
}

/** Refuses a target that is not a provisioned svc database at this svc's head. */
async function checkTarget(db: Db, where: string): Promise<void> {
  try {
    await db.ping();
  } catch (e) {
    throw new Refused(`the configured database does not answer (${(e as Error).message})`);
  }
  const state = await schemaState(db);
  const provision = 'provision it first with `svc migrate upgrade head` (a restore replaces a provisioned svc database)';
  if (state.applied.length === 0) throw new Refused(`${where} is not a provisioned svc database (no migrations applied); ${provision}`);
  if (state.unknown.length > 0) throw new Refused(`${where} was migrated by a newer svc (${state.unknown.map((u) => u.revision).join(', ')}); restore with that svc`);
  if (state.pending.length > 0) throw new Refused(`${where} is at revision ${state.current}, not at this svc's head ${state.head}; run \`svc migrate upgrade head\` first`);
}

/** Checks the restored data, brings it to this svc's head, verifies its chain and records the restore. */
async function settleRestored(db: Db, loaded: LoadedConfig, keyring: Keyring, m: BackupManifest, file: string, say: (line: string) => void) {
  const state = await schemaState(db);
  if (state.applied.length === 0) throw new Refused('the backup holds no svc database (no migrations applied)');
  if (state.unknown.length > 0) throw new Refused(`the backup holds revisions this svc does not know (${state.unknown.map((u) => u.revision).join(', ')}): it was taken by a newer svc`);
  if (await holdsNoData(db)) throw new Refused('the backup holds an empty database (no rows in any table): nothing to restore');
  const migrated = await upgrade(db);
  if (migrated.length > 0) say(`migrated the backup from ${state.current} to ${headRevision()} (${migrated.join(', ')})`);
  say('verifying the audit chain of the backup');
  const report = await verifyChain(db, keyring, ON_THE_COMMAND_LINE);
  if (!report.clean) {
    const findings = report.findings.slice(0, 5).join('; ');
    throw new Refused(`the backup's audit chain does not verify with this installation's keys (${findings})`);
  }
  const counts = await countTables(db, ['users', 'projects', 'agents', 'tasks', 'events', 'audit_log']);
  const warnings: string[] = [];
  try {
    await AuditService.fromConfig(loaded.config).record(db, {
      ...cliActor(),
      action: 'backup.restored',
      target_type: 'backup',
      target_id: m.payload.sha256,
      metadata: { file: basename(file), created_at: m.created_at, svc_version: m.svc_version, revision: m.revision, migrated },
    });
  } catch (e) {
    if (!(e instanceof AuditChainError)) throw e;
    warnings.push(`no audit row recorded the restore: ${e.message}`);
  }
  return { migrated, rowsVerified: report.rowsVerified, counts, warnings };
}

/** Restores the backup `file` into the configured database. */
export async function restoreDatabase(loaded: LoadedConfig, file: string, say: (line: string) => void): Promise<RestoreOutcome> {
  if (loaded.config.SVC_AUDIT_CHAIN_SECRET === '') throw new Refused('SVC_AUDIT_CHAIN_SECRET is not set: copy the secret file (secret.env) of the installation the backup was taken from into this one');
  const keyring = new Keyring(loaded.config.SVC_AUDIT_CHAIN_SECRET, loaded.config.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS);
  const { backup, warnings } = checkBackupFile(loaded, resolve(file), keyring);
  const m = backup.manifest;
  say(`backup of ${m.created_at} by svc ${m.svc_version}: ${m.dialect}, revision ${m.revision ?? 'none'}, ${m.payload.bytes} bytes`);
  const settled = loaded.database.dialect === 'sqlite' ? await restoreSqlite(loaded, backup, keyring, say) : await restorePostgres(loaded, backup, keyring, say);
  return { manifest: m, ...settled, warnings: [...warnings, ...settled.warnings] };
}

async function restoreSqlite(loaded: LoadedConfig, backup: ReturnType<typeof openBackupFile>, keyring: Keyring, say: (line: string) => void) {
  if (loaded.database.dialect !== 'sqlite') throw new Error('unreachable');
  const target = loaded.database.path;
  const where = `the database at ${target}`;
  if (!existsSync(target)) throw new Refused(`there is no database at ${target}; provision it first with \`svc migrate upgrade head\` (a restore replaces a provisioned svc database)`);
  assertNotInUse(target);
  const current = openDatabase(loaded.database, { create: false });
  try {
    await checkTarget(current, where);
  } finally {
    await current.close();
  }
  const tmp = besideTemp(target, 'restore');
  try {
    say('checking the backup (SHA-256, SQLite structure)');
    extractPayload(backup, tmp);
    const check = quickCheck(tmp);
    if (check !== 'ok') throw new Refused(`the database in the backup is corrupt (${check.slice(0, 300)})`);
    const restored = openDatabase({ dialect: 'sqlite', path: tmp }, { create: false, busyTimeoutMs: loaded.config.SVC_SQLITE_BUSY_TIMEOUT_MS });
    let settled: Awaited<ReturnType<typeof settleRestored>>;
    try {
      settled = await settleRestored(restored, loaded, keyring, backup.manifest, backup.path, say);
    } finally {
      await restored.close();
    }
    // Swap: the current database goes aside (checkpointed into one file), the restored one takes its place.
    assertNotInUse(target);
    let kept = `${target}.pre-restore-${stamp()}`;
    for (let n = 2; existsSync(kept); n++) kept = `${target}.pre-restore-${stamp()}-${n}`;
    moveDatabase(target, kept);
    try {
      moveDatabase(tmp, target);
      const placed = openDatabase(loaded.database, { create: false });
      try {
        await placed.ping();
      } finally {
        await placed.close();
      }
    } catch (e) {
      removeDatabase(target);
      moveDatabase(kept, target);
      throw e;
    }
    return { ...settled, kept };
  } finally {
    removeDatabase(tmp);
  }
}

async function restorePostgres(loaded: LoadedConfig, backup: ReturnType<typeof openBackupFile>, keyring: Keyring, say: (line: string) => void) {
  if (loaded.database.dialect !== 'postgres') throw new Error('unreachable');
  const url = loaded.database.url;
  const where = `the database ${redactDatabaseUrl(loaded.database)}`;
  const open = () => openConfiguredDatabase(loaded, { poolSize: 2 });
  let schema: string;
  let kept: string;
  const first = open();
  try {
    await checkTarget(first, where);
    schema = await currentSchema(first);
    kept = await unusedSchemaName(first, `${schema}_pre_restore_${stamp().toLowerCase()}`.slice(0, 60));
  } finally {
    await first.close().catch(() => {});
  }
  const tmp = join(loaded.paths.home, `.restore-${process.pid}-${crypto.randomUUID().slice(0, 8)}.pgdump`);
  try {
    say('checking the backup (SHA-256, archive contents)');
    extractPayload(backup, tmp);
    let archived: string | null;
    try {
      archived = await pgArchiveSchema(tmp);
    } catch (e) {
      throw new Refused(`the backup is corrupt: ${(e as Error).message}`);
    }
    if (archived !== null && archived !== schema) throw new Refused(`the backup holds schema "${archived}" but this installation uses schema "${schema}"`);
    // The current schema goes aside; pg_restore creates it anew in one transaction.
    const aside = open();
    try {
      await setSchemaAside(aside, schema, kept, archived === null);
    } finally {
      await aside.close().catch(() => {});
    }
    try {
      say('restoring with pg_restore');
      await pgRestore(url, tmp);
      // A new pool: statements prepared before the rename would still name the old tables.
      const restored = open();
      try {
        const settled = await settleRestored(restored, loaded, keyring, backup.manifest, backup.path, say);
        return { ...settled, kept: `schema "${kept}" of the same database` };
      } finally {
        await restored.close().catch(() => {});
      }
    } catch (e) {
      const back = open();
      try {
        await putSchemaBack(back, schema, kept);
      } finally {
        await back.close().catch(() => {});
      }
      throw e;
    }
  } finally {
    if (existsSync(tmp)) unlinkSync(tmp);
  }
}
