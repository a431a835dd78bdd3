// $SVC_HOME and the files the service keeps there.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export interface HomePaths {
  home: string;
  configEnv: string;
  secretEnv: string;
  allowedHosts: string;
  sqliteDefault: string;
  tlsDir: string;
  /** Files of the running service's processes (each `--workers` process's metrics). */
  runDir: string;
}

export function homePaths(env: Record<string, string | undefined> = process.env): HomePaths {
  const home = resolve(env.SVC_HOME && env.SVC_HOME.trim() !== '' ? env.SVC_HOME : join(homedir(), '.svc'));
  return {
    home,
    configEnv: join(home, 'config.env'),
    secretEnv: join(home, 'secret.env'),
    allowedHosts: join(home, 'allowed-hosts'),
    sqliteDefault: join(home, 'svc.db'),
    tlsDir: join(home, 'tls'),
    runDir: join(home, 'run'),
  };
}
