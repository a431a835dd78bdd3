// The svc executable: one binary for the service and the operator CLI.
// Command groups (`svc config ...`, `svc migrate ...`) are separate programs
// so each subcommand has its own --help and strict option checking.
import { basename } from 'node:path';
import { allowedHostsGroup } from './cli/allowed-hosts.ts';
import { auditGroup } from './cli/audit.ts';
import { recoveryGroup, registerBackupCommands } from './cli/backup.ts';
import { configGroup, initCommand } from './cli/config.ts';
import { checkCommand, doctorCommand, statusCommand } from './cli/inspect.ts';
import { out, program, run } from './cli/kit.ts';
import { metricsTokenGroup } from './cli/metrics-token.ts';
import { migrateGroup } from './cli/migrate.ts';
import { registerMisfires } from './cli/misfires.ts';
import { projectsGroup } from './cli/projects.ts';
import { registerMintSchedulerCert, schedulerGroup } from './cli/scheduler.ts';
import { tlsGroup } from './cli/tls.ts';
import { registerUpgrade } from './cli/upgrade.ts';
import { bootstrapAdminCommand, changePasswordCommand, resetMfaCommand, resetSetupCommand } from './cli/users.ts';
import { serve } from './server/serve.ts';
import { VERSION } from './version.ts';

const GROUPS: Record<string, { description: string; run: (args: string[]) => Promise<number> }> = {
  config: { description: 'show the effective settings, or validate a tunables file', run: configGroup },
  migrate: { description: 'database migrations: upgrade, current, history, downgrade, sync, revision, prepare-runtime-rollback', run: migrateGroup },
  'allowed-hosts': { description: 'manage the persistent Host allow-list', run: allowedHostsGroup },
  tls: { description: 'self-signed certificate for serving https without a proxy', run: tlsGroup },
  audit: { description: 'verify the audit chain, export its head, maintain its keys and state', run: auditGroup },
  'metrics-token': { description: 'print or rotate the bearer token gating /metrics', run: metricsTokenGroup },
  recovery: { description: 'installations retired by `svc reset --nuke-secrets`: list, destroy-retired-installation', run: recoveryGroup },
  scheduler: { description: "svc's own scheduler (also run as `svc-scheduler`): serve, check, status, info, doctor, restart, import, export, schedules", run: schedulerGroup },
  projects: { description: 'project maintenance: rewrite-scheduler', run: projectsGroup },
};

function topLevel() {
  const cli = program('svc');
  cli
    .command('serve', 'start the service')
    .option('--host <host>', 'address to listen on (default 0.0.0.0)')
    .option('--port <port>', 'port to listen on (default 7700)')
    .option('--workers <n>', 'worker processes sharing the port (default 1)')
    .action((opts: { host?: string; port?: string; workers?: string }) => {
      const port = opts.port === undefined ? undefined : Number(opts.port);
      const workers = opts.workers === undefined ? undefined : Number(opts.workers);
      if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) throw usage('--port must be 0..65535');
      if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1 && workers <= 64)) throw usage('--workers must be 1..64');
      return serve({ host: opts.host, port, workers });
    });
  cli.command('check', 'check that settings load and the database answers').action(checkCommand);
  cli.command('doctor', 'run check and report configuration warnings').action(doctorCommand);
  cli.command('status', 'version, migration revision, environment, database and row counts').action(statusCommand);
  cli.command('version', 'print the installed version').action(() => {
    out(VERSION);
    return 0;
  });
  cli
    .command('bootstrap-admin', 'create the first administrator and the default project (first boot only; alias: createsuperuser)')
    .alias('createsuperuser')
    .option('--email <email>', 'e-mail address of the administrator')
    .option('--display-name <name>', 'their name')
    .option('--password-stdin', 'read the password from standard input (required)')
    .action(bootstrapAdminCommand);
  cli
    .command('changepassword <email>', "set a user's password (admin recovery); their sessions end")
    .option('--password-stdin', 'read the new password from standard input (required)')
    .action(changePasswordCommand);
  cli.command('reset-mfa <email>', "clear a user's two-factor authentication (lost device)").action(resetMfaCommand);
  cli
    .command('reset-setup', 'delete pending first-boot setup tokens (only while no user exists)')
    .option('--force', 'really do it')
    .action(resetSetupCommand);
  cli
    .command('init', 'write $SVC_HOME/config.env with every tunable at its default')
    .option('--force', 'overwrite an existing file')
    .action(initCommand);
  registerUpgrade(cli);
  registerMisfires(cli);
  registerMintSchedulerCert(cli);
  registerBackupCommands(cli);
  for (const [name, group] of Object.entries(GROUPS)) cli.command(`${name} [...subcommand]`, group.description);
  return cli;
}

function usage(message: string): Error {
  const e = new Error(message);
  e.name = 'CACError';
  return e;
}

async function main(argv: string[]): Promise<number> {
  // Invoked as `svc-scheduler` (a link to this executable): the scheduler's own CLI.
  if (/^svc-scheduler(\.exe)?$/.test(basename(process.argv0 ?? ''))) return schedulerGroup(argv, 'svc-scheduler');
  const [first, ...rest] = argv;
  if (argv.length === 1 && (first === '-V' || first === '--version')) {
    out(VERSION);
    return 0;
  }
  if (first !== undefined && Object.hasOwn(GROUPS, first)) return GROUPS[first]!.run(rest);
  return run(topLevel(), argv);
}

process.exitCode = await main(process.argv.slice(2));
// Background handles (database pools, timers) must not keep a finished
// command alive; `serve` resolves only at shutdown.
process.exit(process.exitCode);
