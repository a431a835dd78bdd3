// Task statistics on both databases: events uploaded by a test agent over the
// long-poll transport (the real ingest path) are rolled up into per-minute and
// per-hour aggregates; the stats, trends, home and failure-group routes read
// them back. A manual clock pins "now", so every count below is exact.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { isoMicros, ManualClock, resetClock, setClock } from '../../src/lib/clock.ts';
import { binLower, binOf, binUpper } from '../../src/stats/histogram.ts';
import { pruneStats } from '../../src/stats/jobs.ts';
import { aggregateShard } from '../../src/stats/store.ts';
import { groupKeyOf, normaliseMessage } from '../../src/stats/normalise.ts';
import { countRows, issueTestCommand, liveService, mintTestAgent, type LiveService } from '../helpers/agents.ts';
import { testDialect } from '../helpers/app.ts';
import { FAST_IDENTITY_ENV, mfaAdmin, userBrowser, type Browser } from '../helpers/identity.ts';
import { taskEvent, type TestAgent } from '../helpers/test-agent.ts';
import type { JsonInput } from '../../src/transport/json-convert.ts';

// 2026-06-10 12:30:30 UTC: the 1h window runs 11:31:00-12:31:00, the 24h window's minute edges are at :31.
const NOW = Date.UTC(2026, 5, 10, 12, 30, 30) * 1000;
const MIN = 60_000_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

let svc: LiveService;
let clock: ManualClock;
let admin: Browser;
let alpha: { id: string; slug: string };
let beta: { id: string; slug: string };
let agent: TestAgent;

async function project(slug: string): Promise<{ id: string; slug: string }> {
  const r = await admin.call('POST', '/api/v1/projects', { body: { slug, name: slug.toUpperCase() } });
  if (r.status !== 201) throw new Error(`create project: ${r.status} ${r.text}`);
  return { id: r.body.id, slug };
}

/** A service (with `env` besides the defaults), its administrator, projects alpha and beta, and alpha's agent. */
async function start(env: Record<string, string> = {}): Promise<void> {
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, ...env } });
  admin = await mfaAdmin(svc);
  alpha = await project('alpha');
  beta = await project('beta');
  agent = await mintTestAgent(svc, alpha.id, svc.baseUrl, 'alpha-agent');
  expect((await agent.probe()).status).toBe(200);
}

beforeEach(async () => {
  clock = new ManualClock(NOW);
  setClock(clock);
  await start();
});
afterEach(async () => {
  await svc.close();
  resetClock();
});

const iso = (micros: number) => isoMicros(micros);
/** A task event at `at` (epoch µs). */
function ev(kind: string, taskId: string, at: number, data: Record<string, JsonInput> = {}) {
  return taskEvent({ kind, task_id: taskId, occurred_at: iso(at), data: { task_name: 'app.add', queue: 'default', worker: 'w1@host', ...data } });
}
/** A task's life: received, started, then its end `ms` later (runtime_ms reported on success). */
function life(taskId: string, at: number, end: 'task.succeeded' | 'task.failed', ms: number, data: Record<string, JsonInput> = {}) {
  const endData: Record<string, JsonInput> = end === 'task.succeeded' ? { runtime_ms: ms, result: 1 } : {};
  return [ev('task.received', taskId, at - 1000, data), ev('task.started', taskId, at, data), ev(end, taskId, at + ms * 1000, { ...data, ...endData })];
}
async function upload(events: ReturnType<typeof ev>[], as = agent): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) {
    const r = await as.upload([as.eventBatch(events.slice(i, i + 1000))]);
    expect(r.status).toBe(200);
    expect(r.body.accepted).toBe(1);
  }
}
const get = async (path: string, who: Browser = admin) => {
  const r = await who.call('GET', path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.body;
};
/** Within the histogram's precision: the estimate lies in the bin the true value lies in. */
function nearRuntime(estimate: number | null, truth: number): void {
  expect(estimate).not.toBeNull();
  const bin = binOf(truth);
  expect(estimate!).toBeGreaterThanOrEqual(binLower(bin));
  expect(estimate!).toBeLessThanOrEqual(binUpper(bin));
}

describe(`task statistics on ${testDialect()}`, () => {
  test('counts by state, failure rate, throughput and runtime p50/p95 over a window, from events sent over long-poll', async () => {
    const at = NOW - 10 * MIN;
    const events = [];
    // 100 successes with runtimes 10, 20, ..., 1000 ms; 25 failures.
    for (let i = 1; i <= 100; i++) events.push(...life(`ok-${i}`, at + i * 1000, 'task.succeeded', i * 10));
    for (let i = 1; i <= 25; i++) events.push(...life(`bad-${i}`, at + i * 1000, 'task.failed', 5, { task_name: 'app.flaky', exception: 'ValueError', exception_message: `bad row ${i}` }));
    events.push(ev('task.retried', 'bad-1', at + 500), ev('task.revoked', 'gone-1', at + 700));
    await upload(events);

    const s = await get(`/api/v1/projects/alpha/stats?window=1h`);
    expect(s.window).toBe('1h');
    expect(s.since).toBe('2026-06-10T11:31:00.000000+00:00');
    expect(s.until).toBe('2026-06-10T12:31:00.000000+00:00');
    expect(s.counts).toEqual({ received: 125, started: 125, succeeded: 100, failed: 25, retried: 1, revoked: 1, rejected: 0 });
    expect(s.finished).toBe(126);
    expect(s.failure_rate).toBe(0.2);
    expect(s.throughput_per_minute).toBe(2.1);
    // Runtimes: the successes' runtime_ms and the failures' time since task.started (5 ms).
    expect(s.runtime_ms.count).toBe(125);
    expect(s.runtime_ms.max).toBe(1000);
    nearRuntime(s.runtime_ms.p50, 380); // the 63rd of 125: 25 x 5 ms, then 10..1000
    nearRuntime(s.runtime_ms.p95, 950);
    expect(s.agents).toEqual({ online: 1, offline: 0, unknown: 0, total: 1 });
    expect(s.failing_tasks).toEqual([
      { task_name: 'app.flaky', failed: 25, finished: 25, failure_rate: 1, first_half_failure_rate: null, second_half_failure_rate: 1, trend: 'rising' },
    ]);
    expect(s.attention.map((a: any) => [a.kind, a.severity, a.task_name])).toEqual([
      ['failing_task', 'critical', 'app.flaky'],
      ['high_failure_rate', 'warning', null], // 20 %: critical only above
    ]);
    expect(s.health).toBe('degraded');
    expect(s.last_activity_at).toBe('2026-06-10T12:20:00.000000+00:00');

    // Per task name.
    const add = await get(`/api/v1/projects/alpha/trends?window=1h&bucket=1h&task_name=app.add`);
    expect(add.points.reduce((a: number, p: any) => a + p.succeeded, 0)).toBe(100);
    expect(add.points.reduce((a: number, p: any) => a + p.failed, 0)).toBe(0);
    // Another project sees none of it.
    const b = await get(`/api/v1/projects/beta/stats?window=24h`);
    expect(b.finished).toBe(0);
    expect(b.failure_rate).toBeNull();
    expect(b.runtime_ms).toEqual({ count: 0, mean: null, p50: null, p95: null, max: null });
    expect(b.health).toBe('idle');
  });

  test('agents adding to different statistics shards (PostgreSQL) count as one project: stats, minute trends and per-name counts sum them', async () => {
    const shardOf = (id: string) => aggregateShard(svc.ctx.db, id);
    // A second agent on another shard than the first (SQLite keeps one shard: any second agent).
    let other = await mintTestAgent(svc, alpha.id, svc.baseUrl, 'alpha-agent-2');
    for (let i = 3; testDialect() === 'postgres' && shardOf(other.agentId) === shardOf(agent.agentId); i++) {
      other = await mintTestAgent(svc, alpha.id, svc.baseUrl, `alpha-agent-${i}`);
    }
    expect((await other.probe()).status).toBe(200);
    const at = NOW - 5 * MIN;
    await upload([...life('a-1', at, 'task.succeeded', 50), ...life('a-2', at + 1000, 'task.failed', 5)]);
    await upload([...life('b-1', at + 2000, 'task.succeeded', 70), ...life('b-2', at + 3000, 'task.succeeded', 90)], other);
    const rows = await svc.ctx.db.all<{ shards: number }>(
      sql`SELECT COUNT(DISTINCT shard) AS shards FROM task_aggregates WHERE project_id = ${alpha.id} AND task_name = '' AND span = 60`,
    );
    expect(Number(rows[0]!.shards)).toBe(testDialect() === 'postgres' ? 2 : 1);
    const s = await get(`/api/v1/projects/alpha/stats?window=1h`);
    expect(s.counts).toMatchObject({ received: 4, started: 4, succeeded: 3, failed: 1 });
    expect(s.runtime_ms).toMatchObject({ count: 4, max: 90 });
    const t = await get(`/api/v1/projects/alpha/trends?window=1h&bucket=1m`);
    expect(t.points.reduce((a: number, p: any) => a + p.succeeded, 0)).toBe(3);
    expect(t.points.filter((p: any) => p.succeeded > 0)).toHaveLength(1); // one minute: its shards summed into one point
    const add = await get(`/api/v1/projects/alpha/trends?window=1h&bucket=1h&task_name=app.add`);
    expect(add.points.reduce((a: number, p: any) => a + p.failed, 0)).toBe(1);
  });

  test('a re-sent batch, the same event from a second agent, a second terminal report of a task and a repeated failure count once', async () => {
    const at = NOW - 5 * MIN;
    const batch = [...life('t1', at, 'task.succeeded', 40), ...life('t2', at, 'task.failed', 10, { exception: 'KeyError', exception_message: "'x'" })];
    await upload(batch);
    await upload(batch); // re-sent (a new frame, the same events)
    const second = await mintTestAgent(svc, alpha.id, svc.baseUrl, 'second');
    expect((await second.probe()).status).toBe(200);
    await upload(batch.map((e) => ({ ...e, id: crypto.randomUUID() })), second);
    // A late duplicate terminal report in another second, in one call; and a repeat of t2's failure later on.
    await upload([ev('task.succeeded', 't3', at, { runtime_ms: 5 }), ev('task.succeeded', 't3', at + 2_000_000, { runtime_ms: 5 })]);
    await upload([ev('task.failed', 't2', at + 30_000_000, { exception: 'KeyError', exception_message: "'x'" })]);
    const s = await get(`/api/v1/projects/alpha/stats?window=1h`);
    expect(s.counts).toEqual({ received: 2, started: 2, succeeded: 2, failed: 1, retried: 0, revoked: 0, rejected: 0 });
    expect(s.runtime_ms.count).toBe(3);
    const groups = await get(`/api/v1/projects/alpha/failure-groups?window=1h`);
    expect(groups.total_failures).toBe(1);
    expect(groups.groups[0].failures_total).toBe(1);
  });

  test('an end without runtime_ms whose start came in an earlier upload (RQ, Dramatiq, arq, Huey, TaskIQ; Celery failures) is timed from the stored start', async () => {
    const at = NOW - 30 * MIN;
    const rq = (e: ReturnType<typeof ev>) => ({ ...e, engine: 'rq' });
    const starts = [];
    const ends = [];
    // Nine successes taking 1..9 s and three failures taking 500 ms, none reporting a runtime.
    for (let i = 1; i <= 9; i++) {
      starts.push(rq(ev('task.received', `r-${i}`, at - 1000)), rq(ev('task.started', `r-${i}`, at)));
      ends.push(rq(ev('task.succeeded', `r-${i}`, at + i * 1_000_000)));
    }
    for (let i = 1; i <= 3; i++) {
      starts.push(rq(ev('task.started', `f-${i}`, at)));
      ends.push(rq(ev('task.failed', `f-${i}`, at + 500_000, { exception: 'ValueError', exception_message: 'bad' })));
    }
    // A reported runtime wins over the stored start; an end before its start (clock skew) is not timed.
    starts.push(ev('task.started', 'c-1', at), rq(ev('task.started', 'skew-1', at)));
    ends.push(ev('task.succeeded', 'c-1', at + 2_000_000, { runtime_ms: 7 }), rq(ev('task.succeeded', 'skew-1', at - 1_000_000)));
    await upload(starts);
    await upload(ends);
    const s = await get(`/api/v1/projects/alpha/stats?window=1h`);
    expect(s.counts).toMatchObject({ started: 14, succeeded: 11, failed: 3 });
    expect(s.runtime_ms.count).toBe(13);
    expect(s.runtime_ms.max).toBe(9000);
    expect(s.runtime_ms.mean).toBeCloseTo((7 + 3 * 500 + 45_000) / 13, 0);
    nearRuntime(s.runtime_ms.p50, 3000); // the 7th of 13: 7, 3 x 500, then 1000..9000
    nearRuntime(s.runtime_ms.p95, 9000);
  });

  test("a failure reported under a placeholder name counts under the task's stored name; one with none known keeps the placeholder", async () => {
    const at = NOW - 5 * MIN;
    await upload([ev('task.received', 'p1', at, { task_name: 'app.real' })]);
    await upload([
      ev('task.failed', 'p1', at + 1_000_000, { task_name: '<unknown:celery:p1>', exception: 'OSError', exception_message: 'gone' }),
      ev('task.failed', 'p2', at + 1_000_000, { task_name: '<unknown:celery:p2>', exception: 'OSError', exception_message: 'gone' }),
    ]);
    const real = await get(`/api/v1/projects/alpha/trends?window=1h&bucket=1h&task_name=app.real`);
    expect(real.points.map((p: any) => [p.received, p.failed])).toEqual([[1, 1]]);
    const g = (await get(`/api/v1/projects/alpha/failure-groups?window=1h`)).groups[0];
    expect(g.task_names).toEqual([
      { task_name: '<unknown:celery:p2>', failures: 1 },
      { task_name: 'app.real', failures: 1 },
    ]);
  });

  test('windows and trend buckets put each event in its minute, hour and day; bad window, bucket and paging values answer 422', async () => {
    await upload([
      ...life('now-1', NOW - 2 * MIN, 'task.succeeded', 100),
      ...life('h3-1', NOW - 3 * HOUR, 'task.succeeded', 100),
      ...life('h3-2', NOW - 3 * HOUR, 'task.failed', 100),
      ...life('d2-1', NOW - 2 * DAY, 'task.succeeded', 100),
      ...life('d5-1', NOW - 5 * DAY, 'task.failed', 100),
    ]);
    const finished = async (w: string) => (await get(`/api/v1/projects/alpha/stats?window=${w}`)).finished;
    expect([await finished('1h'), await finished('6h'), await finished('24h'), await finished('7d'), await finished('30d')]).toEqual([1, 3, 3, 5, 5]);

    const m = await get(`/api/v1/projects/alpha/trends?window=1h&bucket=1m`);
    expect(m.points).toHaveLength(60);
    expect(m.points[59].t).toBe('2026-06-10T12:30:00.000000+00:00');
    const nonZero = (pts: any[]) => pts.flatMap((p, i) => (p.finished > 0 ? [[i, p.t, p.succeeded, p.failed]] : []));
    expect(nonZero(m.points)).toEqual([[57, '2026-06-10T12:28:00.000000+00:00', 1, 0]]);
    expect(m.points[57].runtime_p50_ms).not.toBeNull();
    const six = await get(`/api/v1/projects/alpha/trends?window=6h`); // auto: 5m
    expect([six.bucket, six.points.length]).toEqual(['5m', 72]);
    expect(nonZero(six.points)).toEqual([
      [35, '2026-06-10T09:30:00.000000+00:00', 1, 1],
      [70, '2026-06-10T12:25:00.000000+00:00', 1, 0],
    ]);
    expect(six.points[35].failure_rate).toBe(0.5);
    const week = await get(`/api/v1/projects/alpha/trends?window=7d`); // auto: 1h
    expect([week.bucket, week.points.length, week.since, week.until]).toEqual(['1h', 168, '2026-06-03T13:00:00.000000+00:00', '2026-06-10T13:00:00.000000+00:00']);
    expect(nonZero(week.points).map((p) => p[1])).toEqual([
      '2026-06-05T12:00:00.000000+00:00',
      '2026-06-08T12:00:00.000000+00:00',
      '2026-06-10T09:00:00.000000+00:00',
      '2026-06-10T12:00:00.000000+00:00',
    ]);
    // The last bucket is still filling: its rate is over the 30.5 minutes gone by (12:00 to 12:30:30), not the hour.
    expect(week.points[167]).toMatchObject({ t: '2026-06-10T12:00:00.000000+00:00', finished: 1, throughput_per_minute: 0.03 });
    expect(week.points[164]).toMatchObject({ t: '2026-06-10T09:00:00.000000+00:00', finished: 2, throughput_per_minute: 0.03 });
    const month = await get(`/api/v1/projects/alpha/trends?window=30d`); // auto: 1d
    expect([month.bucket, month.points.length]).toEqual(['1d', 30]);
    expect(month.points[29]).toMatchObject({ t: '2026-06-10T00:00:00.000000+00:00', succeeded: 2, failed: 1 });

    for (const q of [
      'stats?window=2h',
      'trends?window=48h',
      'trends?bucket=7m',
      'trends?window=7d&bucket=1m',
      'trends?window=7d&bucket=15m',
      'trends?window=1h&bucket=1d',
      'trends?window=30d&bucket=1m',
      'failure-groups?window=1y',
      'failure-groups?limit=0',
      'failure-groups/zz/tasks',
      `failure-groups/${'a'.repeat(16)}/tasks?cursor=nonsense`,
      `failure-groups/${'a'.repeat(16)}/tasks?limit=501`,
    ]) {
      const r = await admin.call('GET', `/api/v1/projects/alpha/${q}`);
      expect([q, r.status, r.body.error]).toEqual([q, 422, 'validation_failed']);
      expect(Object.keys(r.body)).toEqual(expect.arrayContaining(['error', 'message', 'details']));
    }
    expect((await admin.call('GET', '/api/v1/home?window=90m')).status).toBe(422);
  });

  test('minute rows older than SVC_STATS_MINUTE_RETENTION_HOURS go, hour rows stay (a week reads 168 of them); past SVC_STATS_RETENTION_DAYS everything goes', async () => {
    // A busy week: a success every 10 minutes and a failure every hour, all week long.
    const events = [];
    for (let t = NOW - 7 * DAY + 10 * MIN; t < NOW; t += 10 * MIN) {
      events.push(ev('task.succeeded', `w-${t}`, t, { runtime_ms: 20 }));
      if (Math.floor(t / MIN) % 60 < 10) {
        events.push(ev('task.failed', `f-${t}`, t, { exception: 'TimeoutError', exception_message: `after ${t % 97} s` }));
      }
    }
    await upload(events);
    const before = await get(`/api/v1/projects/alpha/trends?window=7d`);
    const stats7 = await get(`/api/v1/projects/alpha/stats?window=7d`);
    const minuteRows = () => countRows(svc.ctx.db, 'task_aggregates', sql`project_id = ${alpha.id} AND span = 60`);
    expect(await minuteRows()).toBeGreaterThan(2000);

    const pruned = await pruneStats(svc.ctx.db, svc.ctx.config, NOW);
    expect(pruned.minute_rows).toBeGreaterThan(0);
    expect(pruned.hour_rows).toBe(0);
    const cutoff = Math.floor((NOW / 1e6 - 48 * 3600) / 60) * 60;
    expect(await countRows(svc.ctx.db, 'task_aggregates', sql`span = 60 AND bucket < ${cutoff}`)).toBe(0);
    expect(await countRows(svc.ctx.db, 'failure_aggregates', sql`span = 60 AND bucket < ${cutoff}`)).toBe(0);
    expect(await minuteRows()).toBeLessThanOrEqual(2 * 48 * 60);
    // The week's chart and figures are unchanged, read from 168 hour rows per series.
    expect(await get(`/api/v1/projects/alpha/trends?window=7d`)).toEqual(before);
    expect(await get(`/api/v1/projects/alpha/stats?window=7d`)).toEqual(stats7);
    const start = Date.parse(before.since) / 1000;
    expect(await countRows(svc.ctx.db, 'task_aggregates', sql`project_id = ${alpha.id} AND span = 3600 AND task_name = '' AND bucket >= ${start}`)).toBeLessThanOrEqual(168);
    const inWeek = events.filter((e) => e.kind === 'task.succeeded' && Date.parse(e.occurred_at as string) >= start * 1000).length;
    expect(inWeek).toBeGreaterThan(1000);
    expect(before.points.reduce((a: number, p: any) => a + p.succeeded, 0)).toBe(inWeek);
    expect(before.points.reduce((a: number, p: any) => a + p.failed, 0)).toBe(stats7.counts.failed);
    expect(stats7.counts.failed).toBe(168);

    // 31 days on: all of it is past retention.
    const later = await pruneStats(svc.ctx.db, svc.ctx.config, NOW + 31 * DAY);
    expect(later.hour_rows).toBeGreaterThan(0);
    expect(later.failure_groups).toBe(1);
    for (const table of ['task_aggregates', 'failure_aggregates', 'failure_groups', 'failure_group_tasks']) expect(await countRows(svc.ctx.db, table)).toBe(0);
  });

  test('a window starting before the statistics kept says partial, with kept_since; a window within retention does not, however new the project', async () => {
    /** Where retention stands at NOW: hour rows after `days`, minute rows after 48 hours (the defaults). */
    const hourCut = (days: number) => iso(Math.floor((NOW / 1e6 - days * 86_400) / 3600) * 3600 * 1e6);
    const minuteCut = iso(Math.floor((NOW / 1e6 - 48 * 3600) / 60) * 60 * 1e6);
    const kept = async (path: string) => {
      const r = await get(path);
      return [path, r.partial, r.kept_since];
    };
    // The default 30 days: every window is within retention, even 30d.
    for (const [path, since] of [
      ['/api/v1/projects/alpha/stats?window=30d', hourCut(30)],
      ['/api/v1/projects/alpha/trends?window=30d', hourCut(30)],
      ['/api/v1/projects/alpha/stats?window=24h', minuteCut], // minute rows at the ragged ends: the later cutoff
      ['/api/v1/projects/alpha/trends?window=24h', minuteCut], // 15-minute buckets read minute rows only
      ['/api/v1/home?window=30d', hourCut(30)],
    ]) {
      expect(await kept(path!)).toEqual([path, false, since]);
    }

    // Seven days kept: a task finished ten days ago (not yet pruned) and one an hour ago.
    await svc.close();
    await start({ SVC_STATS_RETENTION_DAYS: '7' });
    await upload([...life('old', NOW - 10 * DAY, 'task.succeeded', 10), ...life('new', NOW - HOUR, 'task.failed', 10, { exception: 'KeyError' })]);
    for (const window of ['30d', '7d']) {
      const partial = window === '30d';
      for (const path of [
        `/api/v1/projects/alpha/stats?window=${window}`,
        `/api/v1/projects/alpha/trends?window=${window}`,
        `/api/v1/projects/alpha/failure-groups?window=${window}`,
        `/api/v1/home?window=${window}`,
        // beta has no task at all, alpha's first came ten days ago: only retention decides.
        `/api/v1/projects/beta/stats?window=${window}`,
      ]) {
        expect(await kept(path)).toEqual([path, partial, hourCut(7)]);
      }
    }
    // The 7d window starts after the cutoff, the 30d one before it (and still counts the old task until the upkeep runs).
    const seven = await get('/api/v1/projects/alpha/stats?window=7d');
    expect(Date.parse(seven.since)).toBeGreaterThanOrEqual(Date.parse(hourCut(7)));
    expect(seven.finished).toBe(1);
    expect((await get('/api/v1/projects/alpha/stats?window=30d')).finished).toBe(2);
    await pruneStats(svc.ctx.db, svc.ctx.config, NOW);
    const thirty = await get('/api/v1/projects/alpha/stats?window=30d');
    expect([thirty.partial, thirty.finished]).toEqual([true, 1]);
  });

  test('failure groups: messages normalised into groups with counts, first and last seen, task names and a sparkline; their failed tasks listed and paged', async () => {
    const at = NOW - 50 * MIN;
    const events = [];
    for (let i = 0; i < 7; i++) {
      const uuid = crypto.randomUUID();
      events.push(
        ...life(`dberr-${i}`, at + i * 5 * MIN, 'task.failed', 3, {
          task_name: i % 2 === 0 ? 'app.sync' : 'app.import',
          exception: 'psycopg.OperationalError',
          exception_message: `connection to server at "10.0.${i}.5", port 5432 failed: timeout after ${i + 1}.5s (request ${uuid})`,
        }),
      );
    }
    events.push(...life('key-1', at, 'task.failed', 3, { exception: 'KeyError', exception_message: "'user_id'" }));
    // z4j-rq sends the whole traceback as the exception.
    events.push(...life('rq-1', at + 10 * MIN, 'task.failed', 3, { exception: 'Traceback (most recent call last):\n  File "x.py", line 3, in f\nValueError: invalid literal for int() with base 10: \'abc\'' }));
    await upload(events);

    const r = await get(`/api/v1/projects/alpha/failure-groups?window=1h`);
    expect([r.bucket, r.total_failures]).toEqual(['1m', 9]);
    const db = r.groups[0];
    expect(db).toMatchObject({
      exception_type: 'psycopg.OperationalError',
      message: 'connection to server at <str>, port <n> failed: timeout after <n>s (request <uuid>)',
      failures: 7,
      failures_total: 7,
      first_seen: iso(at + 3000),
      last_seen: iso(at + 30 * MIN + 3000),
      task_names: [
        { task_name: 'app.sync', failures: 4 },
        { task_name: 'app.import', failures: 3 },
      ],
    });
    expect(db.group_key).toBe(groupKeyOf('psycopg.OperationalError', db.message));
    expect(db.series).toHaveLength(60);
    expect(db.series.reduce((a: number, b: number) => a + b, 0)).toBe(7);
    expect([db.series[9], db.series[29], db.series[39]]).toEqual([1, 1, 1]); // 11:40, 12:00 and 12:10 (the window starts at 11:31)
    expect(r.groups.slice(1).map((g: any) => [g.exception_type, g.message, g.failures])).toEqual([
      ['KeyError', '<str>', 1],
      ['ValueError', 'invalid literal for int() with base <n>: <str>', 1],
    ].sort((a, b) => (groupKeyOf(a[0] as string, a[1] as string) < groupKeyOf(b[0] as string, b[1] as string) ? -1 : 1)));
    expect((await get(`/api/v1/projects/alpha/failure-groups?window=1h&task_name=app.sync`)).total_failures).toBe(4);

    // The group's failed tasks, newest failure first, three to a page.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await get(`/api/v1/projects/alpha/failure-groups/${db.group_key}/tasks?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.group).toEqual({ group_key: db.group_key, exception_type: 'psycopg.OperationalError', message: db.message });
      seen.push(...page.items.map((t: any) => t.task_id));
      for (const t of page.items) expect(t).toMatchObject({ engine: 'celery', state: 'failure', exception: 'psycopg.OperationalError', queue: 'default' });
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([6, 5, 4, 3, 2, 1, 0].map((i) => `dberr-${i}`));
    expect((await admin.call('GET', `/api/v1/projects/alpha/failure-groups/${'0'.repeat(16)}/tasks`)).status).toBe(404);
    expect((await admin.call('GET', `/api/v1/projects/beta/failure-groups/${db.group_key}/tasks`)).status).toBe(404);
    // Its key is what a task filter can join on (docs/tasks-stats.md).
    const joined = await svc.ctx.db.all<{ task_id: string }>(
      sql`SELECT t.task_id FROM tasks t WHERE t.project_id = ${alpha.id} AND EXISTS (SELECT 1 FROM failure_group_tasks g WHERE g.project_id = t.project_id AND g.engine = t.engine AND g.task_id = t.task_id AND g.group_key = ${db.group_key}) ORDER BY t.task_id`,
    );
    expect(joined.map((j) => j.task_id)).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `dberr-${i}`));
    expect(normaliseMessage('timeout after 3.5s')).toBe('timeout after <n>s');
  });

  test('home: each caller sees the projects they belong to (administrators all), attention first; offline agents and stuck commands need attention', async () => {
    await upload([...life('a-1', NOW - 5 * MIN, 'task.succeeded', 10)]);
    const betaAgent = await mintTestAgent(svc, beta.id, svc.baseUrl, 'beta-agent');
    expect((await betaAgent.probe()).status).toBe(200);
    const events = [];
    for (let i = 0; i < 10; i++) events.push(...life(`b-${i}`, NOW - 5 * MIN + i * 1000, i < 4 ? 'task.failed' : 'task.succeeded', 10, { task_name: 'app.report', exception: 'RuntimeError', exception_message: 'boom' }));
    await upload(events, betaAgent);
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${betaAgent.agentId}`));
    await issueTestCommand(svc.ctx, alpha.id, agent.agentId);
    clock.advance(61_000); // past the command timeout (60 s); the sweep that would time it out is not running
    const viewer = await userBrowser(admin, 'viewer@example.com');
    expect((await admin.call('POST', '/api/v1/projects/alpha/memberships', { body: { user_id: viewer.id, role: 'viewer' } })).status).toBe(201);

    const mine = await get('/api/v1/home?window=1h', viewer);
    expect(mine.projects.map((p: any) => p.slug)).toEqual(['alpha']);
    expect(mine.projects[0]).toMatchObject({ role: 'viewer', health: 'degraded', finished: 1, succeeded: 1, stuck_commands: 1, agents_online: 1, agents_total: 1, attention_warning: 1 });
    expect(mine.attention.map((a: any) => [a.kind, a.project_slug])).toEqual([['stuck_commands', 'alpha']]);
    expect(mine.totals).toMatchObject({ projects: 1, finished: 1, failed: 0, failure_rate: 0, stuck_commands: 1 });
    expect((await viewer.call('GET', '/api/v1/projects/beta/stats')).status).toBe(404);

    const all = await get('/api/v1/home?window=1h');
    expect(all.projects.map((p: any) => p.slug)).toEqual(['beta', 'alpha', 'default']);
    expect(all.projects[0]).toMatchObject({ health: 'offline', finished: 10, failed: 4, failure_rate: 0.4, agents_online: 0, agents_total: 1 });
    expect(all.attention.map((a: any) => [a.severity, a.kind, a.project_slug])).toEqual([
      ['critical', 'agent_offline', 'beta'],
      ['critical', 'failing_task', 'beta'],
      ['warning', 'stuck_commands', 'alpha'],
    ]);
    expect(all.totals).toMatchObject({ projects: 3, finished: 11, succeeded: 7, failed: 4, agents_online: 1, agents_total: 2 });
    const betaStats = await get('/api/v1/projects/beta/stats?window=1h');
    expect(betaStats.agents).toEqual({ online: 0, offline: 1, unknown: 0, total: 1 });
    expect(betaStats.attention[0]).toMatchObject({ kind: 'agent_offline', agent_id: betaAgent.agentId, severity: 'critical' });
    expect((await get('/api/v1/projects/alpha/stats?window=1h')).commands).toMatchObject({ pending: 1, stuck: 1 });
  });

  test('a project whose agents never connected is offline, and its attention list says why', async () => {
    const gamma = await project('gamma');
    await mintTestAgent(svc, gamma.id, svc.baseUrl, 'gamma-1');
    await mintTestAgent(svc, gamma.id, svc.baseUrl, 'gamma-2');
    const s = await get('/api/v1/projects/gamma/stats?window=1h');
    expect([s.health, s.agents]).toEqual(['offline', { online: 0, offline: 0, unknown: 2, total: 2 }]);
    expect(s.attention).toEqual([expect.objectContaining({ kind: 'agent_never_connected', severity: 'warning', count: 2, project_slug: 'gamma' })]);
    expect(s.attention[0].message).toBe('none of its 2 agents has connected yet: start one with its token');
    const home = await get('/api/v1/home?window=1h');
    expect(home.attention.filter((a: any) => a.project_slug === 'gamma').map((a: any) => a.kind)).toEqual(['agent_never_connected']);
  });
});
