// `telemetry_loss` in heartbeat and agent_status payloads (z4j >= 1.11). The
// brain validates it strictly even on the signed fast path and refuses the
// frame otherwise, before the replay guard. Mirrors its model: ids required,
// counters optional, unknown keys ignored; lengths count code points as
// Python's len() does.
import { isJsonObject, type JsonValue } from './json.ts';

const MAX_COUNTER = 2n ** 53n - 1n;
const COUNTERS = [
  'capacity_evicted_frames',
  'content_rejected_frames',
  'event_records',
  'command_results',
  'other_frames',
  'unclassified_frames',
] as const;
export const MAX_ADAPTER_EVENT_ENTRIES = 32;

/** Length in code points, without building an array for huge strings. */
function codePointLengthWithin(s: string, min: number, max: number): boolean {
  if (s.length < min || s.length > max * 2) return false;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    if (u < 0xdc00 || u > 0xdfff) n++; // a low surrogate finishes a pair already counted
  }
  return n >= min && n <= max;
}

// Booleans and floats are not bigint, so `true` or `1.0` fail as Pydantic strict mode does.
const isCounter = (v: JsonValue | undefined): boolean => typeof v === 'bigint' && v >= 0n && v <= MAX_COUNTER;
const isName = (v: JsonValue | undefined): boolean => typeof v === 'string' && codePointLengthWithin(v, 1, 64);

export function isValidTelemetryLoss(value: JsonValue): boolean {
  if (!isJsonObject(value)) return false;
  if (!isName(value.buffer_id) || !isName(value.runtime_id)) return false;
  for (const key of COUNTERS) {
    if (key in value && !isCounter(value[key])) return false;
  }
  if (!('adapter_events' in value)) return true;
  const events = value.adapter_events;
  if (!isJsonObject(events)) return false;
  const names = Object.keys(events);
  return names.length <= MAX_ADAPTER_EVENT_ENTRIES && names.every((name) => isName(name) && isCounter(events[name]));
}
