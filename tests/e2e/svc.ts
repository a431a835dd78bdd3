// Starts dist/svc the way a user does, from an empty $SVC_HOME on a free port, and reads the first-boot setup
// link from its stderr. (Playwright runs on Node, so this is a small Node twin of tests/helpers/binary.ts.)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Svc {
  url: string;
  setupUrl: string;
  home: string;
  /** Everything svc wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

/** `env`: more settings for this installation (SVC_* variables). */
export async function startSvc(extraEnv: Record<string, string> = {}): Promise<Svc> {
  const binary = process.env.SVC_TEST_BINARY ?? join(root, 'dist/svc');
  if (!existsSync(binary)) throw new Error(`${binary} does not exist: run \`bun build.ts\` first`);
  const home = mkdtempSync(join(tmpdir(), 'svc-e2e-'));
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    SVC_HOME: join(home, '.svc'),
    // Cheap password hashing and no login delay: the suite signs in many times.
    SVC_ARGON2_MEMORY_KIB: '8192',
    SVC_ARGON2_TIME_COST: '1',
    SVC_ARGON2_PARALLELISM: '1',
    SVC_LOGIN_MIN_DURATION_MS: '0',
    ...extraEnv,
  };
  const proc: ChildProcess = spawn(binary, ['serve', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  // The JSON log goes to a file beside the home, for reading after a failure.
  proc.stdout!.pipe(createWriteStream(join(home, 'stdout.log')));
  let err = '';
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const found = await new Promise<{ url: string; setupUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`svc did not print its setup link:\n${err}`)), 20_000);
    const check = () => {
      const url = /serving (https?:\/\/\S+)/.exec(err)?.[1];
      const setup = /(https?:\/\/\S+\/setup\?token=\S+)/.exec(err)?.[1];
      if (url && setup) done(null, { url, setupUrl: setup });
    };
    const onExit = () => done(new Error(`svc exited early:\n${err}`));
    function done(e: Error | null, value?: { url: string; setupUrl: string }) {
      clearTimeout(timer);
      proc.stderr!.off('data', check);
      proc.off('exit', onExit);
      if (e) reject(e);
      else resolve(value!);
    }
    proc.stderr!.on('data', check);
    proc.once('exit', onExit);
  });
  return {
    ...found,
    home,
    stderr: () => err,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Moves every session's MFA verification into the past, as if SVC_MFA_VERIFICATION_TTL_SECONDS had gone by:
 * the next fresh-MFA action then gets the server's real 403 mfa_reverify_required. Uses Bun's SQLite (Bun is a
 * dev dependency) on the live database; SQLite's locking keeps the running svc safe. */
export function ageMfaVerifications(svc: Svc): void {
  const bun = join(root, 'node_modules/.bin/bun');
  const script = `
    import { Database } from 'bun:sqlite';
    const db = new Database(process.env.SVC_DB);
    db.run('PRAGMA busy_timeout = 5000');
    db.run("UPDATE sessions SET mfa_verified_at = '2000-01-01T00:00:00.000000+00:00' WHERE mfa_verified_at IS NOT NULL");
  `;
  const r = spawnSync(bun, ['-e', script], {
    env: { PATH: process.env.PATH ?? '', SVC_DB: join(svc.home, '.svc/svc.db') },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`could not age the MFA verifications: ${r.stderr}`);
}
