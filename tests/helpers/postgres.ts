// PostgreSQL for tests. scripts/test starts one shared server and exports
// SVC_TEST_PG_URL (an admin URL); each test file gets a database of its own.
// Tests that stop the server start a private one with startPostgres().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

export const sharedAdminUrl = (): string | undefined => process.env.SVC_TEST_PG_URL;

/** Creates a fresh database on the shared server; returns its URL and a drop(). */
export async function freshDatabase(adminUrl = sharedAdminUrl()): Promise<{ url: string; drop(): Promise<void> }> {
  if (!adminUrl) throw new Error('SVC_TEST_PG_URL is not set: run the suite through scripts/test (it starts PostgreSQL)');
  const name = `svc_test_${crypto.randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

function pgBin(tool: string): string {
  const dir = process.env.SVC_TEST_PG_BIN;
  if (!dir) throw new Error('SVC_TEST_PG_BIN is not set: run the suite through scripts/test');
  return join(dir, tool);
}

/** Runs a PostgreSQL tool, as the unprivileged user when we are root (initdb refuses root). */
function pgRun(args: string[]): void {
  const user = process.env.SVC_TEST_PG_USER;
  const argv = user && process.getuid?.() === 0 ? ['runuser', '-u', user, '--', ...args] : args;
  const r = Bun.spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`${args[0]} failed: ${r.stderr.toString()}${r.stdout.toString()}`);
}

export interface PrivatePostgres {
  url: string;
  stop(): void;
  start(): void;
  /** Stops the server (if running) and removes its files. */
  destroy(): void;
}

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A private PostgreSQL server in a temp directory (for tests that stop it). */
export function startPostgres(): PrivatePostgres {
  const port = freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  const user = process.env.SVC_TEST_PG_USER;
  if (user && process.getuid?.() === 0) Bun.spawnSync(['chown', '-R', user, dir]);
  const data = join(dir, 'data');
  pgRun([pgBin('initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const start = () => pgRun([pgBin('pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  const stop = () => pgRun([pgBin('pg_ctl'), '-D', data, '-m', 'fast', '-w', 'stop']);
  start();
  const destroy = () => {
    try {
      pgRun([pgBin('pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* already stopped */
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop, start, destroy };
}
