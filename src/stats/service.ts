// Statistics from the aggregates (never from raw events or task rows): a
// project's figures over a window, trends per bucket, the home summary across
// the projects a caller sees, and failure groups. docs/tasks-stats.md says what
// each figure means.
import type { Principal } from '../auth/principal.ts';
import { storedText } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';
import { notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { listProjects } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import { percentile } from './histogram.ts';
import { retentionCutoffs, type StatsRetention } from './jobs.ts';
import { bucketIso } from './rollup.ts';
import {
  BUCKETS,
  WINDOWS,
  type AttentionItem,
  type BucketName,
  type FailedTaskPage,
  type FailureGroups,
  type HomeSummary,
  type ProjectStats,
  type Trends,
  type WindowName,
} from './schemas.ts';
import {
  agentsOf,
  commandCounts,
  emptyTotals,
  failedTasksPage,
  failureGroupsByKey,
  groupNameCounts,
  groupSeries,
  HOUR,
  lastActivity,
  MINUTE,
  nameCounts,
  projectTotals,
  seriesTotals,
  workerCounts,
  type AgentFacts,
  type CommandFacts,
  type NameCounts,
  type Part,
  type Totals,
} from './store.ts';

export { failureGroupOf, groupKeyOf, normaliseMessage } from './normalise.ts';

/** Thresholds of the attention list and the health badge (docs/tasks-stats.md). */
export const ATTENTION = {
  /** A task name is failing with at least this many failures in the window ... */
  minFailures: 3,
  /** ... and at least this failure rate. */
  failingRate: 0.05,
  /** Failure rate above which an item is critical (and a failing task is listed whatever its trend). */
  criticalRate: 0.2,
  /** How much the second half's rate must exceed (or fall short of) the first half's to be rising (falling). */
  trendDelta: 0.05,
  /** A project's own failure rate counts from this many finished tasks. */
  projectMinFinished: 20,
  /** Stuck commands from which the item is critical. */
  criticalStuck: 10,
  /** Offline agents named per project (the item's count has them all). */
  agentsNamed: 5,
  /** Failing task names per project in the attention list and the stats' failing_tasks. */
  failingNamed: 20,
};

/** A worker counts as online while its state is online and it was heard from this recently. */
export const WORKER_FRESH_SECONDS = 300;
/** Most points a trend may have. */
export const MAX_POINTS = 1440;
const AUTO_BUCKET: Record<WindowName, BucketName> = { '1h': '1m', '6h': '5m', '24h': '15m', '7d': '1h', '30d': '1d' };

const nowSeconds = () => Math.floor(nowMicros() / 1_000_000);
const floorTo = (t: number, step: number) => Math.floor(t / step) * step;
const ceilTo = (t: number, step: number) => Math.ceil(t / step) * step;

/** A window's range: to the minute (ending with the current minute) up to 24 h, to the hour beyond. */
export function windowRange(window: WindowName, now = nowSeconds()): { start: number; end: number } {
  const step = WINDOWS[window] <= WINDOWS['24h'] ? MINUTE : HOUR;
  const end = floorTo(now, step) + step;
  return { start: end - WINDOWS[window], end };
}

/** The rows covering [start, end): minute rows at the ragged ends, hour rows for the whole hours between. */
export function partsOf(start: number, end: number): Part[] {
  if (start % HOUR === 0 && end % HOUR === 0) return [{ span: HOUR, from: start, to: end }];
  const hs = ceilTo(start, HOUR);
  const he = floorTo(end, HOUR);
  if (hs >= he) return [{ span: MINUTE, from: start, to: end }];
  const parts: Part[] = [];
  if (start < hs) parts.push({ span: MINUTE, from: start, to: hs });
  parts.push({ span: HOUR, from: hs, to: he });
  if (he < end) parts.push({ span: MINUTE, from: he, to: end });
  return parts;
}

/** What an answer reading `parts` says of retention: `kept_since`, from when the rows it reads are kept
 * (the latest cutoff of their spans), and `partial` when its window starts before that. Only retention
 * counts: a project whose first task came after the window's start has everything there is. */
export function retentionOf(config: StatsRetention, parts: readonly Part[], now = nowSeconds()): { partial: boolean; kept_since: string } {
  const cutoff = retentionCutoffs(config, now);
  const kept = Math.max(...parts.map((p) => cutoff[p.span]));
  return { partial: Math.min(...parts.map((p) => p.from)) < kept, kept_since: bucketIso(kept) };
}

const rate = (failed: number, succeeded: number): number | null => (failed + succeeded === 0 ? null : round4(failed / (failed + succeeded)));
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
const round2 = (x: number) => Math.round(x * 100) / 100;
const finishedOf = (t: Totals) => t.succeeded + t.failed + t.revoked + t.rejected;
const stateCounts = (t: Totals) => ({ received: t.received, started: t.started, succeeded: t.succeeded, failed: t.failed, retried: t.retried, revoked: t.revoked, rejected: t.rejected });
const runtimeOf = (t: Totals) => ({
  count: t.runtime_count,
  mean: t.runtime_count === 0 ? null : round2(t.runtime_sum_ms / t.runtime_count),
  p50: percentile(t.bins, 0.5, t.runtime_count === 0 ? null : t.runtime_max_ms),
  p95: percentile(t.bins, 0.95, t.runtime_count === 0 ? null : t.runtime_max_ms),
  max: t.runtime_count === 0 ? null : t.runtime_max_ms,
});

// --- one or many projects' summaries -------------------------------------------------

interface ProjectRef {
  id: string;
  slug: string;
  name: string;
}

interface Summary {
  totals: Totals;
  agents: { online: number; offline: number; unknown: number; total: number };
  offlineAgents: AgentFacts[];
  workers: { online: number; total: number };
  commands: CommandFacts;
  failing: FailingTaskOut[];
  lastActivity: string | null;
  health: 'offline' | 'degraded' | 'idle' | 'healthy';
  attention: AttentionItem[];
}

interface FailingTaskOut {
  task_name: string;
  failed: number;
  finished: number;
  failure_rate: number | null;
  first_half_failure_rate: number | null;
  second_half_failure_rate: number | null;
  trend: 'rising' | 'steady' | 'falling' | null;
}

const NO_COMMANDS: CommandFacts = { pending: 0, dispatched: 0, stuck: 0, completed: 0, failed: 0, timeout: 0 };

/** Failing task names of one project, worst first (rising, then by rate and failures). */
function failingTasks(first: NameCounts[], second: NameCounts[]): FailingTaskOut[] {
  const names = new Map<string, { a: NameCounts | null; b: NameCounts | null }>();
  for (const r of first) names.set(r.task_name, { a: r, b: null });
  for (const r of second) {
    const n = names.get(r.task_name);
    if (n) n.b = r;
    else names.set(r.task_name, { a: null, b: r });
  }
  const out: FailingTaskOut[] = [];
  for (const [task_name, { a, b }] of names) {
    const failed = (a?.failed ?? 0) + (b?.failed ?? 0);
    const succeeded = (a?.succeeded ?? 0) + (b?.succeeded ?? 0);
    const r = rate(failed, succeeded);
    if (failed < ATTENTION.minFailures || r === null || r < ATTENTION.failingRate) continue;
    const r1 = a ? rate(a.failed, a.succeeded) : null;
    const r2 = b ? rate(b.failed, b.succeeded) : null;
    let trend: FailingTaskOut['trend'] = 'steady';
    if (r2 !== null && (r1 === null ? r2 > 0 : r2 - r1 >= ATTENTION.trendDelta) && (b?.failed ?? 0) > 0) trend = 'rising';
    else if (r1 !== null && (r2 === null || r1 - r2 >= ATTENTION.trendDelta)) trend = 'falling';
    out.push({ task_name, failed, finished: failed + succeeded, failure_rate: r, first_half_failure_rate: r1, second_half_failure_rate: r2, trend });
  }
  const order = (x: FailingTaskOut) => (x.trend === 'rising' ? 0 : 1);
  return out.sort((x, y) => order(x) - order(y) || y.failure_rate! - x.failure_rate! || y.failed - x.failed || (x.task_name < y.task_name ? -1 : 1));
}

const item = (p: ProjectRef | null, fields: Partial<AttentionItem> & Pick<AttentionItem, 'kind' | 'severity' | 'message'>): AttentionItem => ({
  project_id: p?.id ?? null,
  project_slug: p?.slug ?? null,
  project_name: p?.name ?? null,
  task_name: null,
  agent_id: null,
  job: null,
  count: null,
  failure_rate: null,
  trend: null,
  ...fields,
});

const SEVERITY = { critical: 0, warning: 1 } as const;
const KIND_ORDER: Record<string, number> = { agent_offline: 0, high_failure_rate: 1, failing_task: 2, stuck_commands: 3, background_job_failing: 4 };
export const byUrgency = (a: AttentionItem, b: AttentionItem) => SEVERITY[a.severity] - SEVERITY[b.severity] || KIND_ORDER[a.kind]! - KIND_ORDER[b.kind]!;

function attentionOf(p: ProjectRef, s: Omit<Summary, 'attention' | 'health'>): AttentionItem[] {
  const out: AttentionItem[] = [];
  const pct = (r: number) => `${(r * 100).toFixed(1)} %`;
  for (const f of s.failing) {
    if (f.trend !== 'rising' && f.failure_rate! <= ATTENTION.criticalRate) continue;
    out.push(
      item(p, {
        kind: 'failing_task',
        severity: f.failure_rate! > ATTENTION.criticalRate ? 'critical' : 'warning',
        message: `${f.task_name}: ${f.failed} of ${f.finished} failed (${pct(f.failure_rate!)})${f.trend === 'rising' ? ', rising' : ''}`,
        task_name: f.task_name,
        count: f.failed,
        failure_rate: f.failure_rate,
        trend: f.trend,
      }),
    );
  }
  const t = s.totals;
  const r = rate(t.failed, t.succeeded);
  if (r !== null && t.failed + t.succeeded >= ATTENTION.projectMinFinished && r > ATTENTION.failingRate) {
    out.push(
      item(p, {
        kind: 'high_failure_rate',
        severity: r > ATTENTION.criticalRate ? 'critical' : 'warning',
        message: `${p.slug}: ${t.failed} of ${t.failed + t.succeeded} tasks failed (${pct(r)})`,
        count: t.failed,
        failure_rate: r,
      }),
    );
  }
  const noneOnline = s.agents.total > 0 && s.agents.online === 0;
  for (const a of s.offlineAgents.slice(0, ATTENTION.agentsNamed)) {
    out.push(
      item(p, {
        kind: 'agent_offline',
        severity: noneOnline ? 'critical' : 'warning',
        message: `agent ${a.name} is offline${a.last_seen_at ? ` (last seen ${a.last_seen_at})` : ''}${s.offlineAgents.length > ATTENTION.agentsNamed ? `; ${s.offlineAgents.length} agents offline in all` : ''}`,
        agent_id: a.id,
        count: s.offlineAgents.length,
      }),
    );
  }
  // Agents minted and never connected (a new project, a token not yet installed): the project's health is
  // offline, and the list says why.
  if (noneOnline && s.offlineAgents.length === 0 && s.agents.unknown > 0) {
    out.push(
      item(p, {
        kind: 'agent_never_connected',
        severity: 'warning',
        message: s.agents.unknown === 1 ? 'its agent has never connected: start it with its token' : `none of its ${s.agents.unknown} agents has connected yet: start one with its token`,
        count: s.agents.unknown,
      }),
    );
  }
  if (s.commands.stuck > 0) {
    out.push(
      item(p, {
        kind: 'stuck_commands',
        severity: s.commands.stuck >= ATTENTION.criticalStuck ? 'critical' : 'warning',
        message: `${s.commands.stuck} command${s.commands.stuck === 1 ? ' is' : 's are'} pending or dispatched past their timeout`,
        count: s.commands.stuck,
      }),
    );
  }
  return out.sort(byUrgency);
}

function healthOf(s: Omit<Summary, 'attention' | 'health'>): Summary['health'] {
  const t = s.totals;
  const r = rate(t.failed, t.succeeded);
  if (s.agents.total > 0 && s.agents.online === 0) return 'offline';
  if ((r !== null && t.failed + t.succeeded >= ATTENTION.projectMinFinished && r > ATTENTION.failingRate) || s.commands.stuck > 0 || s.agents.offline > 0) return 'degraded';
  if (finishedOf(t) === 0 && s.workers.online === 0) return 'idle';
  return 'healthy';
}

/** The figures of `projects` over `window`, each with its attention items (read together, a few queries in all). */
async function summarise(
  ex: Executor,
  config: StatsRetention,
  projects: readonly ProjectRef[],
  window: WindowName,
): Promise<{ range: { start: number; end: number }; kept: ReturnType<typeof retentionOf>; summaries: Map<string, Summary> }> {
  const now = nowSeconds();
  const range = windowRange(window, now);
  const ids = projects.map((p) => p.id);
  const mid = range.start + WINDOWS[window] / 2;
  const parts = partsOf(range.start, range.end);
  const [totals, names, agents, workers, commands, active] = await Promise.all([
    projectTotals(ex, ids, parts),
    nameCounts(ex, ids, parts, mid),
    agentsOf(ex, ids),
    workerCounts(ex, ids, isoMicros((now - WORKER_FRESH_SECONDS) * 1_000_000)),
    commandCounts(ex, ids, isoMicros(nowMicros()), isoMicros(range.start * 1_000_000)),
    lastActivity(ex, ids),
  ]);
  const byProject = <T extends { project_id: string }>(rows: T[]) => {
    const m = new Map<string, T[]>();
    for (const r of rows) {
      const list = m.get(r.project_id);
      if (list) list.push(r);
      else m.set(r.project_id, [r]);
    }
    return m;
  };
  const agentsOfProject = byProject(agents);
  const namesOfProject = byProject(names);
  const summaries = new Map<string, Summary>();
  for (const p of projects) {
    const mine = agentsOfProject.get(p.id) ?? [];
    const named = namesOfProject.get(p.id) ?? [];
    const offlineAgents = mine.filter((a) => a.state === 'offline');
    const base = {
      totals: totals.get(p.id) ?? emptyTotals(),
      agents: {
        online: mine.filter((a) => a.state === 'online').length,
        offline: offlineAgents.length,
        unknown: mine.filter((a) => a.state !== 'online' && a.state !== 'offline').length,
        total: mine.length,
      },
      offlineAgents,
      workers: workers.get(p.id) ?? { online: 0, total: 0 },
      commands: commands.get(p.id) ?? NO_COMMANDS,
      failing: failingTasks(named.filter((r) => r.half === 0), named.filter((r) => r.half === 1)).slice(0, ATTENTION.failingNamed),
      lastActivity: active.has(p.id) ? bucketIso(active.get(p.id)!) : null,
    };
    summaries.set(p.id, { ...base, health: healthOf(base), attention: attentionOf(p, base) });
  }
  return { range, kept: retentionOf(config, parts, now), summaries };
}

/** Failing background jobs of this process (administrators only: job names are internal). */
function jobAttention(ctx: AppContext): AttentionItem[] {
  return ctx.jobs
    .all()
    .filter((j) => j.last_error !== null)
    .map((j) => item(null, { kind: 'background_job_failing', severity: 'warning', message: `background job ${j.name} failed on its last run (${j.last_finished_at ?? 'time unknown'})`, job: j.name }));
}

/** GET /projects/{slug}/stats. */
export async function projectStats(ctx: AppContext, who: Principal, project: ProjectRef, window: WindowName): Promise<ProjectStats> {
  const { range, kept, summaries } = await summarise(ctx.db, ctx.config, [project], window);
  const s = summaries.get(project.id)!;
  const t = s.totals;
  const finished = finishedOf(t);
  return {
    project: { id: project.id, slug: project.slug, name: project.name },
    window,
    since: bucketIso(range.start),
    until: bucketIso(range.end),
    ...kept,
    counts: stateCounts(t),
    finished,
    failure_rate: rate(t.failed, t.succeeded),
    throughput_per_minute: round2(finished / ((range.end - range.start) / 60)),
    runtime_ms: runtimeOf(t),
    agents: s.agents,
    workers: s.workers,
    commands: s.commands,
    failing_tasks: s.failing,
    last_activity_at: s.lastActivity,
    health: s.health,
    attention: [...s.attention, ...(who.user.is_admin ? jobAttention(ctx) : [])].sort(byUrgency),
  };
}

/** GET /home: the summary of every project the caller sees (members: theirs; administrators: all), attention first. */
export async function homeSummary(ctx: AppContext, who: Principal, window: WindowName): Promise<HomeSummary> {
  const visible = await listProjects(ctx, who, false);
  const { range, kept, summaries } = await summarise(ctx.db, ctx.config, visible, window);
  const minutes = (range.end - range.start) / 60;
  const attention: AttentionItem[] = [...visible.flatMap((p) => summaries.get(p.id)!.attention), ...(who.user.is_admin ? jobAttention(ctx) : [])].sort(byUrgency);
  const projects = visible.map((p) => {
    const s = summaries.get(p.id)!;
    const t = s.totals;
    const finished = finishedOf(t);
    return {
      id: p.id,
      slug: p.slug,
      name: p.name,
      role: p.role,
      health: s.health,
      finished,
      succeeded: t.succeeded,
      failed: t.failed,
      failure_rate: rate(t.failed, t.succeeded),
      throughput_per_minute: round2(finished / minutes),
      runtime_p95_ms: runtimeOf(t).p95,
      agents_online: s.agents.online,
      agents_total: s.agents.total,
      workers_online: s.workers.online,
      workers_total: s.workers.total,
      stuck_commands: s.commands.stuck,
      last_activity_at: s.lastActivity,
      attention_critical: s.attention.filter((a) => a.severity === 'critical').length,
      attention_warning: s.attention.filter((a) => a.severity === 'warning').length,
    };
  });
  // Attention first: projects with critical items, then warnings, then by failures and name.
  projects.sort((a, b) => b.attention_critical - a.attention_critical || b.attention_warning - a.attention_warning || b.failed - a.failed || (a.slug < b.slug ? -1 : 1));
  const sum = (f: (p: (typeof projects)[number]) => number) => projects.reduce((n, p) => n + f(p), 0);
  const succeeded = sum((p) => p.succeeded);
  const failed = sum((p) => p.failed);
  const finished = sum((p) => p.finished);
  return {
    window,
    since: bucketIso(range.start),
    until: bucketIso(range.end),
    ...kept,
    attention,
    totals: {
      projects: projects.length,
      finished,
      succeeded,
      failed,
      failure_rate: rate(failed, succeeded),
      throughput_per_minute: round2(finished / minutes),
      agents_online: sum((p) => p.agents_online),
      agents_total: sum((p) => p.agents_total),
      workers_online: sum((p) => p.workers_online),
      workers_total: sum((p) => p.workers_total),
      stuck_commands: sum((p) => p.stuck_commands),
    },
    projects,
  };
}

// --- trends ---------------------------------------------------------------------------

/** The bucket a request asks for, checked against its window (422 when it cannot be served). */
export function bucketFor(window: WindowName, bucket: BucketName | 'auto' | undefined, field = '/bucket'): { name: BucketName; seconds: number } {
  const name = !bucket || bucket === 'auto' ? AUTO_BUCKET[window] : bucket;
  const seconds = BUCKETS[name];
  const span = WINDOWS[window];
  const fail = (message: string) => validationFailed([{ location: 'query', path: field, message }]);
  if (seconds > span) throw fail(`a ${name} bucket is wider than the ${window} window`);
  if (span / seconds > MAX_POINTS) throw fail(`${window} in ${name} buckets is more than ${MAX_POINTS} points`);
  if (seconds < HOUR && span > WINDOWS['24h']) throw fail('buckets under an hour serve windows of up to 24h (minute statistics are kept for SVC_STATS_MINUTE_RETENTION_HOURS)');
  return { name, seconds };
}

/** The head every bucketed answer starts with. */
const bucketedHead = (config: StatsRetention, window: WindowName, bucket: { name: BucketName; seconds: number }, start: number, end: number, part: Part, now: number) => ({
  window,
  bucket: bucket.name,
  bucket_seconds: bucket.seconds,
  since: bucketIso(start),
  until: bucketIso(end),
  ...retentionOf(config, [part], now),
});

/** [start, end) of `count` buckets of `seconds`, the last holding now. */
function bucketRange(window: WindowName, seconds: number, now = nowSeconds()): { start: number; end: number; part: Part } {
  const end = floorTo(now, seconds) + seconds;
  const start = end - WINDOWS[window];
  return { start, end, part: { span: seconds < HOUR ? MINUTE : HOUR, from: start, to: end } };
}

/** Minutes a bucket's throughput is over: its width, but for the last one (still filling) the part gone by,
 * at least a minute (a day's bucket at 01:00 read as a whole day showed a 24th of the rate; a bucket a second
 * old would show a spike). */
const bucketMinutes = (bucketStart: number, seconds: number, now: number): number => Math.max(60, Math.min(seconds, now - bucketStart)) / 60;

/** GET /projects/{slug}/trends. */
export async function trends(ex: Executor, config: StatsRetention, projectId: string, q: { window?: WindowName; bucket?: BucketName | 'auto'; task_name?: string }): Promise<Trends> {
  const window = q.window ?? '24h';
  const bucket = bucketFor(window, q.bucket);
  const now = nowSeconds();
  const { start, end, part } = bucketRange(window, bucket.seconds, now);
  const count = (end - start) / bucket.seconds;
  const sums = await seriesTotals(ex, projectId, part, storedText(q.task_name ?? ''), bucket.seconds);
  const slots = Array.from({ length: count }, (_, i) => sums.get(i) ?? emptyTotals());
  return {
    ...bucketedHead(config, window, bucket, start, end, part, now),
    task_name: q.task_name ?? null,
    points: slots.map((t, i) => {
      const runtime = runtimeOf(t);
      const finished = finishedOf(t);
      return {
        t: bucketIso(start + i * bucket.seconds),
        ...stateCounts(t),
        finished,
        throughput_per_minute: round2(finished / bucketMinutes(start + i * bucket.seconds, bucket.seconds, now)),
        failure_rate: rate(t.failed, t.succeeded),
        runtime_mean_ms: runtime.mean,
        runtime_p50_ms: runtime.p50,
        runtime_p95_ms: runtime.p95,
      };
    }),
  };
}

// --- failure groups ----------------------------------------------------------------------

/** GET /projects/{slug}/failure-groups: the window's failure groups, most failures first. */
export async function failureGroups(
  ex: Executor,
  config: StatsRetention,
  projectId: string,
  q: { window?: WindowName; limit?: number; task_name?: string },
): Promise<FailureGroups> {
  const window = q.window ?? '24h';
  const bucket = bucketFor(window, 'auto');
  const now = nowSeconds();
  const { start, end, part } = bucketRange(window, bucket.seconds, now);
  const only = q.task_name === undefined ? null : storedText(q.task_name);
  const counts = (await groupNameCounts(ex, projectId, [part])).filter((r) => only === null || r.task_name === only);
  const perGroup = new Map<string, { failures: number; names: { task_name: string; failures: number }[] }>();
  for (const r of counts) {
    let g = perGroup.get(r.group_key);
    if (!g) perGroup.set(r.group_key, (g = { failures: 0, names: [] }));
    g.failures += r.failures;
    g.names.push({ task_name: r.task_name, failures: r.failures });
  }
  const top = [...perGroup.entries()].sort((a, b) => b[1].failures - a[1].failures || (a[0] < b[0] ? -1 : 1)).slice(0, q.limit ?? 50);
  const keys = top.map(([k]) => k);
  const [groups, series] = await Promise.all([failureGroupsByKey(ex, projectId, keys), groupSeries(ex, projectId, part, keys)]);
  const byKey = new Map(groups.map((g) => [g.group_key, g]));
  const count = (end - start) / bucket.seconds;
  const spark = new Map(keys.map((k) => [k, new Array<number>(count).fill(0)]));
  for (const s of series) {
    const slot = Math.floor((s.bucket - start) / bucket.seconds);
    if (slot >= 0 && slot < count) spark.get(s.group_key)![slot]! += s.failures;
  }
  return {
    ...bucketedHead(config, window, bucket, start, end, part, now),
    total_failures: [...perGroup.values()].reduce((n, g) => n + g.failures, 0),
    groups: top
      .filter(([k]) => byKey.has(k))
      .map(([k, g]) => {
        const row = byKey.get(k)!;
        return {
          group_key: k,
          exception_type: row.exception_type,
          message: row.message,
          sample_message: row.sample_message,
          failures: g.failures,
          failures_total: row.failures,
          first_seen: row.first_seen,
          last_seen: row.last_seen,
          task_names: g.names.sort((a, b) => b.failures - a.failures || (a.task_name < b.task_name ? -1 : 1)),
          series: spark.get(k)!,
        };
      }),
  };
}

const encodeCursor = (r: { failed_at: string; engine: string; task_id: string }) => Buffer.from(JSON.stringify([r.failed_at, r.engine, r.task_id])).toString('base64url');
function decodeCursor(cursor: string): { failed_at: string; engine: string; task_id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'string')) {
      const [failed_at, engine, task_id] = (v as string[]).map(storedText) as [string, string, string];
      return { failed_at, engine, task_id };
    }
  } catch {
    // not JSON
  }
  throw validationFailed([{ location: 'query', path: '/cursor', message: 'is not a cursor this endpoint returned' }]);
}

/** GET /projects/{slug}/failure-groups/{group_key}/tasks: the group's failed tasks, newest failure first. */
export async function failureGroupTasks(
  ex: Executor,
  projectId: string,
  groupKey: string,
  q: { window?: WindowName; cursor?: string; limit?: number },
): Promise<FailedTaskPage> {
  const before = q.cursor ? decodeCursor(q.cursor) : null;
  const [group] = await failureGroupsByKey(ex, projectId, [groupKey]);
  if (!group) throw notFound('failure group');
  const limit = q.limit ?? 50;
  const since = q.window ? bucketIso(windowRange(q.window).start) : undefined;
  const rows = await failedTasksPage(ex, projectId, groupKey, { ...(since ? { since } : {}), ...(before ? { before } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  return {
    group: { group_key: group.group_key, exception_type: group.exception_type, message: group.message },
    items: page,
    next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null,
  };
}
