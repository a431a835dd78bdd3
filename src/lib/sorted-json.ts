// JSON with object keys sorted at every level and no whitespace: the stable
// text that service-side MACs (audit chain, audit webhook bodies) are
// computed over. Values are plain JSON data; undefined members are dropped,
// as JSON.stringify drops them.
export function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError('value is not representable as JSON');
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : sortedJson(v))).join(',')}]`;
  const entries = Object.keys(value)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

// Printable ASCII without quote or backslash needs no escaping: most strings
// on the hot paths (ids, hashes, timestamps, names) quote by concatenation,
// several times faster than JSON.stringify.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A string as a JSON string literal: JSON.stringify's text, faster for plain ASCII. */
export const quoteJson = (s: string): string => (PLAIN.test(s) ? `"${s}"` : JSON.stringify(s));

/** True when quoteJson(s) needs no escaping (so it is also well-formed UTF-16). */
export const isPlainJsonText = (s: string): boolean => PLAIN.test(s);
