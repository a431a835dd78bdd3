// `svc upgrade [--apply]`: check the release manifest; with --apply install
// its binary for this OS and architecture (src/admin/upgrade.ts).
// Exit codes: 0 up to date (or upgraded), 1 a newer release exists (check
// only), 2 any failure, with nothing replaced.
import type { CAC } from 'cac';
import { ConfigError, loadConfig } from '../config/load.ts';
import { currentExecutable, installRelease, OLD_SUFFIX, PLATFORM, readRelease, shownUrl, UpgradeError, type UpgradeOptions } from '../admin/upgrade.ts';
import { CliError, out } from './kit.ts';

/** Exit code of `svc upgrade` when a newer release exists (check only). */
export const NEWER_AVAILABLE = 1;
/** Exit code of any failure. */
export const UPGRADE_FAILED = 2;

const HELP = [
  '  svc upgrade            check only: exit 0 up to date, 1 a newer release exists (printed), 2 failure',
  `  svc upgrade --apply    install the release's binary for ${PLATFORM}: exit 0 upgraded or up to date, 2 failure`,
  '',
  'The release manifest is SVC_VERSION_CHECK_URL (format: docs/operations.md, "Upgrading"). --apply',
  "downloads the binary the manifest names for this OS and architecture, checks its SHA-256, the",
  "manifest's Ed25519 signature (<manifest URL>.sig) when SVC_UPDATE_PUBLIC_KEY is set, and that the new",
  "binary's `version` prints the version the manifest promised; then it replaces this executable",
  `atomically and keeps the previous one beside it as <executable>${OLD_SUFFIX} (move it back to roll back).`,
  'Nothing is replaced on any failure. Running services keep the old code until restarted: restart',
  '`svc serve` (every process of it) after upgrading.',
];

export function registerUpgrade(cli: CAC): void {
  const command = cli
    .command('upgrade', 'check for a newer svc release; --apply installs it in place of this executable')
    .option('--apply', `download, verify and install the release's binary for ${PLATFORM}`);
  for (const line of HELP) command.example(line);
  command.action(upgradeCommand);
}

async function upgradeCommand(opts: { apply?: boolean }): Promise<number> {
  try {
    return await upgrade(Boolean(opts.apply));
  } catch (e) {
    if (e instanceof CliError || e instanceof ConfigError) throw e;
    const message = e instanceof UpgradeError ? e.message : `unexpected error: ${(e as Error).message ?? String(e)}`;
    throw new CliError(opts.apply ? `${message}; nothing was replaced` : message, UPGRADE_FAILED);
  }
}

async function upgrade(apply: boolean): Promise<number> {
  const { config } = loadConfig();
  const options: UpgradeOptions = {
    url: config.SVC_VERSION_CHECK_URL,
    allowHttp: config.SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP,
    publicKey: config.SVC_UPDATE_PUBLIC_KEY,
    downloadTimeoutMs: config.SVC_UPDATE_DOWNLOAD_TIMEOUT_SECONDS * 1000,
  };
  if (options.url === '') throw new UpgradeError('SVC_VERSION_CHECK_URL is empty: there is no release manifest to read');
  // Before any download: where the binary would go.
  const exe = apply ? currentExecutable() : null;
  const release = await readRelease(options, apply);
  if (release.latest === null) throw new UpgradeError('the release manifest names no svc version (packages.svc)');
  if (!release.newer) {
    out(`svc ${release.installed} is up to date (latest release ${release.latest})`);
    return 0;
  }
  if (!apply) {
    out(`svc ${release.latest} is available (installed ${release.installed})`);
    for (const u of release.updates) out(`  ${u.name.padEnd(24)} ${u.installed} -> ${u.latest}`);
    if ('problem' in release.binary) out(`\`svc upgrade --apply\` cannot install it here: ${release.binary.problem}`);
    else out(`install it with \`svc upgrade --apply\` (${PLATFORM} binary: ${shownUrl(release.binary.url)})`);
    return NEWER_AVAILABLE;
  }
  out(`svc ${release.installed} -> ${release.latest} (${PLATFORM})`);
  out(
    release.signed
      ? 'the manifest signature verifies against SVC_UPDATE_PUBLIC_KEY'
      : 'the manifest is not signature-checked (SVC_UPDATE_PUBLIC_KEY is empty): trusting its https origin and the SHA-256 it names',
  );
  const done = await installRelease(release, options, exe!, out);
  out(`upgraded ${done.exe} to ${done.version}; the previous binary (${done.previous}) is kept at ${done.kept}`);
  out('running svc processes keep the old code until restarted: restart `svc serve` now');
  return 0;
}
