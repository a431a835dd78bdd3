// `svc tls self-signed [--name <host>...] [--force]`, `svc tls fingerprint`.
import { existsSync, readFileSync } from 'node:fs';
import { loadConfig } from '../config/load.ts';
import { fingerprintOf, mintSelfSigned, selfSignedPaths } from '../server/tls.ts';
import { CliError, out, program, run } from './kit.ts';

export function tlsGroup(args: string[]): Promise<number> {
  const cli = program('svc tls');
  cli
    .command('self-signed', 'mint a self-signed certificate and key into $SVC_HOME/tls and print the fingerprint')
    .option('--name <host>', 'extra DNS name or IP address for the certificate (repeatable)', { type: [String] })
    .option('--force', 'replace an existing pair')
    .action(async (opts: { name?: string[]; force?: boolean }) => {
      const { paths } = loadConfig();
      const files = selfSignedPaths(paths.tlsDir);
      if (existsSync(files.cert) && !opts.force) throw new CliError(`${files.cert} exists; use --force to replace it`);
      const m = await mintSelfSigned(paths.tlsDir, opts.name ?? []);
      out(`certificate: ${files.cert}`);
      out(`key: ${files.key}`);
      out(`SHA-256 fingerprint: ${m.fingerprint}`);
      out('serve it with SVC_TLS_SELF_SIGNED=true');
      return 0;
    });
  cli.command('fingerprint', 'print the SHA-256 fingerprint of the certificate svc serves').action(() => {
    const { config, paths } = loadConfig();
    const file = config.SVC_TLS_CERT_FILE !== '' ? config.SVC_TLS_CERT_FILE : selfSignedPaths(paths.tlsDir).cert;
    if (!existsSync(file)) throw new CliError(`no certificate at ${file}`);
    out(fingerprintOf(readFileSync(file, 'utf8')));
    return 0;
  });
  return run(cli, args);
}
