// Drives the compiled dist/svc (SVC_TEST_BINARY) as a user would: separate
// processes, real ports, exit codes and output.
import type { Subprocess } from 'bun';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './home.ts';

export const binaryPath = (): string => {
  const path = process.env.SVC_TEST_BINARY ?? join(import.meta.dir, '../../dist/svc');
  if (!existsSync(path)) throw new Error(`${path} does not exist: run \`bun build.ts\` (scripts/test does)`);
  return path;
};

/** A clean environment: nothing of the developer's leaks in. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const home = tempDir('svc-home-');
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, SVC_HOME: join(home, '.svc'), SVC_LOG_LEVEL: 'info', ...extra };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runSvc(args: string[], env: Record<string, string>, options: { cwd?: string; stdin?: string; bin?: string } = {}): Promise<RunResult> {
  const proc = Bun.spawn([options.bin ?? binaryPath(), ...args], {
    env,
    cwd: options.cwd,
    stdin: options.stdin !== undefined ? new TextEncoder().encode(options.stdin) : 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

export interface RunningSvc {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  url: string;
  port: number;
  /** Everything written to stderr so far. */
  stderr(): string;
  stdout(): string;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

async function collect(stream: ReadableStream<Uint8Array>, into: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    into.text += decoder.decode(value, { stream: true });
  }
}

/** Starts `svc serve` (default --port 0) and waits for its "serving" line. */
export async function startSvc(env: Record<string, string>, args: string[] = [], options: { cwd?: string; bin?: string } = {}): Promise<RunningSvc> {
  const serveArgs = args.includes('--port') ? args : [...args, '--port', '0'];
  const proc = Bun.spawn([options.bin ?? binaryPath(), 'serve', ...serveArgs], {
    env,
    cwd: options.cwd,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const err = { text: '' };
  const out = { text: '' };
  void collect(proc.stderr, err);
  void collect(proc.stdout, out);
  const deadline = Date.now() + 15_000;
  let match: RegExpExecArray | null = null;
  while (!(match = /serving (https?:\/\/[^\s]+)/.exec(err.text))) {
    if (proc.exitCode !== null) throw new Error(`svc serve exited with ${proc.exitCode}:\n${err.text}\n${out.text}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`svc serve did not start:\n${err.text}\n${out.text}`);
    }
    await Bun.sleep(20);
  }
  const url = match[1]!;
  const running: RunningSvc = {
    proc,
    url,
    port: Number(new URL(url).port),
    stderr: () => err.text,
    stdout: () => out.text,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null) proc.kill(signal);
      return proc.exited;
    },
  };
  process.on('exit', () => proc.kill('SIGKILL'));
  return running;
}

/** Resolves when `check()` is true, polling; fails after `ms`. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}
