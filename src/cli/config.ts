// `svc init`, `svc config show`, `svc config validate`.
import { existsSync } from 'node:fs';
import { checkTunablesFile, loadConfig, type LoadOptions } from '../config/load.ts';
import { settingsView } from '../config/mask.ts';
import { ensureHome, writeFileAtomic } from '../config/secrets.ts';
import { SETTINGS, SETTING_NAMES, type SettingName } from '../config/settings.ts';
import { homePaths } from '../config/home.ts';
import { CliError, out, program, run } from './kit.ts';

/** The documented tunables template `svc init` writes: every non-secret
 * setting, commented out at its default. */
export function tunablesTemplate(): string {
  const lines = [
    '# svc tunables. Uncomment a line to change it; the process environment wins over this file.',
    '# Secrets do not belong here: they live in secret.env (minted on first boot) or the environment.',
    '',
  ];
  for (const name of SETTING_NAMES) {
    const s = SETTINGS[name];
    if (s.meta.secret) continue;
    const def = (s.schema as { default?: unknown }).default;
    lines.push(`# ${s.meta.description}`, `# ${name}=${Array.isArray(def) ? def.join(',') : String(def ?? '')}`, '');
  }
  return lines.join('\n');
}

export function initCommand(options: { force?: boolean }): number {
  const paths = homePaths();
  if (existsSync(paths.configEnv) && !options.force) {
    throw new CliError(`${paths.configEnv} exists; use --force to overwrite it`);
  }
  ensureHome(paths.home);
  writeFileAtomic(paths.configEnv, tunablesTemplate(), 0o644);
  out(`wrote ${paths.configEnv}`);
  return 0;
}

/** Inert placeholder values for required secrets, so validation of a
 * candidate file never needs real credentials. */
const PLACEHOLDERS = Object.fromEntries(
  SETTING_NAMES.filter((n) => SETTINGS[n].meta.minted).map((n) => [n, `placeholder-for-validation-only-${n}`]),
) as Partial<Record<SettingName, string>>;

export function configGroup(args: string[]): Promise<number> {
  const cli = program('svc config');
  cli
    .command('show', 'print the effective settings and where each comes from (secrets masked)')
    .option('--reveal-secrets', 'print secret values too')
    .action((opts: { revealSecrets?: boolean }) => {
      const loaded = loadConfig();
      out(`# home: ${loaded.paths.home}`);
      for (const s of settingsView(loaded.config, loaded.sources, Boolean(opts.revealSecrets))) {
        out(`${s.name}=${s.value}  # ${s.source}`);
      }
      return 0;
    });
  cli
    .command('validate <file>', 'check a candidate tunables file: unknown SVC_* keys and bad values are errors')
    .action((file: string) => {
      if (!existsSync(file)) throw new CliError(`${file}: no such file`, 2);
      checkTunablesFile(file);
      const options: LoadOptions = { tunablesFile: file, ignoreSecretFile: true, placeholders: PLACEHOLDERS };
      // Cross-field rules too, with the candidate file as the only source
      // besides defaults (the process environment is not part of the check).
      loadConfig({ ...options, env: { SVC_HOME: process.env.SVC_HOME } });
      out(`${file}: ok`);
      return 0;
    });
  return run(cli, args);
}
