// `svc audit ...`: verification, head export and chain maintenance.
// JSON output goes to stdout, every message to stderr.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadConfig, type LoadedConfig } from '../config/load.ts';
import { setEnvFileValue } from '../config/secrets.ts';
import { AuditChainError, authenticateState } from '../audit/chain.ts';
import { Keyring } from '../audit/keyring.ts';
import {
  activateChainState,
  exportAndDeleteFrozen,
  forkCleanup,
  resealWatermark,
  retireChainKey,
  rotateChainKey,
} from '../audit/maintenance.ts';
import { loadState } from '../audit/store.ts';
import { envelopeOf, ON_THE_COMMAND_LINE, verifyChain, type VerifyReport } from '../audit/verify.ts';
import type { Db } from '../db/connect.ts';
import { randomToken } from '../lib/crypto.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import { openConfiguredDatabase } from '../server/compose.ts';
import { CliError, err, out, program, run, USAGE } from './kit.ts';

function keyringOf(loaded: LoadedConfig): Keyring {
  if (loaded.config.SVC_AUDIT_CHAIN_SECRET === '') throw new CliError('SVC_AUDIT_CHAIN_SECRET is not set (svc serve mints it on first boot)', USAGE);
  return new Keyring(loaded.config.SVC_AUDIT_CHAIN_SECRET, loaded.config.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS);
}

async function withChain<T>(fn: (db: Db, keyring: Keyring, loaded: LoadedConfig) => Promise<T>, loaded = loadConfig()): Promise<T> {
  const keyring = keyringOf(loaded);
  let db: Db;
  try {
    db = openConfiguredDatabase(loaded, { create: false });
  } catch (e) {
    throw new CliError(`database: ${(e as Error).message}`, USAGE);
  }
  try {
    return await fn(db, keyring, loaded);
  } catch (e) {
    if (e instanceof AuditChainError) throw new CliError(e.message, 1);
    throw e;
  } finally {
    await db.close().catch(() => {});
  }
}

/** `--known-head` takes the envelope itself, `@path` for a file, or `-` for stdin. */
function readEnvelopeArg(value: string): string {
  if (value === '-') return readFileSync(0, 'utf8');
  if (value.startsWith('@')) {
    const path = value.slice(1);
    if (!existsSync(path)) throw new CliError(`${path}: no such file`, USAGE);
    return readFileSync(path, 'utf8');
  }
  return value;
}

function printReport(report: VerifyReport): void {
  for (const f of report.findings) err(`finding: ${f}`);
  const threads = report.threads > 0 ? ` in ${report.threads} thread${report.threads > 1 ? 's' : ''}` : '';
  const rows = `${report.rowsVerified} rows verified${threads}${report.frozenRows ? `, ${report.frozenRows} frozen rows checked` : ''}`;
  if (report.knownHead) err(`known head: ${report.knownHead}`);
  if (report.clean) err(`audit chain: OK (${rows})`);
  else if (report.findings.length > 0) {
    err(`audit chain: BROKEN (${rows})${report.firstBadRowId ? `; first bad row: ${report.firstBadRowId}` : ''}`);
  } else err(`audit chain: intact (${rows}) but the known head is ${report.knownHead}`);
}

/** Exit code for a known head that is malformed (a usage error) or unmatched. */
const exitFor = (report: VerifyReport): number => (report.knownHead === 'INVALID' ? USAGE : report.clean ? 0 : 1);

export function auditGroup(args: string[]): Promise<number> {
  const cli = program('svc audit');

  cli
    .command('verify', 'walk every retained row: exit 0 when the chain is intact, 1 when broken')
    .option('--known-head <envelope>', 'a head exported earlier (JSON, @file or - for stdin); anything but a match exits non-zero')
    .action((opts: { knownHead?: string }) =>
      withChain(async (db, keyring) => {
        const report = await verifyChain(db, keyring, { knownHead: opts.knownHead === undefined ? undefined : readEnvelopeArg(opts.knownHead), ...ON_THE_COMMAND_LINE });
        printReport(report);
        return exitFor(report);
      }),
    );

  cli
    .command('export-head', 'print the authenticated chain head as a JSON envelope on stdout')
    .option('--verify', 'walk the chain first and refuse to export a broken one')
    .option('--output <path>', 'write the envelope to a new file instead of stdout')
    .action((opts: { verify?: boolean; output?: string }) =>
      withChain(async (db, keyring) => {
        if (opts.verify) {
          const report = await verifyChain(db, keyring, ON_THE_COMMAND_LINE);
          printReport(report);
          if (!report.clean) return 1;
        }
        const state = await loadState(db);
        if (!state) throw new CliError('there is no audit chain state yet');
        try {
          authenticateState(state, keyring);
        } catch (e) {
          throw new CliError(`refusing to export an unauthenticated head: ${(e as Error).message}`);
        }
        const envelope = envelopeOf(state);
        if (!envelope) throw new CliError('the chain has no head yet');
        const text = `${sortedJson(envelope)}\n`;
        if (opts.output) {
          if (existsSync(opts.output)) throw new CliError(`${opts.output} exists`);
          writeFileSync(opts.output, text, { mode: 0o644, flag: 'wx' });
          err(`wrote ${opts.output}`);
        } else out(text);
        return 0;
      }),
    );

  cli
    .command('rotate-chain-key', 'move the chain to the current SVC_AUDIT_CHAIN_SECRET (the old key stays a previous key)')
    .option('--generate', 'mint a new key into the secret file first, keeping the old one in SVC_AUDIT_CHAIN_PREVIOUS_SECRETS')
    .action(async (opts: { generate?: boolean }) => {
      let loaded = loadConfig();
      if (opts.generate) {
        if (loaded.sources.SVC_AUDIT_CHAIN_SECRET !== 'secret.env') {
          throw new CliError('SVC_AUDIT_CHAIN_SECRET is not set in the secret file; set the new key where the old one is configured, then rerun without --generate');
        }
        const previous = [loaded.config.SVC_AUDIT_CHAIN_SECRET, ...loaded.config.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS];
        // The file first: if the database step fails, rerunning without --generate finishes the rotation.
        setEnvFileValue(loaded.paths.secretEnv, 'SVC_AUDIT_CHAIN_PREVIOUS_SECRETS', previous.join(','), 0o600);
        setEnvFileValue(loaded.paths.secretEnv, 'SVC_AUDIT_CHAIN_SECRET', randomToken(48), 0o600);
        loaded = loadConfig();
      }
      return withChain(async (db, keyring) => {
        const { from, to } = await rotateChainKey(db, keyring);
        err(`audit chain key rotated: ${from.slice(0, 12)}… -> ${to.slice(0, 12)}…`);
        err('restart every svc process so they sign with the new key');
        return 0;
      }, loaded);
    });

  cli
    .command('retire-chain-key', 'remove a previous chain key once no retained row is signed with it')
    .option('--key-id <id>', 'the key id (64 hex characters), as `svc audit verify` and the marker rows name it')
    .action((opts: { keyId?: string }) =>
      withChain(async (db, keyring, loaded) => {
        if (!opts.keyId || !/^[0-9a-f]{64}$/.test(opts.keyId)) throw new CliError('--key-id must be 64 lowercase hex characters', USAGE);
        const secret = keyring.get(opts.keyId)?.secret;
        await retireChainKey(db, keyring, opts.keyId);
        const rest = loaded.config.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS.filter((s) => s !== secret);
        if (loaded.sources.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS === 'secret.env') {
          setEnvFileValue(loaded.paths.secretEnv, 'SVC_AUDIT_CHAIN_PREVIOUS_SECRETS', rest.join(','), 0o600);
          err(`retired key ${opts.keyId.slice(0, 12)}… and removed it from ${loaded.paths.secretEnv}`);
        } else {
          err(`retired key ${opts.keyId.slice(0, 12)}…; now remove it from SVC_AUDIT_CHAIN_PREVIOUS_SECRETS where you configure it`);
        }
        return 0;
      }),
    );

  cli
    .command('activate-chain-state', 'create an authenticated chain state where none authenticates (dry run unless --apply)')
    .option('--apply', 'write the new state')
    .option('--known-head <envelope>', 'refuse unless the rows end at this head (JSON, @file or -)')
    .action((opts: { apply?: boolean; knownHead?: string }) =>
      withChain(async (db, keyring) => {
        const plan = await activateChainState(db, keyring, {
          apply: Boolean(opts.apply),
          knownHead: opts.knownHead === undefined ? undefined : readEnvelopeArg(opts.knownHead),
        });
        err(
          `${opts.apply ? 'activated' : 'would activate'}: ${plan.mode === 'adopt' ? `adopting ${plan.rows} rows as the active chain` : `freezing ${plan.rows} rows (digest ${plan.frozenDigest ?? 'none'}) and starting a new generation`} (${plan.reason})`,
        );
        if (!opts.apply) err('rerun with --apply to write it');
        return 0;
      }),
    );

  cli
    .command('reseal-watermark', 're-sign the prune point where the retained chain starts after rows were removed outside pruning (dry run unless --apply)')
    .option('--apply', 'write the resealed state')
    .action((opts: { apply?: boolean }) =>
      withChain(async (db, keyring) => {
        const plan = await resealWatermark(db, keyring, { apply: Boolean(opts.apply) });
        err(
          `${opts.apply ? 'resealed' : 'would reseal'} the prune point at ${plan.newPrune ?? 'the genesis'} (was ${plan.previousPrune ?? 'the genesis'}); ${plan.rowsRecorded - plan.rowsFound} recorded rows are gone`,
        );
        if (!opts.apply) err('rerun with --apply once you have established why those rows are missing');
        return 0;
      }),
    );

  cli
    .command('export-and-delete-frozen', 'write frozen rows of earlier generations to a file, check their digest, then delete them')
    .option('--destination <path>', 'a new file for the rows (JSON lines)')
    .option('--apply', 'delete the rows after the export verified (otherwise export only)')
    .action((opts: { destination?: string; apply?: boolean }) =>
      withChain(async (db, keyring) => {
        if (!opts.destination) throw new CliError('--destination is required', USAGE);
        if (existsSync(opts.destination)) throw new CliError(`${opts.destination} exists`);
        const lines: string[] = [];
        const result = await exportAndDeleteFrozen(db, keyring, (line) => lines.push(line), { apply: false });
        writeFileSync(opts.destination, lines.map((l) => `${l}\n`).join(''), { mode: 0o600, flag: 'wx' });
        err(`exported ${result.rows} frozen rows to ${opts.destination} (digest ${result.digest})`);
        if (opts.apply) {
          await exportAndDeleteFrozen(db, keyring, () => {}, { apply: true });
          err(`deleted ${result.rows} frozen rows`);
        } else err('rerun with --apply (and a new destination) to delete them');
        return 0;
      }),
    );

  cli
    .command('fork-cleanup', 'move rows that are not on the chain from the prune point to the head into audit_log_forks (dry run unless --apply)')
    .option('--apply', 'move them')
    .action((opts: { apply?: boolean }) =>
      withChain(async (db, keyring) => {
        const forks = await forkCleanup(db, keyring, { apply: Boolean(opts.apply) });
        if (forks.length === 0) err('no forked rows');
        else err(`${opts.apply ? 'quarantined' : 'would quarantine'} ${forks.length} forked rows: ${forks.slice(0, 20).join(', ')}${forks.length > 20 ? ', …' : ''}`);
        return 0;
      }),
    );

  return run(cli, args);
}
