// The scheduler inventory as the agents report it.
//
// z4j scheduler adapters of the 1.9+ line publish their schedules only on a
// stream svc activates (agent-protocol.md §7.2 `schedule.external.activate`):
// for each scheduler adapter a WebSocket agent advertises with the
// `external_schedule_stable_snapshot_v1` capability (its hello listing the
// `external_schedule_protocol_v1` runtime feature), svc issues one activation
// per connection, naming a stream (kept per agent and adapter) and a new epoch.
// The agent answers with a stable snapshot: `schedule.snapshot` events whose
// `external_snapshot_frame` carries rows frames 0..n-1 and a terminal frame,
// each bound to the stream, epoch, sequence and snapshot. Frames are staged
// until the terminal one arrives; a complete snapshot of a newer sequence of the
// current epoch then reconciles the adapter's schedules (rows it no longer
// holds are removed). Control results (`schedule.updated` with an
// `external_projection`) update single rows. Older agents' plain
// `schedule.snapshot {scheduler, schedules}` and `schedule.created|updated|
// deleted {schedule}` events are read too.
//
// All of this runs inside the transaction that stores the agent's event batch,
// so what is acknowledged is applied. Malformed content is logged and skipped,
// never thrown: a frame that can never apply must not pin the agent's buffer.
import { inArray } from 'drizzle-orm';
import type { AgentRow } from '../agents/service.ts';
import { issueCommand } from '../commands/service.ts';
import type { Tx } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { nextRunAfter } from './next-run.ts';
import { SYSTEM_ACTOR } from './service.ts';
import {
  acceptSequence,
  advanceStream,
  deleteSchedules,
  dropFrames,
  insertSchedule,
  schedulesOf,
  setStreamCommand,
  stageFrame,
  stagedFrames,
  streamOf,
  updateSchedule,
  type ScheduleRow,
} from './store.ts';

const log = logger('schedules.inventory');

export const STABLE_SNAPSHOT_CAPABILITY = 'external_schedule_stable_snapshot_v1';
export const EXTERNAL_PROTOCOL_FEATURE = 'external_schedule_protocol_v1';
export const ACTIVATE_ACTION = 'schedule.external.activate';
/** Staged frames of a snapshot whose terminal frame never came are dropped after this long. */
const STAGED_FRAME_TTL_MICROS = 3600_000_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);
const int = (v: unknown): number | null => {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) ? n : null;
};
const ts = (v: unknown): string | null => {
  if (typeof v !== 'string') return null;
  const micros = parseIsoMicros(v) ?? parseIsoMicros(`${v}Z`);
  return micros === null ? null : isoMicros(micros);
};

/** The canonical whole-owner source scope of the external schedule protocol (sorted keys, compact). */
export const sourceScopeOf = (owner: string): string => JSON.stringify({ kind: 'scheduler-owner', owner, version: 1 });

/** One schedule as a scheduler reported it. */
interface Reported {
  sourceKey: string;
  engine: string;
  name: string;
  task_name: string;
  kind: string;
  expression: string;
  timezone: string;
  queue: string | null;
  priority: string;
  args: unknown[];
  kwargs: Obj;
  is_enabled: boolean;
  last_run_at: string | null;
  next_run_at: string | null;
  total_runs: number;
  external_id: string | null;
  catch_up: string;
  source: string;
  source_hash: string | null;
}

/** Reads a projection row (external protocol) or a legacy Schedule object; null when unusable. */
function readSchedule(raw: unknown, scheduler: string): Reported | null {
  if (!isObj(raw)) return null;
  const name = str(raw.name);
  const task = str(raw.task_name);
  if (!name || !task) return null;
  const external = str(raw.external_id);
  return {
    sourceKey: str(raw.source_key) ?? external ?? name,
    engine: (str(raw.engine) ?? scheduler.split('-')[0] ?? scheduler).slice(0, 40),
    name: name.slice(0, 200),
    task_name: task.slice(0, 500),
    kind: str(raw.kind) ?? 'interval',
    expression: typeof raw.expression === 'string' ? raw.expression : String(raw.expression ?? ''),
    timezone: str(raw.timezone) ?? 'UTC',
    queue: str(raw.queue),
    priority: str(raw.priority) ?? 'normal',
    args: Array.isArray(raw.args) ? raw.args : [],
    kwargs: isObj(raw.kwargs) ? raw.kwargs : {},
    is_enabled: raw.is_enabled !== false,
    last_run_at: ts(raw.last_run_at),
    next_run_at: ts(raw.next_run_at),
    total_runs: Math.max(0, int(raw.total_runs) ?? 0),
    external_id: external,
    catch_up: str(raw.catch_up) ?? 'skip',
    source: str(raw.source) ?? 'agent',
    source_hash: str(raw.source_hash),
  };
}

const REPORTED_FIELDS = ['engine', 'task_name', 'kind', 'expression', 'timezone', 'queue', 'priority', 'args', 'kwargs', 'is_enabled', 'last_run_at', 'total_runs', 'external_id', 'catch_up', 'source', 'source_hash'] as const;

/** Upserts reported schedules of (project, scheduler); with `complete`, removes this agent's (or
 * unreported) rows of that scheduler the snapshot no longer holds. */
async function reconcile(tx: Tx, where: { projectId: string; agentId: string }, scheduler: string, reported: Reported[], complete: boolean): Promise<void> {
  const now = nowIso();
  const nowUs = nowMicros();
  const existing = await schedulesOf(tx, where.projectId, scheduler);
  const byKey = new Map(existing.filter((r) => r.source_key !== null).map((r) => [r.source_key!, r]));
  const byName = new Map(existing.map((r) => [r.name, r]));
  const kept = new Set<string>();
  const names = new Set<string>();
  for (const rep of reported) {
    if (names.has(rep.name)) {
      log.warn({ project_id: where.projectId, scheduler, name: rep.name }, 'a scheduler reported two schedules of one name; the second is ignored');
      continue;
    }
    names.add(rep.name);
    const row = byKey.get(rep.sourceKey) ?? byName.get(rep.name);
    // The scheduler's own next run wins; otherwise keep an expectation still ahead, or compute one.
    const keepNext = row?.next_run_at && (parseIsoMicros(row.next_run_at) ?? 0) > nowUs ? row.next_run_at : null;
    const next = rep.is_enabled ? (rep.next_run_at ?? keepNext ?? nextRunAfter(rep, nowUs)) : null;
    if (row && !kept.has(row.id)) {
      kept.add(row.id);
      const set: Partial<ScheduleRow> = { name: rep.name, source_key: rep.sourceKey, agent_id: where.agentId, reported_at: now, next_run_at: next, misfired_at: null };
      for (const f of REPORTED_FIELDS) if (JSON.stringify(row[f]) !== JSON.stringify(rep[f])) (set as Obj)[f] = rep[f];
      if (rep.is_enabled && !row.is_enabled) Object.assign(set, { paused_by: null, consecutive_failures: 0 });
      if (Object.keys(set).some((k) => (REPORTED_FIELDS as readonly string[]).includes(k) || k === 'name')) set.updated_at = now;
      // A renamed entry must not collide with another row's name inside one statement order.
      const clash = byName.get(rep.name);
      if (clash && clash.id !== row.id) {
        log.warn({ project_id: where.projectId, scheduler, name: rep.name }, 'a reported rename collides with another schedule; left as it was');
        continue;
      }
      await updateSchedule(tx, row.id, set);
    } else if (!row) {
      const id = crypto.randomUUID();
      kept.add(id);
      await insertSchedule(tx, {
        id,
        project_id: where.projectId,
        engine: rep.engine,
        scheduler,
        name: rep.name,
        task_name: rep.task_name,
        kind: rep.kind,
        expression: rep.expression,
        timezone: rep.timezone,
        queue: rep.queue,
        priority: rep.priority,
        args: rep.args,
        kwargs: rep.kwargs,
        is_enabled: rep.is_enabled,
        last_run_at: rep.last_run_at,
        next_run_at: next,
        total_runs: rep.total_runs,
        external_id: rep.external_id,
        source_key: rep.sourceKey,
        catch_up: rep.catch_up,
        source: rep.source,
        source_hash: rep.source_hash,
        agent_id: where.agentId,
        reported_at: now,
        consecutive_failures: 0,
        paused_by: null,
        misfired_at: null,
        created_at: now,
        updated_at: now,
      });
    }
  }
  if (complete) {
    const gone = existing.filter((r) => !kept.has(r.id) && (r.agent_id === where.agentId || r.agent_id === null)).map((r) => r.id);
    await deleteSchedules(tx, gone);
    if (gone.length > 0) log.info({ project_id: where.projectId, scheduler, removed: gone.length }, 'schedules no longer in their scheduler removed');
  }
}

/** Removes reported schedules by their scheduler's keys. */
async function removeReported(tx: Tx, projectId: string, scheduler: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  const want = new Set(keys);
  const rows = await schedulesOf(tx, projectId, scheduler);
  await deleteSchedules(tx, rows.filter((r) => want.has(r.source_key ?? '') || want.has(r.external_id ?? '') || want.has(r.name)).map((r) => r.id));
}

/** One `external_snapshot_frame`: staged; the terminal frame applies the snapshot when all its frames are here. */
async function snapshotFrame(tx: Tx, where: { projectId: string; agentId: string }, engine: string, frame: Obj): Promise<void> {
  const owner = str(frame.owner) ?? engine;
  const streamId = str(frame.stream_id);
  const epoch = int(frame.epoch_number);
  const sequence = int(frame.sequence);
  const snapshotId = str(frame.snapshot_id);
  const kind = frame.frame_kind;
  const index = int(frame.frame_index);
  const count = int(frame.frame_count);
  const rowCount = int(frame.row_count);
  const rows = Array.isArray(frame.schedules) ? frame.schedules : null;
  if (!streamId || epoch === null || sequence === null || !snapshotId || index === null || count === null || rowCount === null || !rows || (kind !== 'rows' && kind !== 'terminal')) {
    log.warn({ agent_id: where.agentId, scheduler: owner }, 'a schedule snapshot frame is malformed; ignored');
    return;
  }
  const stream = await streamOf(tx, where.agentId, owner);
  if (!stream || stream.stream_id !== streamId || stream.epoch_number !== epoch) {
    log.debug({ agent_id: where.agentId, scheduler: owner, epoch }, 'a schedule snapshot frame of another stream or an earlier epoch; ignored');
    return;
  }
  const now = nowIso();
  if (kind === 'rows') {
    await stageFrame(tx, { agent_id: where.agentId, snapshot_id: snapshotId, frame_index: index, scheduler: owner, epoch_number: epoch, sequence, frame_count: count, row_count: rowCount, rows: rows as Obj[], received_at: now });
    return;
  }
  const staged = (await stagedFrames(tx, where.agentId, snapshotId)).filter((f) => f.sequence === sequence && f.epoch_number === epoch);
  const all = staged.flatMap((f) => f.rows);
  const complete = staged.length === count && staged.every((f, i) => f.frame_index === i) && all.length === rowCount;
  await dropFrames(tx, where.agentId, snapshotId, isoMicros(nowMicros() - STAGED_FRAME_TTL_MICROS));
  if (!complete) {
    log.warn({ agent_id: where.agentId, scheduler: owner, frames: staged.length, expected: count }, 'a schedule snapshot ended without all its frames; ignored');
    return;
  }
  if (!(await acceptSequence(tx, where.agentId, owner, streamId, epoch, sequence))) return;
  const reported = all.map((r) => readSchedule(r, owner)).filter((r): r is Reported => r !== null);
  await reconcile(tx, where, owner, reported, true);
}

/** A control or change projection (`external_projection`): upserts and deletes, not complete. */
async function projection(tx: Tx, where: { projectId: string; agentId: string }, engine: string, body: Obj): Promise<void> {
  const owner = str(body.owner) ?? engine;
  const streamId = str(body.stream_id);
  const epoch = int(body.epoch_number);
  const sequence = int(body.sequence);
  if (!streamId || epoch === null || sequence === null || !Array.isArray(body.schedules)) return;
  if (!(await acceptSequence(tx, where.agentId, owner, streamId, epoch, sequence))) return;
  const reported = body.schedules.map((r) => readSchedule(r, owner)).filter((r): r is Reported => r !== null);
  await reconcile(tx, where, owner, reported, body.complete === true);
  const deleted = Array.isArray(body.deleted_source_keys) ? body.deleted_source_keys.filter((k): k is string => typeof k === 'string') : [];
  await removeReported(tx, where.projectId, owner, deleted);
}

/** Applies the schedule events among newly stored records (in the storing transaction). */
export async function applyScheduleEvents(tx: Tx, where: { projectId: string; agentId: string }, records: readonly EventRecord[]): Promise<void> {
  for (const r of records) {
    if (!r.kind.startsWith('schedule.')) continue;
    const d = r.data;
    try {
      if (r.kind === 'schedule.snapshot') {
        if (isObj(d.external_snapshot_frame)) await snapshotFrame(tx, where, r.engine, d.external_snapshot_frame);
        else if (Array.isArray(d.schedules)) {
          const scheduler = str(d.scheduler) ?? r.engine;
          await reconcile(tx, where, scheduler, d.schedules.map((s) => readSchedule(s, scheduler)).filter((s): s is Reported => s !== null), true);
        }
      } else if (r.kind === 'schedule.created' || r.kind === 'schedule.updated' || r.kind === 'schedule.deleted') {
        if (isObj(d.external_projection)) await projection(tx, where, r.engine, d.external_projection);
        else if (isObj(d.schedule)) {
          const scheduler = str(d.schedule.scheduler) ?? r.engine;
          const rep = readSchedule(d.schedule, scheduler);
          if (rep && r.kind === 'schedule.deleted') await removeReported(tx, where.projectId, scheduler, [rep.sourceKey]);
          else if (rep) await reconcile(tx, where, scheduler, [rep], false);
        }
      }
    } catch (e) {
      // A database failure must fail the batch (the agent re-sends); anything else is the content's fault.
      if (e instanceof TypeError || e instanceof RangeError) log.warn({ agent_id: where.agentId, kind: r.kind, err: describeError(e) }, 'a schedule event could not be applied; ignored');
      else throw e;
    }
  }
}

// --- activation ----------------------------------------------------------------------

/** The scheduler adapters of an agent that speak the external schedule protocol. */
export function activatableSchedulers(agent: Pick<AgentRow, 'scheduler_adapters' | 'capabilities' | 'runtime_features'>): string[] {
  if (!agent.runtime_features.includes(EXTERNAL_PROTOCOL_FEATURE)) return [];
  return agent.scheduler_adapters.filter((s) => agent.capabilities[s]?.includes(STABLE_SNAPSHOT_CAPABILITY));
}

/** Connections already handled by this process: agent id -> last_connect_at activated for. */
const activatedFor = new Map<string, string>();

/** Activates a new epoch for every protocol-speaking scheduler adapter of the agents connected to this
 * process over WebSocket whose connection has not had one yet (one process wins each connection). */
export async function activationSweep(ctx: AppContext): Promise<number> {
  const ids = ctx.agentTransport.sockets.agentIds();
  if (ids.length === 0) return 0;
  const t = ctx.db.t.agents;
  let issued = 0;
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await ctx.db.q.select().from(t).where(inArray(t.id, ids.slice(i, i + 500)));
    for (const agent of rows) {
      if (agent.revoked_at !== null || agent.last_connect_at === null || agent.scheduler_adapters.length === 0) continue;
      if (activatedFor.get(agent.id) === agent.last_connect_at) continue;
      for (const scheduler of activatableSchedulers(agent)) issued += await activate(ctx, agent, scheduler);
      activatedFor.set(agent.id, agent.last_connect_at);
      if (activatedFor.size > 100_000) activatedFor.delete(activatedFor.keys().next().value!);
    }
  }
  return issued;
}

async function activate(ctx: AppContext, agent: AgentRow, scheduler: string): Promise<number> {
  const stream = await ctx.db.tx((tx) =>
    advanceStream(tx, {
      agent_id: agent.id,
      scheduler,
      project_id: agent.project_id,
      stream_id: crypto.randomUUID(),
      epoch_uuid: crypto.randomUUID(),
      epoch_number: 1,
      adapter_instance_id: crypto.randomUUID(),
      connect_key: agent.last_connect_at!,
      command_id: null,
      last_sequence: 0,
      activated_at: nowIso(),
    }),
  );
  if (!stream) return 0;
  const command = await issueCommand(
    ctx,
    {
      projectId: agent.project_id,
      agentId: agent.id,
      action: ACTIVATE_ACTION,
      targetType: 'scheduler',
      targetId: scheduler,
      payload: {
        scheduler,
        owner: scheduler,
        source_scope: sourceScopeOf(scheduler),
        stream_id: stream.stream_id,
        epoch_uuid: stream.epoch_uuid,
        epoch_number: stream.epoch_number,
        adapter_instance_id: stream.adapter_instance_id,
        stable_source: true,
      },
      idempotencyKey: `schedule-activate:${agent.id}:${scheduler}:${stream.epoch_number}:${stream.stream_id}`.slice(0, 200),
    },
    SYSTEM_ACTOR,
  );
  await ctx.db.tx((tx) => setStreamCommand(tx, agent.id, scheduler, stream.epoch_number, command.id));
  log.info({ agent_id: agent.id, scheduler, epoch: stream.epoch_number, command_id: command.id }, 'external schedule stream activated');
  return 1;
}

export const __test = { activatedFor };
