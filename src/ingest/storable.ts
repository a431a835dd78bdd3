// Agent data as stored in JSON columns: integers beyond 2^53 become decimal
// strings (JSON.stringify refuses bigint; a number would lose digits) and NUL
// characters become U+FFFD (PostgreSQL jsonb refuses \u0000). Everything else
// is kept as sent.
import type { PlainJson, PlainObject } from '../transport/json-convert.ts';

function storable(value: PlainJson): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(storable);
  return storableObject(value);
}

export function storableObject(value: PlainObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const k = key.includes('\u0000') ? key.replaceAll('\u0000', '\ufffd') : key;
    const v = storable(value[key] as PlainJson);
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

export const storableValue = (value: PlainJson): unknown => storable(value);
