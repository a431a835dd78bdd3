// `svc migrate upgrade head | current [--check-heads] | history | downgrade <rev> | sync
// | revision | prepare-runtime-rollback`. Migrations are embedded in the binary and
// forward-only: `revision` reports the newest one rather than generating one, and
// `prepare-runtime-rollback` seals a backup before an older svc is started.
import { Refused } from '../backup/errors.ts';
import { backupDatabase } from '../backup/service.ts';
import { loadConfig } from '../config/load.ts';
import { loadConfigMintingSecrets } from '../config/secrets.ts';
import type { Db } from '../db/connect.ts';
import { headRevision, knownMigrations, schemaState, sync, upgrade, type Migration } from '../db/migrate.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { CliError, err, optionText, out, program, run, USAGE } from './kit.ts';

async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const { loaded } = loadConfigMintingSecrets();
  const db = openConfiguredDatabase(loaded);
  try {
    return await fn(db);
  } finally {
    await db.close().catch(() => {});
  }
}

export function migrateGroup(args: string[]): Promise<number> {
  const cli = program('svc migrate');
  cli.option('--allow-future-schema', 'sync: also drop tables this svc does not know (needs the next flag too)');
  cli.option('--i-know-this-can-corrupt-data', 'sync: confirm dropping newer tables');

  cli.command('upgrade <target>', 'apply migrations up to <target> (`head` for all)').action((target: string) =>
    withDb(async (db) => {
      const applied = await upgrade(db, target === 'head' ? headRevision() : target);
      out(applied.length > 0 ? `applied ${applied.join(', ')}` : 'already at the requested revision');
      return 0;
    }),
  );

  cli
    .command('current', 'print the revision the database is stamped with')
    .option('--check-heads', 'exit 1 unless every migration of this svc is applied')
    .action((opts: { checkHeads?: boolean }) =>
      withDb(async (db) => {
        const state = await schemaState(db);
        out(`current: ${state.current ?? 'none'}`);
        if (!opts.checkHeads) return 0;
        out(`head: ${state.head}`);
        if (state.unknown.length > 0) {
          err(`unknown revisions applied by a newer svc: ${state.unknown.map((u) => u.revision).join(', ')}`);
          return 1;
        }
        if (state.pending.length > 0) {
          err(`pending: ${state.pending.map((p) => p.revision).join(', ')}`);
          return 1;
        }
        return 0;
      }),
    );

  cli.command('history', 'list every migration of this svc and whether it is applied').action(() =>
    withDb(async (db) => {
      const state = await schemaState(db);
      const applied = new Map(state.applied.map((a) => [a.revision, a]));
      for (const m of knownMigrations(db.dialect)) {
        const a = applied.get(m.revision);
        const drift = a && a.checksum !== m.checksum ? ' (applied file differs from this build!)' : '';
        out(`${m.revision} ${m.name} ${a ? `applied ${a.applied_at}${drift}` : 'pending'}`);
      }
      for (const u of state.unknown) out(`${u.revision} ${u.name} applied ${u.applied_at} (unknown to this svc)`);
      return 0;
    }),
  );

  cli.command('downgrade <revision>', 'migrations are forward-only: explains how to go back').action((revision: string) =>
    withDb(async (db) => {
      const state = await schemaState(db);
      if (!knownMigrations(db.dialect).some((m) => m.revision === revision)) throw new CliError(`unknown revision ${revision}`, USAGE);
      if (state.current === revision) {
        out(`already at ${revision}`);
        return 0;
      }
      throw new CliError(
        `migrations are forward-only; to return to ${revision}, restore a backup taken at that revision (svc restore), or run an older svc after \`svc migrate sync\``,
      );
    }),
  );

  cli
    .command('sync', 're-stamp a database migrated by a newer svc so this svc can run it')
    .action((opts: { allowFutureSchema?: boolean; iKnowThisCanCorruptData?: boolean }) => {
      if (Boolean(opts.allowFutureSchema) !== Boolean(opts.iKnowThisCanCorruptData)) {
        throw new CliError('--allow-future-schema and --i-know-this-can-corrupt-data go together', USAGE);
      }
      return withDb(async (db) => {
        const result = await sync(db, Boolean(opts.allowFutureSchema));
        out(result.removedStamps.length > 0 ? `removed stamps: ${result.removedStamps.join(', ')}` : 'no unknown revisions');
        if (result.droppedTables.length > 0) out(`dropped tables: ${result.droppedTables.join(', ')}`);
        return 0;
      });
    });

  cli
    .command('revision', "print this svc's newest migration: they are embedded in the binary (written in the source tree's migrations/), so nothing is generated here")
    .action(() => {
      const all = knownMigrations('sqlite');
      const head = all[all.length - 1]!;
      out(`head: ${head.revision} ${head.name}`);
      out(`embedded: ${all.length} forward-only migrations (${all[0]!.revision}..${head.revision}), for SQLite and PostgreSQL`);
      return 0;
    });

  cli
    .command('prepare-runtime-rollback', 'before starting an older svc: seal a backup of the database as it is now and list what the older svc will not know')
    .option('--to <revision>', 'the newest migration of the older svc (its `svc migrate revision`; required)')
    .option('-o, --output <path>', 'the sealed backup to write (required; never overwritten)')
    .action((opts: { to?: unknown; output?: unknown }) => {
      // As typed: the parser would read `--to 0007` as the number 7.
      const to = optionText(opts.to, ['--to']);
      const output = optionText(opts.output, ['--output', '-o']);
      if (!to || !/^\d{4}$/.test(to)) throw new CliError('--to <revision> is required (four digits, e.g. 0007)', USAGE);
      if (!output) throw new CliError('--output <path> is required (the sealed backup to write)', USAGE);
      return prepareRuntimeRollback(to, output);
    });

  return run(cli, args);
}

const tablesCreatedBy = (m: Migration): string[] => [...m.statements.join('\n').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z0-9_]+)"?/gi)].map((x) => x[1]!);

async function prepareRuntimeRollback(to: string, output: string): Promise<number> {
  const loaded = loadConfig();
  const known = knownMigrations(loaded.database.dialect);
  if (!known.some((m) => m.revision === to)) throw new CliError(`unknown revision ${to}`, USAGE);
  const state = await withDb(schemaState);
  if (state.unknown.length > 0 || state.pending.length > 0 || state.current === null) {
    throw new CliError(`the database is at ${state.current ?? 'no revision'}, not at this svc's head ${state.head}: a rollback is prepared from a database this svc runs`);
  }
  if (to >= state.current) {
    out(`nothing to prepare: the database is at ${state.current}, which an svc whose newest migration is ${to} already knows`);
    return 0;
  }
  let sealed;
  try {
    sealed = await backupDatabase(loaded, output, { rollback_to: to });
  } catch (e) {
    if (e instanceof Refused) throw new CliError(e.message);
    throw e;
  }
  const newer = known.filter((m) => m.revision > to);
  out(`sealed backup: ${sealed.path} (revision ${sealed.manifest.revision}, sha256 of the database ${sealed.manifest.payload.sha256})`);
  out(`an svc at ${to} does not know these migrations of the database:`);
  for (const m of newer) {
    const tables = tablesCreatedBy(m);
    out(`  ${m.revision} ${m.name}${tables.length > 0 ? ` (creates ${tables.join(', ')})` : ''}`);
  }
  const dropped = newer.flatMap(tablesCreatedBy);
  out('then, nothing of this has been changed yet:');
  out('  1. stop svc serve');
  out(`  2. with the older svc: \`svc migrate sync\` (removes the stamps above${dropped.length > 0 ? `; add --allow-future-schema --i-know-this-can-corrupt-data before sync to drop ${dropped.join(', ')}` : ''}), then start it`);
  out(`  3. to come back to this svc: \`svc restore ${sealed.path} --force\` with this svc (what the older svc stored meanwhile is not in it)`);
  return 0;
}
