// Shared set-up of the agent benchmarks: a fresh $SVC_HOME (and a fresh
// PostgreSQL database with --pg), a project and agents minted through the
// service layer, the compiled binary started on a free port, and /proc
// readings of its memory and CPU time.
import { readdirSync, readFileSync } from 'node:fs';
import { mintAgent } from '../../src/agents/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import { insertProject, TEST_ACTOR } from '../../tests/helpers/agents.ts';
import { cleanEnv, startSvc, type RunningSvc } from '../../tests/helpers/binary.ts';
import { freshDatabase } from '../../tests/helpers/postgres.ts';
import { TestAgent } from '../../tests/helpers/test-agent.ts';

export const usePostgres = process.argv.includes('--pg');
export const dialectName = usePostgres ? 'postgres' : 'sqlite';

export interface Bench {
  env: Record<string, string>;
  dropDatabase: () => Promise<void>;
}

/** A fresh home (and PostgreSQL database with --pg; admin URL from SVC_TEST_PG_URL). */
export async function freshBench(extra: Record<string, string> = {}): Promise<Bench> {
  setLogLevel('silent');
  const pg = usePostgres ? await freshDatabase() : null;
  const env = cleanEnv({ SVC_LOG_LEVEL: 'warn', ...(pg ? { SVC_DATABASE_URL: pg.url, SVC_DATABASE_POOL_SIZE: '20' } : {}), ...extra });
  return { env, dropDatabase: async () => pg?.drop() };
}

/** Migrates, inserts a project and mints `n` agents; returns test agents pointed at `baseUrl` later. */
export async function seedAgents(env: Record<string, string>, n: number): Promise<{ projectId: string; agents: Omit<ConstructorParameters<typeof TestAgent>[0], 'baseUrl'>[] }> {
  const { loaded } = loadConfigMintingSecrets({ env });
  const db = openConfiguredDatabase(loaded);
  await upgrade(db);
  const ctx = createContext(loaded, db);
  const { id: projectId } = await insertProject(db, 'bench');
  const agents = [];
  for (let i = 0; i < n; i++) {
    const m = await mintAgent(ctx, projectId, `bench-${i}`, TEST_ACTOR);
    agents.push({ token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId });
  }
  await db.close();
  return { projectId, agents };
}

export const startServer = (env: Record<string, string>, workers = 1): Promise<RunningSvc> => startSvc(env, ['--host', '127.0.0.1', '--workers', String(workers)]);

const TICKS_PER_SECOND = 100;

function readStat(pid: number): { ppid: number; ticks: number; rssKb: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state ppid ... utime (14th field) stime (15th).
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) };
  } catch {
    return null;
  }
}

/** Resident memory (MB) and CPU seconds used so far by a process and its worker processes. */
export function procStats(pid: number): { rssMb: number; cpuSeconds: number } {
  const pids = [pid, ...readdirSync('/proc').filter((d) => /^\d+$/.test(d) && readStat(Number(d))?.ppid === pid).map(Number)];
  let ticks = 0;
  let rssKb = 0;
  for (const p of pids) {
    const s = readStat(p);
    if (!s) continue;
    ticks += s.ticks;
    rssKb += s.rssKb;
  }
  return { rssMb: rssKb / 1024, cpuSeconds: ticks / TICKS_PER_SECOND };
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** CPU seconds used so far by each thread of a process, summed per thread name
 * (the event loop carries the executable's name; JavaScriptCore names its JIT
 * and GC threads, Bun its worker threads). */
export function threadCpu(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** What each thread name used between two threadCpu readings (seconds; idle names left out). */
export function threadCpuSpent(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of Object.entries(after)) {
    const spent = Number((s - (before[name] ?? 0)).toFixed(2));
    if (spent > 0) out[name] = spent;
  }
  return out;
}
