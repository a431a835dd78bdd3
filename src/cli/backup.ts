// `svc backup`, `svc restore`, `svc reset` (top-level commands) and the
// `svc recovery ...` group: flags in, src/backup/ does the work, a refusal
// is one line on stderr and exit 1 with nothing changed.
import type { CAC } from 'cac';
import { Refused } from '../backup/errors.ts';
import { destroyRetired, isOperationId, listRetired, resetInstallation, retireInstallation } from '../backup/reset.ts';
import { backupDatabase, restoreDatabase } from '../backup/service.ts';
import { loadConfig } from '../config/load.ts';
import { DatabaseMissingError } from '../db/connect.ts';
import { CliError, err, optionText, out, program, run, USAGE } from './kit.ts';

/** Runs an operation, turning its refusals into exit 1 with the reason. */
async function refusing(fn: () => Promise<number>): Promise<number> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof Refused || e instanceof DatabaseMissingError) throw new CliError(e.message, 1);
    throw e;
  }
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

export function backupCommand(opts: { output?: unknown }): Promise<number> {
  const output = optionText(opts.output, ['--output', '-o']);
  if (!output) throw new CliError('--output <path> is required (the new backup file)', USAGE);
  return refusing(async () => {
    const loaded = loadConfig();
    const r = await backupDatabase(loaded, output, {}, err);
    const m = r.manifest;
    out(`backup written to ${r.path} (${mib(m.payload.bytes)} ${m.dialect === 'sqlite' ? 'SQLite database' : 'pg_dump archive'}, revision ${m.revision ?? 'none'}, ${m.audit.rows} audit rows)`);
    out(`sha256 of the database in it: ${m.payload.sha256}`);
    err(`backup file written in ${r.seconds.toFixed(1)} s`);
    err('keep the secret file (secret.env) safe as well: the backup cannot be restored without its keys');
    return 0;
  });
}

export function restoreCommand(file: string, opts: { force?: boolean }): Promise<number> {
  if (!opts.force) {
    err('svc restore replaces the configured database with the backup; stop svc serve, then rerun with --force (nothing was changed)');
    return Promise.resolve(1);
  }
  return refusing(async () => {
    const r = await restoreDatabase(loadConfig(), file, err);
    for (const w of r.warnings) err(`warning: ${w}`);
    const c = r.counts;
    out(`restored ${file}: ${c.users} users, ${c.projects} projects, ${c.agents} agents, ${c.tasks} tasks, ${c.events} events, ${c.audit_log} audit rows (${r.rowsVerified} verified)`);
    if (r.migrated.length > 0) out(`migrated up: ${r.migrated.join(', ')}`);
    out(`the replaced database is kept as ${r.kept}; remove it once you are satisfied`);
    return 0;
  });
}

export function resetCommand(opts: { force?: boolean; nukeSecrets?: boolean }): Promise<number> {
  if (!opts.force) {
    err(
      opts.nukeSecrets
        ? 'svc reset --nuke-secrets retires the database and the secret file; stop svc serve, then rerun with --force (nothing was changed)'
        : 'svc reset deletes every row of every table (users, projects, agents, tasks, the audit log, ...); stop svc serve, then rerun with --force (nothing was changed)',
    );
    return Promise.resolve(1);
  }
  return refusing(async () => {
    const loaded = loadConfig();
    if (opts.nukeSecrets) {
      const b = await retireInstallation(loaded);
      out(`retired the installation into ${b.dir}: ${b.manifest.files.map((f) => f.name).join(', ')}`);
      out(`operation: ${b.operation}`);
      out(`manifest digest: ${b.digest}`);
      out('svc serve creates a fresh database and secrets on its next start');
      out(`to go back: stop svc and move the files back to ${[...new Set(b.manifest.files.map((f) => f.original_path.replace(/\/tls\/.*$/, '/tls/')))].join(', ')}`);
      out(`to delete it for good: svc recovery destroy-retired-installation --operation ${b.operation} --confirm-manifest-digest ${b.digest}`);
      if (b.fromEnvironment.length > 0) err(`warning: ${b.fromEnvironment.join(', ')} come from the environment, not the secret file: change them there, or the new installation keeps them`);
      return 0;
    }
    const r = await resetInstallation(loaded);
    out(`reset: ${r.rows} rows deleted from ${r.tables} tables; the schema is kept at its revision`);
    out('svc serve prints a new first-boot setup link on its next start');
    return 0;
  });
}

/** Adds backup, restore and reset to the top-level program. */
export function registerBackupCommands(cli: CAC): void {
  cli
    .command('backup', 'snapshot the database into one new file (safe while svc serve runs)')
    .option('-o, --output <path>', 'the backup file to create (required; an existing file is never overwritten)')
    .example('  $ svc backup -o /var/backups/svc-$(date +%F).tar   # a tar of the database and its manifest, mode 0600')
    .action(backupCommand);
  cli
    .command('restore <file>', 'replace the database with a backup (svc serve stopped; forward-only migrations)')
    .option('--force', 'confirm that svc serve is stopped and the database may be replaced (required)')
    .example('  $ svc restore /var/backups/svc-2026-11-26.tar --force')
    .example('  Checks first: the file (manifest, SHA-256), its dialect and revision, a provisioned target at this')
    .example("  svc's head, the backup's data and audit chain; the replaced database is kept beside it.")
    .action(restoreCommand);
  cli
    .command('reset', 'delete every row of every table (the schema stays), or retire the installation')
    .option('--force', 'really do it (required)')
    .option('--nuke-secrets', 'SQLite: retire the database and the secret file into a recoverable bundle under $SVC_HOME/retired instead')
    .action(resetCommand);
}

/** `svc recovery ...`: the bundles `svc reset --nuke-secrets` leaves. */
export function recoveryGroup(args: string[]): Promise<number> {
  const cli = program('svc recovery');
  cli.command('list', 'list retired installations with their operation ids and manifest digests').action(() => {
    const bundles = listRetired(loadConfig());
    if (bundles.length === 0) out('no retired installations');
    for (const b of bundles) {
      out(b.manifest ? `${b.operation} retired ${b.manifest.retired_at} digest ${b.digest} (${b.manifest.files.map((f) => f.name).join(', ')})` : `${b.operation} (no readable manifest) ${b.dir}`);
    }
    return 0;
  });
  cli
    .command('destroy-retired-installation', 'delete a bundle left by `svc reset --nuke-secrets`, for good')
    .option('--operation <uuid>', 'the operation id reset printed (required)')
    .option('--confirm-manifest-digest <digest>', "the SHA-256 of the bundle's manifest.json, as reset printed it (required)")
    .action((opts: { operation?: unknown; confirmManifestDigest?: unknown }) => {
      const operation = optionText(opts.operation, ['--operation']) ?? '';
      const digest = optionText(opts.confirmManifestDigest, ['--confirm-manifest-digest']) ?? '';
      if (!isOperationId(operation)) throw new CliError('--operation <uuid> is required (the operation id svc reset --nuke-secrets printed)', USAGE);
      if (!/^[0-9a-fA-F]{64}$/.test(digest)) throw new CliError('--confirm-manifest-digest <digest> is required (64 hexadecimal digits)', USAGE);
      return refusing(async () => {
        const removed = destroyRetired(loadConfig(), operation, digest);
        out(`destroyed retired installation ${operation} (${removed.manifest!.files.map((f) => f.name).join(', ')}) at ${removed.dir}`);
        return 0;
      });
    });
  return run(cli, args);
}
