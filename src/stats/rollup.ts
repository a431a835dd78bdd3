// The roll-up at ingest: the task events a transaction newly stored (the
// ingest path's `added`: re-sent batches and duplicate reports, which share an
// event id, were absorbed before) are counted into per-minute and per-hour
// aggregate rows, per task name and for the project as a whole, in that same
// transaction. How each event counts:
//   task.received / started / retried   one each, in the minute it occurred
//   task.succeeded / failed / revoked / rejected
//                                        one per task per call: when a call holds
//                                        several terminal events of a task, the one
//                                        the projection keeps (the newest) counts
//   a failure                            once per task ever: its first failure
//                                        enters failure_group_tasks, and one the
//                                        table already holds is not counted again
// A terminal event's runtime (its runtime_ms, else the time since the task's
// task.started in the same call, else since the start stored before the call:
// RQ, Dramatiq, arq, Huey and TaskIQ agents report no runtime, and a long
// task's start and end come in different uploads) enters the runtime histogram.
import { storedText } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';
import { BIN_COLUMNS, binOf } from './histogram.ts';
import { failureGroupOf } from './normalise.ts';
import {
  addAggregates,
  addFailures,
  COUNTERS,
  emptyCounts,
  failureTaskKey,
  HOUR,
  MINUTE,
  recordFailedTasks,
  storedTaskNames,
  type AggregateRow,
  type Counter,
  type FailureAggregateRow,
  type FailureGroupRow,
  type FailureTaskRow,
} from './store.ts';

const COUNTER_OF_KIND = new Map<string, Counter>([
  ['task.received', 'received'],
  ['task.started', 'started'],
  ['task.retried', 'retried'],
  ['task.succeeded', 'succeeded'],
  ['task.failed', 'failed'],
  ['task.revoked', 'revoked'],
  ['task.rejected', 'rejected'],
]);
const TERMINAL = new Set(['task.succeeded', 'task.failed', 'task.revoked', 'task.rejected']);
/** The name of tasks no event named (agents send `<unknown...>` placeholders themselves too). */
export const UNKNOWN_TASK_NAME = '<unknown>';
const isPlaceholder = (name: string) => name.startsWith('<unknown');
const MAX_NAME = 500;

const runtimeOf = (e: EventRecord): number | null => {
  const v = e.data.runtime_ms;
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null;
};

/** Milliseconds from a start to an end (epoch µs); null for an end before its start (clock skew between workers). */
export const elapsedMs = (startMicros: number, endMicros: number): number | null => (endMicros >= startMicros ? (endMicros - startMicros) / 1000 : null);

/** A task's started_at as stored before this call (by engine and task id as sent), or null. */
export type StoredStart = (engine: string, taskId: string) => string | null;

/** A terminal event's runtime: reported, else since the task's latest start before it in this call, else since its stored start. */
function runtimeOfEnd(e: EventRecord, starts: number[] | null, storedStart: StoredStart | undefined): number | null {
  const reported = runtimeOf(e);
  if (reported !== null) return reported;
  let start = -Infinity;
  for (const at of starts ?? []) if (at <= e.occurredMicros && at > start) start = at;
  if (start !== -Infinity) return elapsedMs(start, e.occurredMicros);
  const stored = storedStart?.(e.engine, e.taskId);
  const micros = stored ? parseIsoMicros(stored) : null;
  return micros === null ? null : elapsedMs(micros, e.occurredMicros);
}

/** The task name an event reports, as the task projection keeps it (src/tasks/service.ts); names repeat, so kept per call. */
function namer(): (e: EventRecord) => string | null {
  const seen = new Map<string, string>();
  return (e) => {
    const raw = e.data.task_name;
    if (typeof raw !== 'string' || raw === '') return null;
    let name = seen.get(raw);
    if (name === undefined) seen.set(raw, (name = storedText(raw.slice(0, MAX_NAME))));
    return name;
  };
}

/** One task of a call: its best name, the terminal event that counts, its task.started times. */
interface Task {
  name: string | null;
  terminal: EventRecord | null;
  starts: number[] | null;
  /** Where its row is, once it needs looking up (engine and task id as stored). */
  engine?: string;
  taskId?: string;
}

const isGoodName = (name: string | null): name is string => name !== null && !isPlaceholder(name);

/** Tasks this call names only by a placeholder (`<unknown...>`, as z4j-celery sends for some failures) or not at
 * all take the name their stored row has, if it has one (the projection ran first, so it holds the best name
 * known). Rare, so looked up only for them. */
async function nameFromStore(ex: Executor, projectId: string, tasks: Iterable<[EventRecord, Task]>): Promise<void> {
  const unnamed: Task[] = [];
  for (const [e, t] of tasks) {
    if (isGoodName(t.name) || t.engine !== undefined) continue;
    t.engine = storedText(e.engine);
    t.taskId = storedText(e.taskId);
    unnamed.push(t);
  }
  if (unnamed.length === 0) return;
  const stored = await storedTaskNames(ex, projectId, unnamed.map((t) => ({ engine: t.engine!, task_id: t.taskId! })));
  for (const t of unnamed) {
    const name = stored.get(failureTaskKey(t.engine!, t.taskId!)) ?? null;
    if (isGoodName(name)) t.name = name;
  }
}

/** What one task name adds in one minute, before it is spread over its four rows. */
type MinuteCounts = Record<Counter, number> & { name: string; minute: number; runtime_max_ms: number; bins: number[] };

/** Counts newly stored events into the aggregates (see the head of this file). Runs in the caller's transaction. */
/** `shard`: the aggregate rows' shard these counts go to (aggregateShard of the uploading agent; 0 by default);
 * `storedStart`: the tasks' starts as read before the call's writes (the ingest path reads them already). */
export async function rollupTaskEvents(ex: Executor, projectId: string, records: readonly EventRecord[], shard = 0, storedStart?: StoredStart): Promise<void> {
  // Per task (by engine and task id, as sent): its name, its terminal event, its starts; and the other events.
  const nameOf = namer();
  const tasks = new Map<string, Task>();
  const others: [EventRecord, Task][] = [];
  let unnamed = false;
  for (const e of records) {
    if (e.taskId === '' || !COUNTER_OF_KIND.has(e.kind)) continue;
    const key = `${e.engine}\u0000${e.taskId}`;
    let t = tasks.get(key);
    if (t === undefined) tasks.set(key, (t = { name: null, terminal: null, starts: null }));
    const name = nameOf(e);
    if (name !== null && (t.name === null || (isPlaceholder(t.name) && !isPlaceholder(name)))) t.name = name;
    if (TERMINAL.has(e.kind)) {
      if (t.terminal === null || e.occurredMicros >= t.terminal.occurredMicros) t.terminal = e;
    } else {
      if (e.kind === 'task.started') (t.starts ??= []).push(e.occurredMicros);
      others.push([e, t]);
    }
  }
  if (tasks.size === 0) return;
  const ended: [EventRecord, Task][] = [];
  for (const t of tasks.values()) {
    if (t.terminal !== null) ended.push([t.terminal, t]);
    unnamed ||= !isGoodName(t.name);
  }
  if (unnamed) await nameFromStore(ex, projectId, [...ended, ...others]);
  const nameOfTask = (t: Task) => t.name ?? UNKNOWN_TASK_NAME;

  // Failures: the first of each task enters its group's task list; only those count.
  const failedTasks: FailureTaskRow[] = [];
  const groupOf = new Map<Task, ReturnType<typeof failureGroupOf>>();
  for (const [e, t] of ended) {
    if (e.kind !== 'task.failed') continue;
    const group = failureGroupOf(e.data);
    groupOf.set(t, group);
    failedTasks.push({ project_id: projectId, engine: storedText(e.engine), task_id: storedText(e.taskId), group_key: group.key, task_name: nameOfTask(t), failed_at: e.occurredAt });
  }
  const firstFailures = failedTasks.length === 0 ? new Set<string>() : await recordFailedTasks(ex, failedTasks);

  // Everything per (task name, minute) first, then spread over the minute and hour rows.
  const minutes = new Map<string, MinuteCounts>();
  const add = (name: string, micros: number): MinuteCounts => {
    const minute = Math.floor(micros / 60_000_000) * MINUTE;
    const k = `${minute}\u0000${name}`;
    let m = minutes.get(k);
    if (m === undefined) minutes.set(k, (m = { ...emptyCounts(), name, minute, bins: BIN_COLUMNS.map(() => 0) }));
    return m;
  };
  for (const [e, t] of others) add(nameOfTask(t), e.occurredMicros)[COUNTER_OF_KIND.get(e.kind)!]++;

  const groups = new Map<string, FailureGroupRow>();
  const failureRows = new Map<string, FailureAggregateRow>();
  for (const [e, t] of ended) {
    const name = nameOfTask(t);
    if (e.kind === 'task.failed') {
      if (!firstFailures.has(failureTaskKey(storedText(e.engine), storedText(e.taskId)))) continue;
      const group = groupOf.get(t)!;
      const g = groups.get(group.key);
      if (!g) {
        groups.set(group.key, {
          project_id: projectId,
          group_key: group.key,
          exception_type: storedText(group.type),
          message: storedText(group.message),
          sample_message: storedText(group.sample),
          failures: 1,
          first_seen: e.occurredAt,
          last_seen: e.occurredAt,
        });
      } else {
        g.failures++;
        if (e.occurredAt < g.first_seen) g.first_seen = e.occurredAt;
        if (e.occurredAt > g.last_seen) g.last_seen = e.occurredAt;
      }
      const minute = Math.floor(e.occurredMicros / 60_000_000) * MINUTE;
      for (const [span, bucket] of [[MINUTE, minute], [HOUR, Math.floor(minute / HOUR) * HOUR]] as const) {
        const k = `${span}\u0000${bucket}\u0000${group.key}\u0000${name}`;
        const row = failureRows.get(k);
        if (row) row.failures++;
        else failureRows.set(k, { project_id: projectId, span, bucket, group_key: group.key, task_name: name, failures: 1 });
      }
    }
    const runtime = runtimeOfEnd(e, t.starts, storedStart);
    const m = add(name, e.occurredMicros);
    m[COUNTER_OF_KIND.get(e.kind)!]++;
    if (runtime !== null) {
      const ms = Math.round(runtime);
      m.runtime_count++;
      m.runtime_sum_ms += ms;
      m.runtime_max_ms = Math.max(m.runtime_max_ms, ms);
      m.bins[binOf(runtime)]!++;
    }
  }
  // The project's own aggregate rows take every upload's counts: written last, held for the least time.
  await addFailures(ex, [...groups.values()], [...failureRows.values()]);
  await addAggregates(ex, spread(projectId, minutes.values(), shard));
}

/** Each task name's minute counts added to its minute row and its hour row, and to the project's ('') two. */
function spread(projectId: string, minutes: Iterable<MinuteCounts>, shard: number): AggregateRow[] {
  const rows = new Map<string, AggregateRow>();
  const into = (span: typeof MINUTE | typeof HOUR, name: string, bucket: number, m: MinuteCounts) => {
    const key = `${span}\u0000${name}\u0000${bucket}`;
    let r = rows.get(key);
    if (!r) {
      r = { ...emptyCounts(), project_id: projectId, span, task_name: name, bucket, shard } as AggregateRow;
      for (const c of BIN_COLUMNS) r[c] = 0;
      rows.set(key, r);
    }
    for (const c of COUNTERS) (r[c] as number) += m[c];
    r.runtime_max_ms = Math.max(r.runtime_max_ms, m.runtime_max_ms);
    BIN_COLUMNS.forEach((c, i) => ((r[c] as number) += m.bins[i]!));
  };
  for (const m of minutes) {
    const hour = Math.floor(m.minute / HOUR) * HOUR;
    into(MINUTE, m.name, m.minute, m);
    into(MINUTE, '', m.minute, m);
    into(HOUR, m.name, hour, m);
    into(HOUR, '', hour, m);
  }
  return [...rows.values()];
}

/** Where a minute or hour bucket (Unix seconds) starts, as an ISO timestamp. */
export const bucketIso = (bucket: number): string => isoMicros(bucket * 1_000_000);
