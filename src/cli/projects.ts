// `svc projects rewrite-scheduler`: move a project's schedules from one
// scheduler to another (say from celery-beat to svc's own) in two steps.
//   --dry-run     prints the manifest (the schedules that would move), an
//                 operation id and the preview manifest digest; changes nothing
//   apply         the same owners and scope with --operation-id,
//                 --preview-manifest-digest and --attest-all-schedulers-quiesced
//                 (the old scheduler is stopped, so no run fires twice during
//                 the handover); refused unless the schedules are exactly as
//                 previewed. One transaction and a `project.rewrite_scheduler`
//                 audit row.
import { loadConfigMintingSecrets } from '../config/secrets.ts';
import { upgrade } from '../db/migrate.ts';
import { cliActor } from '../auth/actor.ts';
import { ApiError } from '../http/errors.ts';
import { findProjectBySlug, SLUG_RE } from '../projects/service.ts';
import { applyRewrite, planRewrite, sourceScopeMatcher, type RewritePlan } from '../schedules/own.ts';
import { createContext, openConfiguredDatabase } from '../server/compose.ts';
import { CHECK_FAILED } from './inspect.ts';
import { CliError, optionText, out, program, run, USAGE } from './kit.ts';

const OWNER_RE = /^[a-z][a-z0-9_.-]{0,39}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

interface Flags {
  slug?: string;
  from?: string;
  to?: string;
  sourceScope?: string;
  dryRun?: boolean;
  operationId?: string;
  previewManifestDigest?: string;
  attestAllSchedulersQuiesced?: boolean;
  json?: boolean;
}

function printPlan(p: RewritePlan): void {
  out(`project ${p.project.slug}: ${p.schedules.length} schedule${p.schedules.length === 1 ? '' : 's'} of ${p.from} (scope ${p.source_scope}) -> ${p.to}`);
  for (const s of p.schedules) out(`  ${s.id}  ${s.name}  source ${s.source}${s.is_enabled ? '' : '  (disabled)'}`);
}

async function rewriteScheduler(flags: Flags): Promise<number> {
  const t = (v: unknown, n: string) => optionText(v, [n]);
  const slug = t(flags.slug, '--slug');
  const from = t(flags.from, '--from');
  const to = t(flags.to, '--to');
  const sourceScope = t(flags.sourceScope, '--source-scope') ?? 'imported';
  if (!slug || !SLUG_RE.test(slug)) throw new CliError('--slug <project slug> is required', USAGE);
  if (!from || !OWNER_RE.test(from)) throw new CliError('--from <scheduler> is required (e.g. celery-beat)', USAGE);
  if (!to || !OWNER_RE.test(to)) throw new CliError('--to <scheduler> is required (e.g. svc-scheduler)', USAGE);
  if (from === to) throw new CliError('--from and --to name the same scheduler', USAGE);
  if (!sourceScopeMatcher(sourceScope)) throw new CliError('--source-scope must be imported (declarative:* and imported* sources, the default), all, or source:<label>', USAGE);
  const operationId = t(flags.operationId, '--operation-id');
  const digest = t(flags.previewManifestDigest, '--preview-manifest-digest');
  if (!flags.dryRun) {
    if (!operationId || !digest) throw new CliError('preview first with --dry-run; then apply with the --operation-id and --preview-manifest-digest it printed', USAGE);
    if (!UUID_RE.test(operationId)) throw new CliError('--operation-id must be the UUID --dry-run printed', USAGE);
    if (!flags.attestAllSchedulersQuiesced) {
      throw new CliError(`--attest-all-schedulers-quiesced is required: stop ${from} (and any scheduler firing these schedules) first, so no run fires twice during the handover`, USAGE);
    }
  } else if (digest) throw new CliError('--preview-manifest-digest belongs to the apply step, not to --dry-run', USAGE);

  const { loaded } = loadConfigMintingSecrets();
  const db = openConfiguredDatabase(loaded);
  try {
    await upgrade(db);
    const ctx = createContext(loaded, db);
    const project = await findProjectBySlug(db, slug);
    if (!project) throw new CliError(`no project ${slug}`, CHECK_FAILED);
    const ref = { id: project.id, slug: project.slug };
    if (flags.dryRun) {
      const plan = await planRewrite(db, { project: ref, from, to, sourceScope, operationId: operationId ?? crypto.randomUUID() });
      if (flags.json) {
        out(JSON.stringify(plan, null, 2));
        return 0;
      }
      printPlan(plan);
      out(`operation id: ${plan.operation_id}`);
      out(`preview manifest digest: ${plan.digest}`);
      out('nothing was changed. To apply, stop the schedulers firing these schedules and run:');
      out(
        `  svc projects rewrite-scheduler --slug ${slug} --from ${from} --to ${to} --source-scope ${sourceScope} --operation-id ${plan.operation_id} --preview-manifest-digest ${plan.digest} --attest-all-schedulers-quiesced`,
      );
      return 0;
    }
    const done = await applyRewrite(ctx, { project: ref, from, to, sourceScope, operationId: operationId!, digest: digest! }, cliActor());
    if (flags.json) out(JSON.stringify(done, null, 2));
    else out(`moved ${done.moved} schedule${done.moved === 1 ? '' : 's'} of project ${slug} from ${from} to ${to} (operation ${done.operation_id}, ${done.digest})`);
    return 0;
  } catch (e) {
    if (e instanceof ApiError) throw new CliError(e.error === 'manifest_changed' ? e.message : `${e.message}`, 1);
    throw e;
  } finally {
    await db.close().catch(() => {});
  }
}

export function projectsGroup(args: string[]): Promise<number> {
  const cli = program('svc projects');
  cli
    .command('rewrite-scheduler', "move a project's schedules to another scheduler: preview with --dry-run, then apply with the digest")
    .option('--slug <slug>', 'the project (required)')
    .option('--from <scheduler>', 'the scheduler that owns them now, e.g. celery-beat (required)')
    .option('--to <scheduler>', 'the scheduler to own them, e.g. svc-scheduler (required)')
    .option('--source-scope <scope>', 'which: imported (declarative:* and imported* sources; default), all, source:<label>')
    .option('--dry-run', 'print the manifest, an operation id and its digest; change nothing')
    .option('--operation-id <uuid>', 'apply: the operation id --dry-run printed')
    .option('--preview-manifest-digest <digest>', 'apply: the digest --dry-run printed')
    .option('--attest-all-schedulers-quiesced', 'apply: you stopped every scheduler firing these schedules')
    .option('--json', 'print the manifest as JSON')
    .action(rewriteScheduler);
  return run(cli, args);
}
