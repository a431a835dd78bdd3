// Event records of an event_batch frame, read the way the z4j brain reads them
// (agent-protocol.md §3.4): records without engine or kind are dropped, unknown
// kinds are stored as `unknown`, occurred_at is clamped to [now - 400 d,
// now + 60 s], and each record gets a content-derived id.
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';
import type { PlainJson, PlainObject } from '../transport/json-convert.ts';
import { eventId, uuidV5, EVENT_ID_NAMESPACE } from './event-ids.ts';
import { storableObject } from './storable.ts';

export const EVENT_KINDS: ReadonlySet<string> = new Set([
  'task.sent',
  'task.received',
  'task.started',
  'task.succeeded',
  'task.failed',
  'task.retried',
  'task.revoked',
  'task.rejected',
  'worker.online',
  'worker.offline',
  'worker.heartbeat',
  'queue.depth_report',
  'schedule.run_started',
  'schedule.run_completed',
  'schedule.created',
  'schedule.updated',
  'schedule.deleted',
  'schedule.snapshot',
  'unknown',
]);

/** The brain's model cap on one batch. */
export const MAX_EVENTS_PER_BATCH = 5000;
const MAX_ENGINE_CHARS = 40;
const MAX_TASK_ID_CHARS = 200;
const PAST_MICROS = 400 * 86_400_000_000;
const FUTURE_MICROS = 60_000_000;

export interface EventRecord {
  id: string;
  engine: string;
  kind: string;
  taskId: string;
  occurredAt: string;
  occurredMicros: number;
  data: Record<string, unknown>;
}

const isObject = (v: PlainJson | undefined): v is PlainObject => typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v !== 'bigint';

/** Python isoformat() text, naive values read as UTC; null when unreadable. */
function occurredMicrosOf(value: PlainJson | undefined): number | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  return parseIsoMicros(text) ?? parseIsoMicros(`${text}Z`);
}

export interface ReadEvents {
  records: EventRecord[];
  /** Records refused for missing engine or kind (or not objects). */
  dropped: number;
  /** Records beyond MAX_EVENTS_PER_BATCH, not processed. */
  trimmed: number;
}

/** Reads `payload.events` of a verified event_batch. `frameId` keys fallback ids
 * so a re-sent frame maps records without a usable id to the same rows. */
export function readEvents(payload: PlainObject, ctx: { projectId: string; agentId: string; frameId: string | null; nowMicros: number }): ReadEvents {
  const list = Array.isArray(payload.events) ? payload.events : [];
  const trimmed = Math.max(0, list.length - MAX_EVENTS_PER_BATCH);
  const records: EventRecord[] = [];
  let dropped = 0;
  const lo = ctx.nowMicros - PAST_MICROS;
  const hi = ctx.nowMicros + FUTURE_MICROS;
  for (let i = 0; i < list.length - trimmed; i++) {
    const raw = list[i];
    if (!isObject(raw)) {
      dropped++;
      continue;
    }
    const engine = typeof raw.engine === 'string' ? raw.engine.trim().slice(0, MAX_ENGINE_CHARS) : '';
    const kindText = typeof raw.kind === 'string' ? raw.kind.trim() : '';
    if (engine === '' || kindText === '') {
      dropped++;
      continue;
    }
    const kind = EVENT_KINDS.has(kindText) ? kindText : 'unknown';
    const taskId = typeof raw.task_id === 'string' ? raw.task_id.slice(0, MAX_TASK_ID_CHARS) : '';
    const occurred = Math.min(hi, Math.max(lo, occurredMicrosOf(raw.occurred_at) ?? ctx.nowMicros));
    const index = i;
    const id = eventId(ctx.projectId, { taskId, kind, occurredMicros: occurred, agentEventId: raw.id }, () =>
      ctx.frameId !== null
        ? uuidV5(EVENT_ID_NAMESPACE, `${ctx.projectId}:${ctx.agentId}:${ctx.frameId}:${index}`)
        : crypto.randomUUID(),
    );
    records.push({
      id,
      engine,
      kind,
      taskId,
      occurredAt: isoMicros(occurred),
      occurredMicros: occurred,
      data: isObject(raw.data) ? storableObject(raw.data) : {},
    });
  }
  return { records, dropped, trimmed };
}
