// Temporary $SVC_HOME directories for tests and benches. `bun test` fires no process exit event, so
// its runs remove them through the preload tests/helpers/cleanup.ts; plain `bun` scripts (bench/) on exit.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
process.on('exit', removeTempDirs);

export function tempDir(prefix = 'svc-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
