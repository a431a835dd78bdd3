// Bridges between ordinary JS values and the lexeme-preserving JsonValue of
// json.ts: outbound payloads are written as plain objects, inbound payloads
// are handed to the rest of the server as plain objects.
import { JsonError, JsonFloat, MAX_JSON_DEPTH, isPlainObject, newJsonObject, type JsonObject, type JsonValue } from './json.ts';

/** What toJsonValue accepts: JsonValues plus plain JS numbers, and `undefined`
 * object members (skipped, like JSON.stringify). */
export type JsonInput = null | boolean | string | number | bigint | JsonFloat | readonly JsonInput[] | JsonInputObject;
export type JsonInputObject = { readonly [key: string]: JsonInput | undefined };

/** Marks a number as a Python float even when it is integral: jsonFloat(60) is emitted as `60.0`. */
export const jsonFloat = (value: number): JsonFloat => new JsonFloat(value);

/** A JS number becomes an int when integral and a float otherwise. Integral
 * numbers beyond 2^53 are refused: they are rarely meant as floats and have
 * already lost digits as ints, so say which with bigint or jsonFloat(). */
export function toJsonValue(input: JsonInput, depth = 0): JsonValue {
  if (input === null || typeof input === 'boolean' || typeof input === 'string' || typeof input === 'bigint') return input;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new JsonError('NaN and Infinity are not valid JSON');
    if (!Number.isInteger(input)) return new JsonFloat(input);
    if (!Number.isSafeInteger(input)) throw new TypeError('integer beyond 2^53: pass a bigint, or jsonFloat() for a float');
    return BigInt(input);
  }
  if (input instanceof JsonFloat) return input;
  if (typeof input !== 'object') throw new TypeError(`not JSON-serialisable: ${typeof input}`);
  if (depth >= MAX_JSON_DEPTH) throw new JsonError('nesting too deep');
  if (Array.isArray(input)) {
    const out: JsonValue[] = [];
    for (let i = 0; i < input.length; i++) {
      const item = input[i] as JsonInput | undefined;
      if (item === undefined) throw new TypeError('undefined array element is not JSON');
      out.push(toJsonValue(item, depth + 1));
    }
    return out;
  }
  if (!isPlainObject(input)) throw new TypeError('not JSON-serialisable: only plain objects convert');
  const out = newJsonObject();
  for (const [key, item] of Object.entries(input as JsonInputObject)) {
    if (item !== undefined) out[key] = toJsonValue(item, depth + 1);
  }
  return out;
}

/** Plain JS view of a JsonValue: ints within ±(2^53-1) and all floats become
 * numbers; larger ints stay bigint so no digit is lost. */
export type PlainJson = null | boolean | string | number | bigint | PlainJson[] | PlainObject;
export type PlainObject = { [key: string]: PlainJson };

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

export function toPlainJson(v: JsonValue): PlainJson {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return v <= MAX_SAFE && v >= MIN_SAFE ? Number(v) : v;
  if (v instanceof JsonFloat) return v.value;
  if (Array.isArray(v)) return v.map(toPlainJson);
  return toPlainObject(v);
}

export function toPlainObject(v: JsonObject): PlainObject {
  const out: PlainObject = {};
  for (const key of Object.keys(v)) {
    const item = toPlainJson(v[key] as JsonValue);
    // Assigning `__proto__` on a normal object would set its prototype instead.
    if (key === '__proto__') {
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    } else {
      out[key] = item;
    }
  }
  return out;
}
