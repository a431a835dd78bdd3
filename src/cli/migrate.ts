// `svc migrate upgrade head | current [--check-heads] | history | downgrade <rev> | sync`.
import { loadConfigMintingSecrets } from '../config/secrets.ts';
import type { Db } from '../db/connect.ts';
import { headRevision, knownMigrations, schemaState, sync, upgrade } from '../db/migrate.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { CliError, err, out, program, run, USAGE } from './kit.ts';

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

  return run(cli, args);
}
