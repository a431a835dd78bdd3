// The one frame router behind both transports: a verified signed frame goes
// in, an outcome comes out, and everything after acceptance (storage,
// projection, command bookkeeping, health samples, warnings) is the same
// whichever transport carried it. Outcomes follow the z4j brain:
//   durable   stored (or nothing to store): accepted, acknowledged
//   drop      refused for good (re-sending would fail the same way): accepted, acknowledged
//   transient storage failed: rejected, the agent re-sends
//   upgrade_required  needs a newer scheduler adapter: rejected
//   revoked   the agent was revoked: the transport ends the request / connection
import { lockAgentForIngest, storeHealthSample } from '../agents/service.ts';
import { recordCommandAck, recordCommandResult } from '../commands/service.ts';
import type { Tx } from '../db/connect.ts';
import { groupedTx } from '../db/group-commit.ts';
import { storeEventBatches, type EventRecord } from '../ingest/service.ts';
import { isUuid } from '../lib/ids.ts';
import { isoMicros, nowIso, nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { scheduleCommandResult, scheduleEventsStored } from '../schedules/jobs.ts';
import { logger } from '../lib/log.ts';
import { projectAdapterHealth } from '../tasks/service.ts';
import type { AppContext } from '../server/context.ts';
import type { PlainObject } from './json-convert.ts';
import { agentStatusSampleRow, telemetryLossKey } from './status.ts';
import type { VerifiedSignedFrame } from './verifier.ts';
import type { FrameContext } from './session-state.ts';

const log = logger('agent.router');

export interface BatchAck {
  received: number;
  accepted: number;
  rejected: number;
}

export type FrameOutcome =
  | { kind: 'durable'; ack?: BatchAck }
  | { kind: 'drop'; message: string; ack?: BatchAck }
  | { kind: 'transient'; message: string }
  | { kind: 'upgrade_required'; message: string }
  | { kind: 'revoked' };

export const STATUS_SAMPLES_PER_MINUTE = 12;
const LOSS_WARNING_INTERVAL_MICROS = 60_000_000;
/** Events committed per transaction when consecutive batches are grouped (long-poll uploads). */
const EVENTS_PER_TRANSACTION = 5000;

class Revoked extends Error {}

/** The ingest path's counters; registered when the agent jobs start so a scrape shows them at zero. */
export function agentFrameMetrics(ctx: AppContext) {
  return {
    frames: ctx.metrics.counter('svc_agent_frames_total', 'Signed agent frames routed, by transport, type and outcome.', ['transport', 'type', 'outcome']),
    events: ctx.metrics.counter('svc_events_ingested_total', 'Task events newly stored.'),
    tasks: ctx.metrics.counter('svc_tasks_total', 'Task state changes reported by newly stored events, by state.', ['state']),
    late: ctx.metrics.counter('svc_command_late_results_total', 'command_result frames for commands that had already ended.'),
  };
}

/** Routes frames in order. Consecutive event_batch frames share one transaction.
 * When the agent turns out to be revoked the returned list stops there (its last
 * outcome is `revoked`): nothing after it is processed. */
export async function routeFrames(ctx: AppContext, fc: FrameContext, frames: VerifiedSignedFrame[]): Promise<FrameOutcome[]> {
  const out: FrameOutcome[] = [];
  const m = agentFrameMetrics(ctx);
  let i = 0;
  while (i < frames.length) {
    let outcomes: FrameOutcome[];
    const frame = frames[i]!;
    if (frame.type === 'event_batch') {
      const group: VerifiedSignedFrame[] = [];
      let events = 0;
      while (i < frames.length && frames[i]!.type === 'event_batch' && (group.length === 0 || events < EVENTS_PER_TRANSACTION)) {
        const f = frames[i++]!;
        events += f.batch?.records.length ?? 0;
        group.push(f);
      }
      outcomes = await routeEventBatches(ctx, fc, group);
    } else {
      i++;
      outcomes = [await routeOne(ctx, fc, frame)];
    }
    for (const o of outcomes) {
      out.push(o);
      if (o.kind === 'revoked') break;
    }
    if (out[out.length - 1]?.kind === 'revoked') break;
  }
  // Counted once per (type, outcome): per-frame label lookups cost more than the rest of a heartbeat.
  const tally = new Map<string, number>();
  out.forEach((o, k) => {
    const key = `${frames[k]!.type}\u0000${o.kind}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
  });
  for (const [key, n] of tally) {
    const [type, outcome] = key.split('\u0000');
    m.frames.inc({ transport: fc.transport, type, outcome }, n);
  }
  return out;
}

async function routeEventBatches(ctx: AppContext, fc: FrameContext, group: VerifiedSignedFrame[]): Promise<FrameOutcome[]> {
  // The verifier read each batch's records while decoding it.
  const read = group.map((f) => f.batch ?? null);
  const outcomes: (FrameOutcome | null)[] = read.map((r, k) => {
    if (r === null) return { kind: 'drop', message: 'event_batch payload has no events list', ack: { received: 0, accepted: 0, rejected: 0 } };
    if (ctx.agentTransport.needsSchedulerUpgrade(r.records, fc)) {
      return { kind: 'upgrade_required', message: `frame ${group[k]!.id ?? ''}: scheduler adapter upgrade required`.trim() };
    }
    return null;
  });
  const todo = outcomes.flatMap((o, k) => (o === null ? [k] : []));
  if (todo.length === 0) return outcomes as FrameOutcome[];
  try {
    const m = agentFrameMetrics(ctx);
    // Uploads stored meanwhile may share this transaction (src/db/group-commit.ts); one still
    // being decoded in a thread is worth waiting a moment for. A revoked agent writes
    // nothing and returns, so the others still commit.
    const stored = await groupedTx(ctx.db, async (tx) => {
      if (!(await lockAgentForIngest(tx, fc.agentId))) return null;
      const res = await storeEventBatches(
        tx,
        { projectId: fc.projectId, agentId: fc.agentId },
        todo.map((k) => ({ frameId: group[k]!.id, records: read[k]!.records })),
        nowIso(),
      );
      await scheduleEventsStored(ctx, tx, { projectId: fc.projectId, agentId: fc.agentId }, res.added);
      tx.afterCommit(() => {
        m.events.inc(res.stored.reduce((a, b) => a + b, 0));
        // One increment per state, not per event (a labelled increment hashes its labels).
        const perState = new Map<string, number>();
        for (const state of res.states) perState.set(state, (perState.get(state) ?? 0) + 1);
        for (const [state, n] of perState) m.tasks.inc({ state }, n);
        if (res.added.length > 0) ctx.reactions.tasksStored(fc.projectId, res.added);
      });
      return res.stored;
    }, ctx.agentTransport.decoders.busy);
    // Frames before the first stored one keep their outcome; the batch ends at the revocation.
    if (stored === null) return [...(outcomes.slice(0, todo[0]!) as FrameOutcome[]), { kind: 'revoked' }];
    todo.forEach((k, n) => {
      const r = read[k]!;
      const received = r.records.length + r.dropped;
      outcomes[k] = { kind: 'durable', ack: { received, accepted: stored[n]!, rejected: received - stored[n]! } };
    });
  } catch (e) {
    log.error({ agent_id: fc.agentId, project_id: fc.projectId, err: describeError(e) }, 'storing an event batch failed');
    for (const k of todo) outcomes[k] = { kind: 'transient', message: `frame ${group[k]!.id ?? ''}: storage failed; re-send` };
  }
  return outcomes as FrameOutcome[];
}

/** Runs `fn` in a transaction that first checks the agent is still live. */
async function asLiveAgent<T>(ctx: AppContext, fc: FrameContext, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ctx.db.tx(async (tx) => {
    if (!(await lockAgentForIngest(tx, fc.agentId))) throw new Revoked();
    return fn(tx);
  });
}

async function routeOne(ctx: AppContext, fc: FrameContext, frame: VerifiedSignedFrame): Promise<FrameOutcome> {
  try {
    switch (frame.type) {
      case 'heartbeat':
        return await heartbeat(ctx, fc, frame.payload);
      case 'agent_status':
        return await agentStatus(ctx, fc, frame);
      case 'command_ack':
        if (!isUuid(frame.id)) return { kind: 'drop', message: 'command_ack id is not a command id' };
        if (await asLiveAgent(ctx, fc, (tx) => recordCommandAck(tx, fc.agentId, frame.id!.toLowerCase()))) ctx.reactions.commandsChanged?.(fc.projectId, [frame.id!.toLowerCase()]);
        return { kind: 'durable' };
      case 'command_result': {
        if (!isUuid(frame.id)) return { kind: 'drop', message: 'command_result id is not a command id' };
        const open = await asLiveAgent(ctx, fc, (tx) =>
          recordCommandResult(tx, fc.agentId, frame.id!.toLowerCase(), frame.payload as { status: unknown }),
        );
        if (!open) agentFrameMetrics(ctx).late.inc();
        if (open) scheduleCommandResult(ctx, frame.id!.toLowerCase());
        if (open) ctx.reactions.commandsChanged?.(fc.projectId, [frame.id!.toLowerCase()]);
        return { kind: 'durable' };
      }
      case 'registry_delta':
        log.debug({ agent_id: fc.agentId }, 'registry_delta received (not used)');
        return { kind: 'durable' };
      case 'error':
        log.warn({ agent_id: fc.agentId, code: String(frame.payload.code ?? '').slice(0, 80) }, 'agent reported an error frame');
        return { kind: 'durable' };
      default:
        return { kind: 'drop', message: `frame type ${frame.type} is not accepted from agents` };
    }
  } catch (e) {
    if (e instanceof Revoked) return { kind: 'revoked' };
    log.error({ agent_id: fc.agentId, type: frame.type, err: describeError(e) }, 'routing a frame failed');
    return { kind: 'transient', message: `frame ${frame.id ?? ''}: processing failed; re-send` };
  }
}

const asObject = (v: unknown): Record<string, unknown> | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v !== 'bigint' ? (v as Record<string, unknown>) : null;

/** Logs telemetry loss at most once a minute per connection, and only when the counters changed. */
function noteTelemetryLoss(fc: FrameContext, payload: PlainObject): void {
  const loss = asObject(payload.telemetry_loss);
  if (!loss) return;
  const key = telemetryLossKey(loss);
  if (key === null || key === fc.lossKey) return;
  const now = nowMicros();
  if (now - fc.lossWarnedAt < LOSS_WARNING_INTERVAL_MICROS) return;
  fc.lossWarnedAt = now;
  fc.lossKey = key;
  const fields = { agent_id: fc.agentId, project_id: fc.projectId, worker_id: fc.workerId, telemetry_loss: JSON.parse(key) };
  log.warn(fields, 'agent reports telemetry loss');
}

async function heartbeat(ctx: AppContext, fc: FrameContext, payload: PlainObject): Promise<FrameOutcome> {
  noteTelemetryLoss(fc, payload);
  const health = asObject(payload.adapter_health);
  if (health && Object.keys(health).length > 0) {
    await asLiveAgent(ctx, fc, (tx) => projectAdapterHealth(tx, fc.projectId, health, nowIso()));
  }
  return { kind: 'durable' };
}

async function agentStatus(ctx: AppContext, fc: FrameContext, frame: VerifiedSignedFrame): Promise<FrameOutcome> {
  noteTelemetryLoss(fc, frame.payload);
  if (ctx.config.SVC_AGENT_STATUS_DISABLED) return { kind: 'drop', message: 'status samples are not stored (SVC_AGENT_STATUS_DISABLED)' };
  if (frame.id === null) return { kind: 'drop', message: 'agent_status without a frame id' };
  const now = nowMicros();
  fc.statusTimes = fc.statusTimes.filter((t) => t > now - 60_000_000);
  if (fc.statusTimes.length >= STATUS_SAMPLES_PER_MINUTE) return { kind: 'drop', message: 'status sample dropped: more than 12 per minute' };
  fc.statusTimes.push(now);
  const row = agentStatusSampleRow(fc, frame.id, isoMicros(frame.tsMicros), frame.payload);
  // Shares a transaction with other agents' samples and liveness (agents/pulse.ts), which checks the agent as asLiveAgent does.
  if ((await storeHealthSample(ctx.db, row)) === 'revoked') return { kind: 'revoked' };
  return { kind: 'durable' };
}

export type { EventRecord };
