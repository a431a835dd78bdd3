// svc's own scheduler with 10,000 schedules (issue 18).
//   bun bench/scheduler.ts [schedules=10000] [seconds=180] [--burst=200] [--spread=600] [--pg]
//
// The schedules, all owned by svc's scheduler (`svc-scheduler`), in one project:
//   --burst of them `* * * * *` (each minute, all at its first second: the
//     burst every crontab-style fleet has at the top of the minute), in five zones;
//   --spread of them every minute at second i mod 60 (six-field cron);
//   the rest, split evenly: daily cron at a random time in one of 12 zones (DST
//     zones among them), interval schedules of 1 to 24 hours, clocked instants
//     within 30 days, and solar events at random places. Some of the daily
//     ones come due within the window too; the others make up the set the
//     scheduler computes next runs for and holds in memory.
//
// 1. Next-run computation, in this process: nextRunAfter() (the code the
//    scheduler runs) for every schedule from now, five passes; the median pass
//    and, per kind, the cost of one computation.
// 2. The real thing: the schedules are created through the service layer on a
//    fresh database (SQLite, or PostgreSQL with --pg), dist/svc serves with its
//    scheduler endpoint (mutual TLS) on, `svc mint-scheduler-cert` mints the
//    client certificate, and one `dist/svc scheduler serve` process runs for
//    `seconds`. Measured: how long it takes from its start until it holds every
//    schedule (first sync: the list over mutual TLS and a next run for each),
//    its RSS (sampled each second: after the first sync and the maximum while
//    firing), and every fire the service stored (schedule_fires, action
//    schedule.fire): its jitter, fired_at (the service's clock, when the fire
//    was stored) minus scheduled_for, and whether any run was fired twice.
//    Jitter counts the runs due once the scheduler held every schedule; runs
//    that came due while it was starting (fired late by design, as on time
//    when at most 2 s late) are reported apart as due_during_startup.
//    No agent is connected: the fires stay buffered, which is the scheduler's
//    and the service's whole part of a fire (delivery to agents is measured by
//    bench/command-latency.ts).
import { readFileSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import { createSchedule } from '../src/schedules/service.ts';
import { tablesOf } from '../src/schedules/tables.ts';
import { nextRunAfter } from '../src/schedules/next-run.ts';
import { loadConfigMintingSecrets } from '../src/config/secrets.ts';
import { upgrade } from '../src/db/migrate.ts';
import { nowMicros, parseIsoMicros } from '../src/lib/clock.ts';
import { createContext, openConfiguredDatabase } from '../src/server/compose.ts';
import { insertProject, TEST_ACTOR } from '../tests/helpers/agents.ts';
import { binaryPath, runSvc, startSvc } from '../tests/helpers/binary.ts';
import { tempDir } from '../tests/helpers/home.ts';
import { freshBench, percentile, procStats, usePostgres } from './lib/setup.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const COUNT = Number(args[0] ?? 10_000);
const SECONDS = Number(args[1] ?? 180);
const BURST = Number(flag('burst', '200'));
const SPREAD = Number(flag('spread', '600'));

// A fixed seed: every run builds the same set.
let seed = 18;
const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney', 'America/Los_Angeles', 'Asia/Kolkata', 'Europe/London', 'America/Sao_Paulo', 'Pacific/Auckland', 'Africa/Cairo', 'Asia/Kathmandu'];
const SOLAR = ['sunrise', 'sunset', 'solar_noon', 'dawn_civil', 'dusk_civil', 'dawn_nautical', 'dusk_nautical'];

interface Def {
  name: string;
  kind: 'cron' | 'interval' | 'clocked' | 'solar';
  expression: string;
  timezone: string;
}

function definitions(): Def[] {
  const defs: Def[] = [];
  for (let i = 0; i < BURST; i++) defs.push({ name: `burst-${i}`, kind: 'cron', expression: '* * * * *', timezone: ZONES[i % 5]! });
  for (let i = 0; i < SPREAD; i++) defs.push({ name: `spread-${i}`, kind: 'cron', expression: `${i % 60} * * * * *`, timezone: 'UTC' });
  const now = Date.now();
  for (let i = 0; defs.length < COUNT; i++) {
    const name = `rest-${i}`;
    switch (i % 4) {
      case 0:
        defs.push({ name, kind: 'cron', expression: `${Math.floor(rand() * 60)} ${Math.floor(rand() * 24)} * * ${pick(['*', '1-5', '0,6'])}`, timezone: pick(ZONES) });
        break;
      case 1:
        defs.push({ name, kind: 'interval', expression: String(3600 * (1 + Math.floor(rand() * 24))), timezone: 'UTC' });
        break;
      case 2:
        defs.push({ name, kind: 'clocked', expression: new Date(now + 3_600_000 + Math.floor(rand() * 30 * 86_400_000)).toISOString(), timezone: 'UTC' });
        break;
      default:
        defs.push({ name, kind: 'solar', expression: `${pick(SOLAR)} ${(rand() * 120 - 60).toFixed(4)} ${(rand() * 360 - 180).toFixed(4)}`, timezone: 'UTC' });
    }
  }
  return defs;
}

const round = (x: number, d = 1) => Number(x.toFixed(d));
const defs = definitions();
const load0 = loadavg();

// --- 1. next-run computation ------------------------------------------------------------------
const passes: number[] = [];
const perKind: Record<string, number[]> = {};
for (let pass = 0; pass < 5; pass++) {
  const from = nowMicros();
  const t0 = performance.now();
  for (const d of defs) {
    const k0 = pass === 4 ? performance.now() : 0;
    nextRunAfter(d, from);
    if (pass === 4) (perKind[d.kind] ??= []).push((performance.now() - k0) * 1000);
  }
  passes.push(performance.now() - t0);
}
const sortedPasses = [...passes].sort((a, b) => a - b);
const kinds = Object.fromEntries(
  Object.entries(perKind).map(([k, us]) => {
    const s = us.sort((a, b) => a - b);
    return [k, { n: s.length, median_us: round(percentile(s, 50)), p99_us: round(percentile(s, 99)), max_us: round(s.at(-1)!) }];
  }),
);
console.error(`next runs of ${defs.length} schedules: median pass ${sortedPasses[2]!.toFixed(1)} ms`);

// --- 2. the scheduler process against dist/svc -------------------------------------------------
const bench = await freshBench({
  SVC_SCHEDULER_GRPC_ENABLED: 'true',
  SVC_SCHEDULER_GRPC_BIND_HOST: '127.0.0.1',
  SVC_SCHEDULER_GRPC_BIND_PORT: '0',
  SVC_SCHEDULER_GRPC_ALLOWED_CNS: 'bench-scheduler',
});
const env = bench.env;
const { loaded } = loadConfigMintingSecrets({ env });
const db = openConfiguredDatabase(loaded);
await upgrade(db);
const ctx = createContext(loaded, db);
const project = await insertProject(db, 'bench');
const tSeed = performance.now();
for (let i = 0; i < defs.length; i += 50) {
  await Promise.all(
    defs.slice(i, i + 50).map((d) => createSchedule(ctx, project.id, { name: d.name, engine: 'celery', kind: d.kind, expression: d.expression, timezone: d.timezone, task_name: 'bench.tick' }, TEST_ACTOR)),
  );
}
console.error(`created ${defs.length} schedules in ${((performance.now() - tSeed) / 1000).toFixed(1)} s`);
await db.close();

const svc = await startSvc(env, ['--host', '127.0.0.1']);
const endpoint = /scheduler endpoint (https:\/\/\S+)/.exec(svc.stderr())?.[1];
if (!endpoint) throw new Error(`no scheduler endpoint in the log:\n${svc.stderr()}`);
const certs = tempDir('svc-bench-certs-');
const minted = await runSvc(['mint-scheduler-cert', '--name', 'bench-scheduler', '--out-dir', certs], env);
if (minted.code !== 0) throw new Error(minted.stderr);

const schedulerEnv = {
  PATH: process.env.PATH!,
  HOME: env.HOME!,
  SVC_HOME: tempDir('svc-bench-scheduler-'),
  SVC_LOG_LEVEL: 'warn',
  SVC_SCHEDULER_BRAIN_GRPC_URL: endpoint,
  SVC_SCHEDULER_TLS_CERT: join(certs, 'bench-scheduler.crt'),
  SVC_SCHEDULER_TLS_KEY: join(certs, 'bench-scheduler.key'),
  SVC_SCHEDULER_TLS_CA: join(env.SVC_HOME!, 'scheduler-pki/ca.crt'),
  SVC_SCHEDULER_INSTANCE_ID: 'bench',
};
const infoPort = (() => {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
})();
const tStart = performance.now();
const scheduler = Bun.spawn([binaryPath(), 'scheduler', 'serve', '--info-port', String(infoPort)], { env: schedulerEnv, stdout: 'ignore', stderr: 'pipe' });
const info = async (): Promise<any | null> => {
  try {
    return await (await fetch(`http://127.0.0.1:${infoPort}/info`, { signal: AbortSignal.timeout(2000) })).json();
  } catch {
    return null;
  }
};
let holding: number | null = null;
/** When it was seen holding every schedule (µs, this host's clock, which the service shares). */
let heldAtUs = 0;
let firstInfo: any = null;
while (holding === null) {
  if (scheduler.exitCode !== null) throw new Error(`svc scheduler exited ${scheduler.exitCode}: ${await new Response(scheduler.stderr).text()}`);
  const i = await info();
  if (i && i.schedules === defs.length) {
    holding = performance.now() - tStart;
    heldAtUs = nowMicros();
    firstInfo = i;
  } else await Bun.sleep(20);
  if (performance.now() - tStart > 120_000) throw new Error(`the scheduler holds ${i?.schedules} schedules after 120 s`);
}
const rssAfterSync = procStats(scheduler.pid).rssMb;
console.error(`the scheduler holds ${defs.length} schedules after ${holding.toFixed(0)} ms; RSS ${rssAfterSync.toFixed(1)} MB; firing for ${SECONDS} s`);

const rss: number[] = [];
const svcRss: number[] = [];
const cpu0 = procStats(scheduler.pid).cpuSeconds;
const svcCpu0 = procStats(svc.proc.pid).cpuSeconds;
const until = Date.now() + SECONDS * 1000;
while (Date.now() < until) {
  await Bun.sleep(1000);
  rss.push(procStats(scheduler.pid).rssMb);
  svcRss.push(procStats(svc.proc.pid).rssMb);
}
const last = await info();
const cpu = procStats(scheduler.pid).cpuSeconds - cpu0;
const svcCpu = procStats(svc.proc.pid).cpuSeconds - svcCpu0;
const endUs = nowMicros();
scheduler.kill('SIGTERM');
await scheduler.exited;
await svc.stop();
const load1 = loadavg();

// Every fire the service stored while the scheduler ran, and the schedules' names (fire rows carry the id).
const db2 = openConfiguredDatabase(loadConfigMintingSecrets({ env }).loaded);
const stored = await db2.tx(async (tx) => {
  const { schedules, scheduleFires } = tablesOf(tx);
  return {
    fires: (await tx.q.select().from(scheduleFires)).filter((f) => f.action === 'schedule.fire'),
    names: await tx.q.select({ id: schedules.id, name: schedules.name }).from(schedules),
  };
});
await db2.close();
await bench.dropDatabase();
const fires = stored.fires;
const nameOf = new Map(stored.names.map((s) => [s.id, s.name]));
const jitterMs: number[] = [];
const byGroup: Record<string, number[]> = { burst: [], spread: [], rest: [] };
/** Runs that came due while the scheduler was starting (before it held the schedules): it fires those
 * as on time when at most 2 s late (runner.ts), so they measure its start-up, not its timer. */
const startupMs: number[] = [];
const runs = new Set<string>();
let twice = 0;
for (const f of fires) {
  const key = `${f.schedule_id}|${f.scheduled_for}`;
  if (runs.has(key)) twice++;
  runs.add(key);
  const ms = (parseIsoMicros(f.fired_at)! - parseIsoMicros(f.scheduled_for)!) / 1000;
  if (parseIsoMicros(f.scheduled_for)! < heldAtUs) {
    startupMs.push(ms);
    continue;
  }
  jitterMs.push(ms);
  byGroup[(nameOf.get(f.schedule_id) ?? 'rest').split('-')[0]!]?.push(ms);
}
// The latest fires, with when they were due: a tail that sits on the minute's first second is the burst.
const slowest = fires
  .filter((f) => parseIsoMicros(f.scheduled_for)! >= heldAtUs)
  .map((f) => ({ name: nameOf.get(f.schedule_id), scheduled_for: f.scheduled_for, late_ms: round((parseIsoMicros(f.fired_at)! - parseIsoMicros(f.scheduled_for)!) / 1000) }))
  .sort((a, b) => b.late_ms - a.late_ms)
  .slice(0, 12);
// Runs due while the scheduler held every schedule that were not fired: none may be missing.
const expectedBurst = BURST * (Math.floor((endUs - 1e6) / 60e6) - Math.ceil(heldAtUs / 60e6) + 1);
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return s.length === 0 ? { n: 0 } : { n: s.length, p50_ms: round(percentile(s, 50)), p99_ms: round(percentile(s, 99)), max_ms: round(s.at(-1)!), min_ms: round(s[0]!) };
};
const result = {
  schedules: defs.length,
  mix: { burst_every_minute: BURST, spread_every_minute: SPREAD, rest: defs.length - BURST - SPREAD },
  database: usePostgres ? 'postgres' : 'sqlite',
  next_run: { median_pass_ms: round(sortedPasses[2]!), passes_ms: passes.map((p) => round(p)), per_schedule_us: round((sortedPasses[2]! * 1000) / defs.length, 2), kinds },
  scheduler: {
    holds_all_after_ms: Math.round(holding),
    rss_after_sync_mb: round(rssAfterSync),
    rss_while_firing_max_mb: round(Math.max(...rss)),
    cpu_seconds_while_firing: round(cpu, 2),
    fires_sent: last?.fires_sent,
    fires_accepted: last?.fires_accepted,
    duplicates: last?.duplicates,
    fire_errors: last?.fire_errors,
    syncs: last?.syncs,
    first_info_next_due_at: firstInfo?.next_due_at,
  },
  service: { rss_max_mb: round(Math.max(...svcRss)), cpu_seconds: round(svcCpu, 2) },
  fires: { ...summary(jitterMs), fired_twice: twice, due_during_startup: summary(startupMs), burst_runs_expected_at_least: expectedBurst, by_group: Object.fromEntries(Object.entries(byGroup).map(([k, v]) => [k, summary(v)])), slowest },
  window_seconds: SECONDS,
  loadavg_before: load0.map((x) => round(x, 2)),
  loadavg_after: load1.map((x) => round(x, 2)),
  cpus: cpus().length,
  bun: Bun.version,
  svc: readFileSync(binaryPath()).length > 0 ? 'dist/svc' : '',
};
console.log(JSON.stringify(result, null, 2));
process.exit(0);
