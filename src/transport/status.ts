// agent_status frames as health samples, and the telemetry-loss counters both
// heartbeat and agent_status may carry (validated by the verifier already).
import type { HealthSampleRow } from '../agents/store.ts';
import { nowIso } from '../lib/clock.ts';
import { storableObject } from '../ingest/storable.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import type { PlainObject } from './json-convert.ts';

const COUNTERS = ['capacity_evicted_frames', 'content_rejected_frames', 'event_records', 'command_results', 'other_frames', 'unclassified_frames'];

/** A stable text of the loss report when it counts any loss; null when every counter is zero. */
export function telemetryLossKey(loss: Record<string, unknown>): string | null {
  const counts = COUNTERS.map((k) => Number(loss[k] ?? 0));
  const adapter = typeof loss.adapter_events === 'object' && loss.adapter_events !== null ? (loss.adapter_events as Record<string, unknown>) : {};
  const any = counts.some((n) => n > 0) || Object.values(adapter).some((n) => Number(n) > 0);
  return any ? sortedJson(storableObject(loss as PlainObject)) : null;
}

export function agentStatusSampleRow(
  where: { agentId: string; projectId: string; workerId: string },
  frameId: string,
  capturedAt: string,
  payload: PlainObject,
): HealthSampleRow {
  const stored = storableObject(payload);
  const loss = stored.telemetry_loss;
  return {
    id: crypto.randomUUID(),
    project_id: where.projectId,
    agent_id: where.agentId,
    frame_id: frameId.slice(0, 64),
    worker_id: where.workerId,
    captured_at: capturedAt,
    received_at: nowIso(),
    telemetry_loss: typeof loss === 'object' && loss !== null && !Array.isArray(loss) ? (loss as Record<string, unknown>) : null,
    payload: stored,
  };
}
