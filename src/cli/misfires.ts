// `svc misfires --project <slug> [--limit <n>] [--json]`: a project's detected
// schedule misfires, newest first, read straight from the database (the
// service need not run). --limit defaults to 50 and is capped at 1000. Exit 0
// on success (also when there are none); 2 for a malformed slug, an unknown
// project, or a database that cannot be reached or read.
import type { CAC } from 'cac';
import { loadConfig } from '../config/load.ts';
import { findProjectBySlug, SLUG_RE } from '../projects/service.ts';
import { listMisfires, MISFIRES_DEFAULT_LIMIT, MISFIRES_MAX_LIMIT } from '../schedules/service.ts';
import { CHECK_FAILED, withReadOnlyDb } from './inspect.ts';
import { CliError, optionText, out, USAGE } from './kit.ts';

interface Options {
  project?: string | number | boolean;
  limit?: string | number | boolean;
  json?: boolean;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** Writes all of `text` before resolving: the CLI exits right after, and a large answer to a pipe would be cut. */
const print = (text: string): Promise<void> => new Promise((resolve) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`, () => resolve()));

const seconds = (n: number): string => `${Number.isInteger(n) ? n : n.toFixed(3)}s`;

export async function misfiresCommand(opts: Options): Promise<number> {
  const slug = optionText(opts.project, ['--project']);
  if (slug === undefined || slug === '') throw new CliError('--project <slug> is required', USAGE);
  if (!SLUG_RE.test(slug)) throw new CliError(`${JSON.stringify(slug)} is not a project slug`, USAGE);
  let limit = MISFIRES_DEFAULT_LIMIT;
  const limitText = optionText(opts.limit, ['--limit']);
  if (opts.limit !== undefined) {
    if (limitText === undefined || !/^\d+$/.test(limitText) || Number(limitText) < 1) throw new CliError('--limit must be a positive integer', USAGE);
    limit = Math.min(Number(limitText), MISFIRES_MAX_LIMIT);
  }
  const loaded = loadConfig();
  const list = await withReadOnlyDb(loaded, async (db) => {
    try {
      const project = await findProjectBySlug(db, slug);
      if (!project) throw new CliError(`no project ${slug}`, CHECK_FAILED);
      return await listMisfires(db, project, limit);
    } catch (e) {
      if (e instanceof CliError) throw e;
      throw new CliError(`database: ${(e as Error).message}`, CHECK_FAILED);
    }
  });
  if (opts.json) {
    await print(JSON.stringify(list, null, 2));
    return 0;
  }
  if (list.misfires.length === 0) {
    out(`no misfires in project ${list.project}`);
    return 0;
  }
  const rows = [['SCHEDULE ID', 'DETECTED AT', 'NAME', 'ENGINE', 'KIND', 'LATENESS', 'GRACE']];
  for (const m of list.misfires) rows.push([m.schedule_id, m.detected_at, m.name, m.engine, m.kind, seconds(m.lateness_seconds), seconds(m.grace_seconds)]);
  await print(table(rows));
  return 0;
}

export function registerMisfires(cli: CAC): void {
  cli
    .command('misfires', "list a project's detected schedule misfires, newest first")
    .option('--project <slug>', 'the project (required)')
    .option('--limit <n>', `how many, newest first (default ${MISFIRES_DEFAULT_LIMIT}, at most ${MISFIRES_MAX_LIMIT})`)
    .option('--json', 'print {"project", "misfires"} as JSON')
    .action(misfiresCommand);
}
