// `svc metrics-token show | rotate`: the bearer token gating /metrics. It is
// resolved from SVC_METRICS_AUTH_TOKEN in the environment,
// then the secret file, then minted on first boot into the secret file.
// Rotating rewrites the secret file, so it works only when that is where the
// token comes from; running services keep the old token until restarted.
import { loadConfig } from '../config/load.ts';
import { loadConfigMintingSecrets, setEnvFileValue } from '../config/secrets.ts';
import { randomToken } from '../lib/crypto.ts';
import { CliError, out, program, run } from './kit.ts';

const NAME = 'SVC_METRICS_AUTH_TOKEN';

export function metricsTokenGroup(args: string[]): Promise<number> {
  const cli = program('svc metrics-token');
  // `svc metrics-token` alone shows it (the specification's `[show | rotate]`).
  if (args.length === 0) args = ['show'];
  cli.command('show', 'print the token /metrics accepts (minted into the secret file if there is none yet)').action(() => {
    const { loaded } = loadConfigMintingSecrets();
    out(loaded.config[NAME]);
    return 0;
  });
  cli
    .command('rotate', 'mint a new token into the secret file and print it; running services keep the old one until restarted')
    .action(() => {
      const loaded = loadConfig();
      // config.env cannot be the source: the loader refuses a secret there.
      if (loaded.sources[NAME] === 'env') throw new CliError(`the token comes from the environment (${NAME}); change it there`);
      const token = randomToken(48);
      setEnvFileValue(loaded.paths.secretEnv, NAME, token, 0o600);
      out(token);
      process.stderr.write(`wrote ${NAME} to ${loaded.paths.secretEnv}; restart running services (each process keeps the token it started with)\n`);
      return 0;
    });
  return run(cli, args);
}
