// `svc allowed-hosts list | add <host> | remove <host> | path`: the persistent
// Host allow-list in $SVC_HOME/allowed-hosts. A running svc re-reads the file
// within a second of a change.
import { homePaths } from '../config/home.ts';
import { ensureHome } from '../config/secrets.ts';
import { HostPolicy, isValidHostEntry, normaliseHost, readHostsFile, writeHostsFile } from '../http/hosts.ts';
import { loadConfig } from '../config/load.ts';
import { CliError, out, program, run, USAGE } from './kit.ts';

export function allowedHostsGroup(args: string[]): Promise<number> {
  const cli = program('svc allowed-hosts');
  cli.command('list', 'print every Host value svc accepts (built-in, settings and file)').action(() => {
    const { config, paths } = loadConfig();
    for (const h of HostPolicy.fromConfig(paths.allowedHosts, config.SVC_ALLOWED_HOSTS, config.SVC_PUBLIC_URL).list()) out(h);
    return 0;
  });
  cli.command('add <host>', 'accept <host> (a name, an IP address, *.example.com, or *)').action((host: string) => {
    if (!isValidHostEntry(host)) throw new CliError(`not a host name or address: ${host}`, USAGE);
    const { home, allowedHosts } = homePaths();
    const hosts = readHostsFile(allowedHosts);
    const h = normaliseHost(host);
    if (hosts.includes(h)) {
      out(`${h} is already allowed`);
      return 0;
    }
    ensureHome(home);
    writeHostsFile(allowedHosts, [...hosts, h]);
    out(`added ${h}`);
    return 0;
  });
  cli.command('remove <host>', 'stop accepting <host> (only entries added with `add`)').action((host: string) => {
    const { allowedHosts } = homePaths();
    const hosts = readHostsFile(allowedHosts);
    const h = normaliseHost(host);
    if (!hosts.includes(h)) throw new CliError(`${h} is not in ${allowedHosts}`);
    writeHostsFile(allowedHosts, hosts.filter((x) => x !== h));
    out(`removed ${h}`);
    return 0;
  });
  cli.command('path', 'print the path of the allow-list file').action(() => {
    out(homePaths().allowedHosts);
    return 0;
  });
  return run(cli, args);
}
