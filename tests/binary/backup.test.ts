// `svc backup`, `svc restore`, `svc reset`, `svc recovery`, `svc migrate
// revision | prepare-runtime-rollback` of the compiled binary, on real
// installations: a backup taken while a long-poll agent keeps uploading to a
// running `svc serve`, restored into a fresh home (every event answered
// `accepted` before the backup started is there, the audit chain verifies);
// every refusal of restore leaves the target as it was; reset and the
// retired-installation bundle round trip. The same on PostgreSQL with
// pg_dump / pg_restore when scripts/test provides a server.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import postgres from 'postgres';
import { mintAgent } from '../../src/agents/service.ts';
import { AuditService } from '../../src/audit/service.ts';
import { extractPayload, openBackupFile, writeBackupFile, type BackupManifest } from '../../src/backup/archive.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { headRevision, knownMigrations, upgrade } from '../../src/db/migrate.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import { insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { seedTaskEvents } from '../helpers/bulk-events.ts';
import { binaryPath, cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { freshDatabase } from '../helpers/postgres.ts';
import { taskEvent, TestAgent } from '../helpers/test-agent.ts';

setLogLevel('silent');
type Env = Record<string, string>;
/** This build's newest migration, and the ones after 0007 (a backup at 0007 is migrated through them). */
const HEAD = headRevision();
const HEAD_NAME = knownMigrations('sqlite').at(-1)!.name;
const AFTER_0007 = knownMigrations('sqlite').filter((m) => m.revision > '0007').map((m) => m.revision).join(', ');

const running: RunningSvc[] = [];
const dropped: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
  for (const d of dropped) await d().catch(() => {});
});

const dbPath = (env: Env): string => join(env.SVC_HOME!, 'svc.db');
const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');
const secretOf = (env: Env, name: string): string | undefined => readFileSync(join(env.SVC_HOME!, 'secret.env'), 'utf8').match(new RegExp(`^${name}=(.+)$`, 'm'))?.[1];

/** A new home holding `from`'s secret file (and database settings), not provisioned. */
function homeWithSecretsOf(from: Env, extra: Env = {}): Env {
  const env = cleanEnv({ SVC_LOG_LEVEL: 'warn', ...extra });
  mkdirSync(env.SVC_HOME!, { recursive: true, mode: 0o700 });
  copyFileSync(join(from.SVC_HOME!, 'secret.env'), join(env.SVC_HOME!, 'secret.env'));
  return env;
}

async function provisioned(env: Env): Promise<Env> {
  const r = await runSvc(['migrate', 'upgrade', 'head'], env);
  expect(r.code).toBe(0);
  return env;
}

/** Migrates (to `revision`), inserts a project and mints an agent from this process. */
async function installationWithAgent(env: Env, revision?: string) {
  const { loaded } = loadConfigMintingSecrets({ env });
  const db = openConfiguredDatabase(loaded);
  await upgrade(db, revision);
  const ctx = createContext(loaded, db);
  const project = await insertProject(db);
  const minted = revision ? null : await mintAgent(ctx, project.id, `backup-agent-${crypto.randomUUID().slice(0, 6)}`, TEST_ACTOR);
  return { ctx, db, project, minted };
}

/**
 * Uploads batches of task events over long-poll until stopped, remembering the
 * task ids of every upload answered with all its frames accepted, and when.
 */
class Uploader {
  accepted: { taskIds: string[]; at: number }[] = [];
  failures: string[] = [];
  private stopped = false;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly agent: TestAgent) {}

  start(): void {
    this.done = (async () => {
      for (let n = 0; !this.stopped; n++) {
        const ids = Array.from({ length: 20 }, (_, i) => `bk-${n}-${i}-${crypto.randomUUID().slice(0, 8)}`);
        const r = await this.agent.upload(ids.map((task_id) => this.agent.eventBatch([taskEvent({ task_id })])));
        if (r.status === 200 && r.body.accepted === ids.length && r.body.errors.length === 0) this.accepted.push({ taskIds: ids, at: performance.now() });
        else this.failures.push(`${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  acceptedBefore(t: number): string[] {
    return this.accepted.filter((a) => a.at < t).flatMap((a) => a.taskIds);
  }

  uploadsBetween(a: number, b: number): number {
    return this.accepted.filter((u) => u.at > a && u.at < b).length;
  }
}

/**
 * An installation holding `tasks` seeded tasks (three events each) and an
 * agent, served by the binary; `svc backup` runs while the agent keeps
 * uploading. Checks what every such backup must show: exit 0, no failed
 * upload, uploads accepted while the snapshot was taken, a private file.
 * Returns the task ids of the events accepted before the backup started.
 */
async function backupDuringIngest(env: Env, tasks: number, output: string): Promise<{ expected: string[]; stdout: string }> {
  const { db, project, minted } = await installationWithAgent(env);
  await seedTaskEvents(db, { projectId: project.id, agentId: minted!.agent.id, tasks, payloadBytes: 400 });
  await db.close();
  const svc = await startSvc(env, ['--host', '127.0.0.1']);
  running.push(svc);
  const agent = new TestAgent({ baseUrl: svc.url, token: minted!.token, hmacSecret: minted!.hmac_secret, agentId: minted!.agent.id, projectId: project.id });
  expect((await agent.probe()).status).toBe(200);
  const uploader = new Uploader(agent);
  uploader.start();
  while (uploader.accepted.length < 5) await Bun.sleep(20);
  const startedAt = performance.now();
  const result = await runSvc(['backup', '--output', output], env);
  const endedAt = performance.now();
  // A few more uploads after the backup, which the backup may not hold.
  const after = uploader.accepted.length;
  while (uploader.accepted.length < after + 3) await Bun.sleep(20);
  await uploader.stop();
  await svc.stop();
  expect(result.stderr).not.toContain('svc:');
  expect(result.code).toBe(0);
  expect(uploader.failures).toEqual([]);
  // The service kept taking uploads while the snapshot was taken.
  expect(uploader.uploadsBetween(startedAt, endedAt)).toBeGreaterThan(0);
  expect(statSync(output).mode & 0o777).toBe(0o600);
  const expected = uploader.acceptedBefore(startedAt);
  expect(expected.length).toBeGreaterThanOrEqual(100);
  return { expected, stdout: result.stdout };
}

function missingFrom(present: Set<string>, expected: string[]): string[] {
  return expected.filter((id) => !present.has(id));
}

/** No temporary files of ours left beside the database. */
const leftovers = (env: Env): string[] => readdirSync(env.SVC_HOME!).filter((f) => f.startsWith('.'));

// --- SQLite ------------------------------------------------------------------------

describe('SQLite: backup while serving, restore into a fresh home', () => {
  const source = cleanEnv({ SVC_LOG_LEVEL: 'warn' });
  const backupFile = join(tempDir('svc-backups-'), 'live.tar');
  let target: Env;
  let expected: string[] = [];

  test('a backup taken while a long-poll agent uploads holds every event accepted before it started', async () => {
    // About 70 MB of stored events, so the snapshot takes long enough for uploads to land during it.
    const taken = await backupDuringIngest(source, 40_000, backupFile);
    expected = taken.expected;
    expect(taken.stdout).toContain(`backup written to ${backupFile}`);
    const manifest = openBackupFile(backupFile).manifest;
    expect(manifest).toMatchObject({ format: 'svc-backup', dialect: 'sqlite', revision: HEAD, payload: { name: 'svc.db' } });
    expect(readdirSync(join(backupFile, '..'))).toEqual(['live.tar']);

    // An existing destination is refused and left alone.
    const before = sha256(backupFile);
    const again = await runSvc(['backup', '-o', backupFile], source);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists; svc backup never overwrites');
    expect(sha256(backupFile)).toBe(before);
  }, 120_000);

  test('restored into a fresh home (with the source secret file): every accepted event is there and the audit chain verifies', async () => {
    target = await provisioned(homeWithSecretsOf(source));
    const r = await runSvc(['restore', backupFile, '--force'], target);
    expect(r.stderr).not.toContain('svc:');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/restored .*: 0 users, 1 projects, 1 agents, \d+ tasks, \d+ events, \d+ audit rows \(\d+ verified\)/);
    const kept = /kept as (\S+);/.exec(r.stdout)![1]!;
    expect(kept).toMatch(/svc\.db\.pre-restore-\d{8}T\d{6}Z$/);
    expect(existsSync(kept)).toBe(true);
    const db = new Database(dbPath(target), { readonly: true });
    const present = new Set((db.query("SELECT task_id FROM events WHERE task_id LIKE 'bk-%'").all() as { task_id: string }[]).map((row) => row.task_id));
    const seeded = (db.query("SELECT COUNT(*) AS n FROM events WHERE task_id NOT LIKE 'bk-%'").get() as { n: number }).n;
    db.close();
    expect(missingFrom(present, expected)).toEqual([]);
    expect(seeded).toBe(120_000);
    const verify = await runSvc(['audit', 'verify'], target);
    expect(verify.stderr).toContain('audit chain: OK');
    expect(verify.code).toBe(0);
    expect((await runSvc(['migrate', 'current', '--check-heads'], target)).code).toBe(0);
    expect(leftovers(target)).toEqual([]);
    // The restored installation serves.
    const svc = await startSvc(target, ['--host', '127.0.0.1']);
    running.push(svc);
    expect((await fetch(`${svc.url}/api/v1/health/ready`)).status).toBe(200);
    await svc.stop();
  }, 60_000);
});

describe('SQLite: every refusal of restore leaves the target as it was', () => {
  const source = cleanEnv({ SVC_LOG_LEVEL: 'warn' });
  const dir = tempDir('svc-backups-');
  const good = join(dir, 'good.tar');
  let target: Env;
  let targetHash = '';

  /** Restores `file` into the target expecting a refusal naming `reason`. */
  async function refused(file: string, reason: string | RegExp, env: Env = target, args: string[] = ['--force']): Promise<void> {
    const hash = existsSync(dbPath(env)) ? sha256(dbPath(env)) : null;
    const r = await runSvc(['restore', file, ...args], env);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
    expect(r.stderr).toMatch(reason);
    expect(existsSync(dbPath(env)) ? sha256(dbPath(env)) : null).toBe(hash);
    expect(leftovers(env)).toEqual([]);
  }

  /** A copy of `good` with its manifest changed by `edit` (and another payload when given). */
  function crafted(name: string, edit: (m: BackupManifest) => BackupManifest, payload?: string): string {
    const opened = openBackupFile(good);
    const payloadPath = payload ?? join(dir, `${name}.payload`);
    if (!payload) extractPayload(opened, payloadPath);
    const out = join(dir, name);
    const manifest = edit({ ...opened.manifest });
    writeBackupFile(out, payloadPath, manifest.payload.name, (p) => ({ ...manifest, payload: { ...p, name: manifest.payload.name } }));
    return out;
  }

  /** Another home holding a copy of the source's database and secrets. */
  async function copyOfSource(edit: (db: Database) => void): Promise<Env> {
    const env = homeWithSecretsOf(source);
    copyFileSync(dbPath(source), dbPath(env));
    const db = new Database(dbPath(env));
    edit(db);
    db.close();
    return env;
  }

  test('set-up: a source with users, projects and audit rows, its backup, a provisioned target', async () => {
    const r = await runSvc(['createsuperuser', '--email', 'admin@example.com', '--password-stdin'], source, { stdin: 'Correct-Horse-Battery-9\n' });
    expect(r.code).toBe(0);
    expect((await runSvc(['backup', '-o', good], source)).code).toBe(0);
    target = await provisioned(homeWithSecretsOf(source));
    targetHash = sha256(dbPath(target));
  });

  test('without --force nothing changes', async () => {
    const r = await runSvc(['restore', good], target);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('rerun with --force (nothing was changed)');
    expect(sha256(dbPath(target))).toBe(targetHash);
    expect((await runSvc(['restore', '--force'], target)).code).toBe(2);
  });

  test('a missing, empty, foreign, truncated or corrupt file', async () => {
    await refused(join(dir, 'nope.tar'), /nope\.tar: no such file/);
    const empty = join(dir, 'empty.tar');
    writeFileSync(empty, '');
    await refused(empty, /the backup file is empty/);
    const garbage = join(dir, 'garbage.tar');
    writeFileSync(garbage, crypto.getRandomValues(new Uint8Array(4096)));
    await refused(garbage, /not an svc backup/);
    const truncated = join(dir, 'truncated.tar');
    copyFileSync(good, truncated);
    truncateSync(truncated, Math.floor(statSync(good).size / 2));
    await refused(truncated, /truncated/);
    const cutManifest = join(dir, 'cut-manifest.tar');
    copyFileSync(good, cutManifest);
    truncateSync(cutManifest, statSync(good).size - 1024 - 100);
    await refused(cutManifest, /truncated/);
    const flipped = join(dir, 'flipped.tar');
    const bytes = readFileSync(good);
    bytes[512 + 200_000]! ^= 0xff;
    writeFileSync(flipped, bytes);
    await refused(flipped, /corrupt: svc\.db does not match the SHA-256 in its manifest/);
    // A payload whose digest matches but which is no SQLite database.
    const notDb = join(dir, 'not-a-db.payload');
    writeFileSync(notDb, 'x'.repeat(8192));
    await refused(crafted('not-a-db.tar', (m) => m, notDb), /the database in the backup is corrupt/);
  });

  test('another dialect, a newer revision (manifest or payload), an unknown format version', async () => {
    await refused(crafted('pg.tar', (m) => ({ ...m, dialect: 'postgres', payload: { ...m.payload, name: 'svc.pgdump' } })), /holds a PostgreSQL database but this installation uses SQLite/);
    await refused(crafted('v2.tar', (m) => ({ ...m, format_version: 2 })), /backup format version 2 is not one this svc reads/);
    // Stamped by a newer svc: refused from the manifest, before anything is read.
    const newer = await copyOfSource((db) => db.run("INSERT INTO svc_migrations (revision, name, checksum, applied_at) VALUES ('9999', 'future', 'x', '2030-01-01T00:00:00.000000+00:00')"));
    const newerFile = join(dir, 'newer.tar');
    expect((await runSvc(['backup', '-o', newerFile], newer)).code).toBe(0);
    await refused(newerFile, new RegExp(`migration revision 9999, newer than this svc \\(${HEAD}`));
    // A manifest claiming this svc's head over a payload stamped by a newer one.
    const opened = openBackupFile(newerFile);
    extractPayload(opened, join(dir, 'newer.payload'));
    await refused(crafted('newer-payload.tar', (m) => m, join(dir, 'newer.payload')), /holds revisions this svc does not know \(9999\)/);
  });

  test('an audit chain that does not verify: signed with another key, or tampered with', async () => {
    const stranger = cleanEnv({ SVC_LOG_LEVEL: 'warn' });
    expect((await runSvc(['createsuperuser', '--email', 'x@example.com', '--password-stdin'], stranger, { stdin: 'Correct-Horse-Battery-9\n' })).code).toBe(0);
    const strangerFile = join(dir, 'stranger.tar');
    expect((await runSvc(['backup', '-o', strangerFile], stranger)).code).toBe(0);
    await refused(strangerFile, /signed with key [0-9a-f]{12}…, which this installation does not hold.*copy the secret file/);
    const tampered = await copyOfSource((db) => {
      db.run('DROP TRIGGER audit_log_no_update');
      db.run(`UPDATE audit_log SET metadata = '{"forged":true}' WHERE id = (SELECT id FROM audit_log ORDER BY occurred_at LIMIT 1)`);
    });
    const tamperedFile = join(dir, 'tampered.tar');
    expect((await runSvc(['backup', '-o', tamperedFile], tampered)).code).toBe(0);
    await refused(tamperedFile, /audit chain does not verify with this installation's keys \(row .*\)/);
  }, 30_000);

  test('an empty backup', async () => {
    const empty = await provisioned(homeWithSecretsOf(source));
    const emptyFile = join(dir, 'empty-db.tar');
    expect((await runSvc(['backup', '-o', emptyFile], empty)).code).toBe(0);
    await refused(emptyFile, /holds an empty database/);
  });

  test('a target that is missing, not at head, or in use', async () => {
    const bare = homeWithSecretsOf(source);
    await refused(good, /there is no database at .*provision it first with `svc migrate upgrade head`/, bare);
    expect(existsSync(dbPath(bare))).toBe(false);
    const older = homeWithSecretsOf(source);
    const { db } = await installationWithAgent(older, '0007');
    await db.close();
    await refused(good, new RegExp(`is at revision 0007, not at this svc's head ${HEAD}`), older);
    const svc = await startSvc(target, ['--host', '127.0.0.1']);
    running.push(svc);
    const busy = await runSvc(['restore', good, '--force'], target);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain('in use by another process (is svc serve running?); stop it first');
    await svc.stop();
    expect(leftovers(target)).toEqual([]);
    // The target was never touched.
    const r = await runSvc(['status'], target);
    expect(r.stdout).toContain('users: 0');
  });

  test('a backup of an older revision is migrated up to this svc\'s head (forward only)', async () => {
    const old = homeWithSecretsOf(source);
    const { ctx, db } = await installationWithAgent(old, '0007');
    await AuditService.fromConfig(ctx.config).record(db, { ...TEST_ACTOR, action: 'project.created', target_type: 'project' });
    await db.close();
    const oldFile = join(dir, 'old.tar');
    const b = await runSvc(['backup', '-o', oldFile], old);
    expect(b.stdout).toContain('revision 0007');
    const r = await runSvc(['restore', oldFile, '--force'], target);
    expect(r.stderr).toContain(`migrated the backup from 0007 to ${HEAD} (${AFTER_0007})`);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`migrated up: ${AFTER_0007}`);
    expect(r.stdout).toContain('1 projects');
    expect((await runSvc(['migrate', 'current', '--check-heads'], target)).code).toBe(0);
    const verify = await runSvc(['audit', 'verify'], target);
    expect(verify.stderr).toContain('audit chain: OK (2 rows verified)'); // the row above and backup.restored
    // Restoring the good backup over it keeps the replaced one beside it too.
    const again = await runSvc(['restore', good, '--force'], target);
    expect(again.code).toBe(0);
    expect(readdirSync(target.SVC_HOME!).filter((f) => f.includes('.pre-restore-')).length).toBeGreaterThanOrEqual(1);
    expect((await runSvc(['status'], target)).stdout).toContain('users: 1');
  }, 30_000);
});

// --- reset and recovery ---------------------------------------------------------------

describe('svc reset and svc recovery', () => {
  const env = cleanEnv({ SVC_LOG_LEVEL: 'warn' });

  test('reset refuses without --force and while serving; with it every runtime table is emptied and the schema stays', async () => {
    expect((await runSvc(['createsuperuser', '--email', 'admin@example.com', '--password-stdin'], env, { stdin: 'Correct-Horse-Battery-9\n' })).code).toBe(0);
    const filled = await installationWithAgent(env);
    await seedTaskEvents(filled.db, { projectId: filled.project.id, agentId: filled.minted!.agent.id, tasks: 500 });
    await filled.db.close();
    const before = sha256(dbPath(env));
    const no = await runSvc(['reset'], env);
    expect(no.code).toBe(1);
    expect(no.stderr).toContain('rerun with --force (nothing was changed)');
    expect(sha256(dbPath(env))).toBe(before);
    const svc = await startSvc(env, ['--host', '127.0.0.1']);
    running.push(svc);
    const busy = await runSvc(['reset', '--force'], env);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain('in use by another process');
    await svc.stop();

    const r = await runSvc(['reset', '--force'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/reset: \d+ rows deleted from \d+ tables/);
    const status = (await runSvc(['status'], env)).stdout;
    for (const line of [`migration revision: ${HEAD}`, 'users: 0', 'projects: 0', 'sessions: 0', 'audit rows: 1']) expect(status).toContain(line);
    expect((await runSvc(['migrate', 'current', '--check-heads'], env)).code).toBe(0);
    expect((await runSvc(['audit', 'verify'], env)).stderr).toContain('audit chain: OK (1 rows verified)');
    const db = new Database(dbPath(env), { readonly: true });
    expect(db.query('SELECT action FROM audit_log').all()).toEqual([{ action: 'installation.reset' }]);
    expect(db.query('SELECT id, active FROM audit_maintenance').all()).toEqual([{ id: 1, active: 0 }]);
    expect(db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
    // Indexes kept by triggers (the task search index) still agree with their tables.
    const rw = new Database(dbPath(env));
    if (rw.query("SELECT 1 FROM sqlite_master WHERE name = 'tasks_fts'").get()) rw.run("INSERT INTO tasks_fts (tasks_fts) VALUES ('integrity-check')");
    rw.close();
    // First boot again: a new setup link.
    const again = await startSvc(env, ['--host', '127.0.0.1']);
    running.push(again);
    await eventually(() => again.stderr().includes('/setup?token='), 5000, 'a new setup link');
    await again.stop();
  }, 30_000);

  test('--nuke-secrets retires database and secret file into a bundle; it round-trips; destroy needs the right digest', async () => {
    expect((await runSvc(['createsuperuser', '--email', 'keep@example.com', '--password-stdin'], env, { stdin: 'Correct-Horse-Battery-9\n' })).code).toBe(0);
    const oldSecret = secretOf(env, 'SVC_SECRET');
    const dbHash = sha256(dbPath(env));
    expect((await runSvc(['reset', '--nuke-secrets'], env)).code).toBe(1);
    const r = await runSvc(['reset', '--force', '--nuke-secrets'], env);
    expect(r.code).toBe(0);
    const operation = /operation: (\S+)/.exec(r.stdout)![1]!;
    const digest = /manifest digest: ([0-9a-f]{64})/.exec(r.stdout)![1]!;
    const bundle = join(env.SVC_HOME!, 'retired', operation);
    expect(r.stdout).toContain(`retired the installation into ${bundle}: svc.db, secret.env`);
    expect(existsSync(dbPath(env))).toBe(false);
    expect(existsSync(join(env.SVC_HOME!, 'secret.env'))).toBe(false);
    // The manifest and its digest; each file as the manifest says.
    expect(sha256(join(bundle, 'manifest.json'))).toBe(digest);
    expect(readFileSync(join(bundle, 'manifest.json.sha256'), 'utf8')).toBe(`${digest}  manifest.json\n`);
    const manifest = JSON.parse(readFileSync(join(bundle, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ format: 'svc-retired-installation', operation, database: { dialect: 'sqlite', revision: HEAD } });
    for (const f of manifest.files) expect(sha256(join(bundle, f.name))).toBe(f.sha256);
    expect(sha256(join(bundle, 'svc.db'))).toBe(dbHash);
    expect(statSync(bundle).mode & 0o777).toBe(0o700);

    // The next start mints a fresh installation.
    const fresh = await startSvc(env, ['--host', '127.0.0.1']);
    running.push(fresh);
    await fresh.stop();
    expect(secretOf(env, 'SVC_SECRET')).not.toBe(oldSecret);
    expect((await runSvc(['status'], env)).stdout).toContain('users: 0');
    expect((await runSvc(['recovery', 'list'], env)).stdout).toContain(`${operation} retired `);

    // Round trip: the retired installation moved back works as before.
    const spare = tempDir('svc-spare-');
    renameSync(dbPath(env), join(spare, 'svc.db'));
    renameSync(join(env.SVC_HOME!, 'secret.env'), join(spare, 'secret.env'));
    copyFileSync(join(bundle, 'svc.db'), dbPath(env));
    copyFileSync(join(bundle, 'secret.env'), join(env.SVC_HOME!, 'secret.env'));
    expect(secretOf(env, 'SVC_SECRET')).toBe(oldSecret);
    expect((await runSvc(['status'], env)).stdout).toContain('users: 1');
    expect((await runSvc(['audit', 'verify'], env)).code).toBe(0);

    // destroy: refuses a malformed operation or digest (usage), an unknown operation, a wrong digest.
    const destroy = (op: string, d: string) => runSvc(['recovery', 'destroy-retired-installation', '--operation', op, '--confirm-manifest-digest', d], env);
    expect((await destroy('not-a-uuid', digest)).code).toBe(2);
    expect((await destroy(operation, 'abc')).code).toBe(2);
    expect((await runSvc(['recovery', 'destroy-retired-installation', '--operation', operation], env)).code).toBe(2);
    const unknown = await destroy(crypto.randomUUID(), digest);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('there is no retired installation');
    const wrong = await destroy(operation, 'f'.repeat(64));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('nothing was removed');
    expect(existsSync(bundle)).toBe(true);
    const ok = await destroy(operation, digest);
    expect(ok.code).toBe(0);
    expect(existsSync(bundle)).toBe(false);
    expect((await runSvc(['recovery', 'list'], env)).stdout).toContain('no retired installations');
  }, 30_000);
});

// --- migrate revision / prepare-runtime-rollback, createsuperuser, help --------------

describe('migrate revision, prepare-runtime-rollback, createsuperuser and the help', () => {
  const env = cleanEnv({ SVC_LOG_LEVEL: 'warn' });

  test('the help lists the new commands and the createsuperuser alias; each has --help', async () => {
    const help = await runSvc(['--help'], env);
    for (const word of ['backup', 'restore <file>', 'reset', 'recovery', 'createsuperuser']) expect(help.stdout).toContain(word);
    for (const cmd of [['backup'], ['restore'], ['reset'], ['recovery'], ['recovery', 'destroy-retired-installation'], ['recovery', 'list'], ['migrate', 'revision'], ['migrate', 'prepare-runtime-rollback'], ['createsuperuser']]) {
      const r = await runSvc([...cmd, '--help'], env);
      expect({ cmd, code: r.code }).toEqual({ cmd, code: 0 });
      expect(r.stdout).toContain('Usage:');
    }
    expect((await runSvc(['migrate', 'revision', '--help'], env)).stdout).toContain('nothing is generated here');
    expect((await runSvc(['backup', '--bogus'], env)).code).toBe(2);
    expect(existsSync(env.SVC_HOME!)).toBe(false);
  });

  test('createsuperuser creates the first administrator from the compiled binary', async () => {
    const r = await runSvc(['createsuperuser', '--email', 'root@example.com', '--password-stdin'], env, { stdin: 'Correct-Horse-Battery-9\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('created administrator root@example.com');
    const again = await runSvc(['createsuperuser', '--email', 'two@example.com', '--password-stdin'], env, { stdin: 'Correct-Horse-Battery-9\n' });
    expect(again.code).toBe(1);
  });

  test('migrate revision prints the embedded head', async () => {
    const r = await runSvc(['migrate', 'revision'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`head: ${HEAD} ${HEAD_NAME}`);
  });

  test('prepare-runtime-rollback seals a backup and lists what the older svc does not know', async () => {
    const out = join(tempDir('svc-rollback-'), 'before-rollback.tar');
    expect((await runSvc(['migrate', 'prepare-runtime-rollback', '--to', '0007'], env)).code).toBe(2);
    expect((await runSvc(['migrate', 'prepare-runtime-rollback', '--to', '9999', '-o', out], env)).code).toBe(2);
    const same = await runSvc(['migrate', 'prepare-runtime-rollback', '--to', HEAD, '-o', out], env);
    expect(same.stdout).toContain('nothing to prepare');
    expect(existsSync(out)).toBe(false);
    const r = await runSvc(['migrate', 'prepare-runtime-rollback', '--to', '0007', '-o', out], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`sealed backup: ${out}`);
    expect(r.stdout).toContain('0008 events_by_task_row');
    expect(r.stdout).toMatch(/0009 notifications \(creates notification_channels, /);
    expect(r.stdout).toContain('svc migrate sync');
    expect(openBackupFile(out).manifest).toMatchObject({ revision: HEAD, rollback_to: '0007' });
    expect(statSync(out).mode & 0o777).toBe(0o600);
    // The database was not changed.
    expect((await runSvc(['migrate', 'current', '--check-heads'], env)).code).toBe(0);
  });
});

// --- PostgreSQL -------------------------------------------------------------------------

describe.skipIf(!process.env.SVC_TEST_PG_URL)('PostgreSQL: pg_dump while serving, pg_restore into a fresh home', () => {
  const dir = tempDir('svc-backups-');
  const backupFile = join(dir, 'pg.tar');
  let source: Env;
  let target: Env;

  const database = async (): Promise<string> => {
    const d = await freshDatabase();
    dropped.push(d.drop);
    return d.url;
  };

  test('a backup taken while a long-poll agent uploads holds every event accepted before it started; restored, the chain verifies', async () => {
    source = cleanEnv({ SVC_LOG_LEVEL: 'warn', SVC_DATABASE_URL: await database() });
    const { expected, stdout } = await backupDuringIngest(source, 30_000, backupFile);
    expect(stdout).toContain('pg_dump archive');
    expect(openBackupFile(backupFile).manifest).toMatchObject({ dialect: 'postgres', revision: HEAD, payload: { name: 'svc.pgdump' } });

    const url = await database();
    target = await provisioned(homeWithSecretsOf(source, { SVC_DATABASE_URL: url }));
    const r = await runSvc(['restore', backupFile, '--force'], target);
    expect(r.stderr).not.toContain('svc:');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/kept as schema "public_pre_restore_\d{8}t\d{6}z" of the same database/);
    const pg = postgres(url, { max: 1, onnotice: () => {} });
    const rows = await pg<{ task_id: string }[]>`SELECT task_id FROM events WHERE task_id LIKE 'bk-%'`;
    const [{ n }] = (await pg<{ n: string }[]>`SELECT COUNT(*) AS n FROM events WHERE task_id NOT LIKE 'bk-%'`) as unknown as [{ n: string }];
    const schemas = (await pg<{ nspname: string }[]>`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'public%'`).map((s) => s.nspname);
    await pg.end();
    expect(missingFrom(new Set(rows.map((row) => row.task_id)), expected)).toEqual([]);
    expect(Number(n)).toBe(90_000);
    expect(schemas).toHaveLength(2);
    const verify = await runSvc(['audit', 'verify'], target);
    expect(verify.stderr).toContain('audit chain: OK');
    expect(verify.code).toBe(0);
    expect(leftovers(target)).toEqual([]);
  }, 120_000);

  test('refusals: another dialect either way, an unprovisioned database, an archive pg_restore cannot read', async () => {
    // A PostgreSQL backup into a SQLite installation, and the other way round.
    const sqliteHome = await provisioned(homeWithSecretsOf(source));
    const a = await runSvc(['restore', backupFile, '--force'], sqliteHome);
    expect(a.code).toBe(1);
    expect(a.stderr).toContain('holds a PostgreSQL database but this installation uses SQLite');
    const sqliteFile = join(dir, 'sqlite.tar');
    const filled = await installationWithAgent(sqliteHome);
    await filled.db.close();
    expect((await runSvc(['backup', '-o', sqliteFile], sqliteHome)).code).toBe(0);
    const b = await runSvc(['restore', sqliteFile, '--force'], target);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain('holds a SQLite database but this installation uses PostgreSQL');
    // An empty database is no restore target.
    const bare = homeWithSecretsOf(source, { SVC_DATABASE_URL: await database() });
    const c = await runSvc(['restore', backupFile, '--force'], bare);
    expect(c.code).toBe(1);
    expect(c.stderr).toContain('is not a provisioned svc database');
    // A payload matching its digest that is no archive: the target keeps its schema.
    const junk = join(dir, 'junk.payload');
    writeFileSync(junk, 'PGDMP but not really');
    const opened = openBackupFile(backupFile);
    const junkFile = join(dir, 'junk.tar');
    writeBackupFile(junkFile, junk, 'svc.pgdump', (p) => ({ ...opened.manifest, payload: p }));
    const d = await runSvc(['restore', junkFile, '--force'], target);
    expect(d.code).toBe(1);
    expect(d.stderr).toContain('the backup is corrupt: not a readable PostgreSQL archive');
    expect((await runSvc(['audit', 'verify'], target)).code).toBe(0);
  }, 60_000);

  /** The target's rows, by table, and its schemas. */
  async function targetState(): Promise<{ counts: Record<string, number>; schemas: string[] }> {
    const pg = postgres(target.SVC_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      const counts: Record<string, number> = {};
      for (const table of ['users', 'projects', 'agents', 'tasks', 'events', 'audit_log']) {
        counts[table] = Number((await pg.unsafe<{ n: string }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0]!.n);
      }
      const schemas = (await pg<{ nspname: string }[]>`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'public%' ORDER BY nspname`).map((x) => x.nspname);
      return { counts, schemas };
    } finally {
      await pg.end();
    }
  }

  /** A refusal that comes after pg_restore ran into the emptied schema: the target's schema is put back as it was. */
  async function refusedAfterAside(file: string, reason: RegExp): Promise<void> {
    const before = await targetState();
    expect(before.counts.events).toBeGreaterThan(0);
    const r = await runSvc(['restore', file, '--force'], target);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
    expect(r.stderr).toContain('restoring with pg_restore'); // the schema had been moved aside
    expect(r.stderr).toMatch(reason);
    // Same rows, and no *_pre_restore_* schema left behind by this attempt.
    expect(await targetState()).toEqual(before);
    expect(leftovers(target)).toEqual([]);
    expect((await runSvc(['audit', 'verify'], target)).code).toBe(0);
  }

  test('refusals after the schema was moved aside: an empty backup, an audit chain that does not verify', async () => {
    const empty = await provisioned(homeWithSecretsOf(source, { SVC_DATABASE_URL: await database() }));
    const emptyFile = join(dir, 'empty-db.tar');
    expect((await runSvc(['backup', '-o', emptyFile], empty)).code).toBe(0);
    await refusedAfterAside(emptyFile, /holds an empty database/);

    const tampered = await provisioned(homeWithSecretsOf(source, { SVC_DATABASE_URL: await database() }));
    const admin = await runSvc(['createsuperuser', '--email', 'admin@example.com', '--password-stdin'], tampered, { stdin: 'Correct-Horse-Battery-9\n' });
    expect(admin.code).toBe(0);
    const pg = postgres(tampered.SVC_DATABASE_URL!, { max: 1, onnotice: () => {} });
    // Past the append-only trigger, as someone with the database's superuser could.
    await pg.begin(async (tx) => {
      await tx`SET LOCAL session_replication_role = replica`;
      await tx`UPDATE audit_log SET metadata = '{"forged":true}' WHERE id = (SELECT id FROM audit_log ORDER BY occurred_at LIMIT 1)`;
    });
    await pg.end();
    const tamperedFile = join(dir, 'tampered.tar');
    expect((await runSvc(['backup', '-o', tamperedFile], tampered)).code).toBe(0);
    await refusedAfterAside(tamperedFile, /audit chain does not verify with this installation's keys \(row .*\)/);
  }, 60_000);

  // The packaged tools in /usr/lib/postgresql hidden under an empty tmpfs, in a mount namespace of the command's own.
  const [unshare, mount] = [Bun.which('unshare'), Bun.which('mount')];
  const hidePackaged = ['--mount', '--map-root-user', '/bin/sh', '-c', `[ ! -d /usr/lib/postgresql ] || ${mount} -t tmpfs none /usr/lib/postgresql && exec "$@"`, 'sh'];
  const canHide = unshare !== null && mount !== null && Bun.spawnSync([unshare, ...hidePackaged, '/bin/true']).exitCode === 0;

  test.skipIf(!canHide)('svc backup without pg_dump (not on PATH, no packaged PostgreSQL) names the tool and writes nothing', async () => {
    const empty = tempDir('svc-empty-path-');
    const out = join(dir, 'no-pg-dump.tar');
    const before = readdirSync(dir);
    const r = await runSvc([...hidePackaged, binaryPath(), 'backup', '-o', out], { ...source, PATH: empty }, { bin: unshare! });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('pg_dump is not installed (looked on PATH and in /usr/lib/postgresql/*/bin)');
    expect(r.stderr).toContain('postgresql-client');
    expect(r.stdout).toBe('');
    expect(readdirSync(dir)).toEqual(before);
  });

  test('a backup of an older revision is migrated up to this svc\'s head', async () => {
    const old = homeWithSecretsOf(source, { SVC_DATABASE_URL: await database() });
    const { ctx, db } = await installationWithAgent(old, '0007');
    await AuditService.fromConfig(ctx.config).record(db, { ...TEST_ACTOR, action: 'project.created', target_type: 'project' });
    await db.close();
    const oldFile = join(dir, 'old.tar');
    expect((await runSvc(['backup', '-o', oldFile], old)).stdout).toContain('revision 0007');
    const r = await runSvc(['restore', oldFile, '--force'], target);
    expect(r.stderr).toContain(`migrated the backup from 0007 to ${HEAD} (${AFTER_0007})`);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`migrated up: ${AFTER_0007}`);
    expect(r.stdout).toContain('1 projects');
    expect((await runSvc(['migrate', 'current', '--check-heads'], target)).code).toBe(0);
    expect((await runSvc(['audit', 'verify'], target)).stderr).toContain('audit chain: OK (2 rows verified)');
  }, 60_000);

  test('reset wipes the tables; --nuke-secrets is refused on PostgreSQL', async () => {
    const nuke = await runSvc(['reset', '--force', '--nuke-secrets'], target);
    expect(nuke.code).toBe(1);
    expect(nuke.stderr).toContain('--nuke-secrets retires an embedded SQLite installation');
    const r = await runSvc(['reset', '--force'], target);
    expect(r.code).toBe(0);
    const status = (await runSvc(['status'], target)).stdout;
    for (const line of ['users: 0', 'projects: 0', 'agents: 0', 'tasks: 0', 'audit rows: 1']) expect(status).toContain(line);
    expect((await runSvc(['audit', 'verify'], target)).code).toBe(0);
  }, 30_000);
});
