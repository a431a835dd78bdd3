// JSON as the z4j agents' HMAC sees it. A frame's signature covers CPython's
// json.dumps(json.loads(wire), sort_keys=True, separators=(",", ":"),
// ensure_ascii=False, allow_nan=False), so we must keep what JSON.parse loses:
// the int/float distinction of each number lexeme (`12.0` stays a float) and
// integers of any size. Integers are bigint, floats are JsonFloat; a plain JS
// number is deliberately not a JsonValue, so an ambiguous `1` cannot slip into
// signed bytes (build outbound values with toJsonValue in json-convert.ts).
import { isPlainJsonText } from '../lib/sorted-json.ts';

/** A JSON number whose lexeme had `.`, `e` or `E` (Python float). */
export class JsonFloat {
  constructor(readonly value: number) {
    if (!Number.isFinite(value)) throw new JsonError('NaN and Infinity are not valid JSON');
  }
}

export type JsonValue = null | boolean | string | bigint | JsonFloat | JsonValue[] | JsonObject;
/** Objects are built without a prototype so keys such as `__proto__` are plain data. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** Malformed JSON, or a value Python could not encode canonically. Messages
 * carry positions, never the offending text. */
export class JsonError extends Error {
  override name = 'JsonError';
}

// Deeper nesting is rejected rather than risking the stack. CPython's own
// limit (its recursion limit, ~1000) varies by version; no agent payload
// comes close to either.
export const MAX_JSON_DEPTH = 512;
// CPython refuses int <-> str conversions beyond 4300 digits (ValueError), so
// the brain cannot load such a frame either; it also bounds BigInt parsing.
export const MAX_INT_DIGITS = 4300;

export const isJsonObject = (v: JsonValue | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonFloat);

/** True for `{}` literals and prototype-less objects, false for class instances (Date, Map, Buffer...). */
export function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

export const newJsonObject = (): JsonObject => Object.create(null) as JsonObject;

// Python's json number grammar (the C scanner matches ASCII digits only).
const NUMBER_RE = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const HEX4_RE = /^[0-9a-fA-F]{4}$/;
const SHORT_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

class Parser {
  pos = 0;
  /** With `canonical`: the canonical text (canonicalJson) of the value read last. */
  canon = '';
  /** With `canonical`: the top-level object's members. */
  members: CanonicalMembers | null = null;
  constructor(
    private readonly text: string,
    /** Also build each value's canonical text as it is read: the lexeme itself
     * for strings without escapes and for integers (the common case), so the
     * HMAC check needs no second walk over the value, quoting every string. */
    private readonly canonical = false,
  ) {}

  fail(message: string): never {
    throw new JsonError(`${message} at offset ${this.pos}`);
  }

  // JSON whitespace only: Python's json does not skip \v, \f or U+FEFF either.
  ws(): void {
    const t = this.text;
    let i = this.pos;
    if (t.charCodeAt(i) > 0x20) return; // compact JSON: nothing to skip
    for (;;) {
      const c = t.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
    this.pos = i;
  }

  value(depth: number): JsonValue {
    const t = this.text;
    const c = t[this.pos];
    if (c === '"') return this.string();
    if (c === '{') return this.object(depth + 1);
    if (c === '[') return this.array(depth + 1);
    if (t.startsWith('null', this.pos)) return this.literal(4, null);
    if (t.startsWith('true', this.pos)) return this.literal(4, true);
    if (t.startsWith('false', this.pos)) return this.literal(5, false);
    // Python's loads accepts these and dumps(allow_nan=False) then fails: malformed either way.
    if (t.startsWith('NaN', this.pos) || t.startsWith('Infinity', this.pos) || t.startsWith('-Infinity', this.pos)) {
      this.fail('NaN and Infinity are not valid JSON');
    }
    return this.number();
  }

  literal<T>(length: number, v: T): T {
    if (this.canonical) this.canon = this.text.slice(this.pos, this.pos + length);
    this.pos += length;
    return v;
  }

  number(): bigint | JsonFloat {
    // Integers of up to 15 digits (nearly every number in a frame) without the regex.
    const t = this.text;
    let i = this.pos;
    if (t.charCodeAt(i) === 0x2d) i++;
    const first = t.charCodeAt(i);
    if (first >= 0x30 && first <= 0x39) {
      let end = i + 1;
      if (first !== 0x30) while (end - i < 16 && isDigit(t.charCodeAt(end))) end++;
      const next = t.charCodeAt(end);
      if (end - i < 16 && next !== 0x2e && next !== 0x65 && next !== 0x45 && !isDigit(next)) {
        const lexeme = t.slice(this.pos, end);
        this.pos = end;
        if (this.canonical) this.canon = lexeme === '-0' ? '0' : lexeme;
        return BigInt(lexeme);
      }
    }
    NUMBER_RE.lastIndex = this.pos;
    const m = NUMBER_RE.exec(this.text);
    if (!m) this.fail('expecting a value');
    const lexeme = m[0];
    if (m[1] === undefined && m[2] === undefined) {
      const digits = lexeme.length - (lexeme.startsWith('-') ? 1 : 0);
      if (digits > MAX_INT_DIGITS) this.fail('integer has too many digits');
      this.pos += lexeme.length;
      const int = BigInt(lexeme); // BigInt('-0') is 0n, and Python prints int -0 as 0
      if (this.canonical) this.canon = int.toString();
      return int;
    }
    // Number() rounds correctly, like Python's float(); overflow gives Infinity.
    const value = Number(lexeme);
    if (!Number.isFinite(value)) this.fail('number out of float range');
    this.pos += lexeme.length;
    if (this.canonical) this.canon = pythonFloatRepr(value);
    return new JsonFloat(value);
  }

  string(): string {
    const t = this.text;
    let i = this.pos + 1;
    let start = i;
    let out = '';
    for (;;) {
      if (i >= t.length) {
        this.pos = i;
        this.fail('unterminated string');
      }
      const c = t.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x5c) {
        out += t.slice(start, i);
        const e = t[i + 1];
        if (e === 'u') {
          const hex = t.slice(i + 2, i + 6);
          if (!HEX4_RE.test(hex)) {
            this.pos = i;
            this.fail('invalid \\u escape');
          }
          // UTF-16 units; an escaped surrogate pair joins up on its own.
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else {
          const short = e === undefined ? undefined : SHORT_ESCAPES[e];
          if (short === undefined) {
            this.pos = i;
            this.fail('invalid escape');
          }
          out += short;
          i += 2;
        }
        start = i;
        continue;
      }
      if (c < 0x20) {
        this.pos = i;
        this.fail('control character in string');
      }
      i++;
    }
    const escaped = start !== this.pos + 1;
    out += t.slice(start, i);
    // Python keeps a lone surrogate from `\ud800`, then cannot UTF-8 encode the
    // canonical form; refuse it here so such a frame is simply malformed.
    if (!out.isWellFormed()) this.fail('lone surrogate in string');
    // Without escapes the lexeme is canonical already: what the canonical form
    // escapes (`"`, `\`, control characters) cannot appear raw in a string.
    if (this.canonical) this.canon = escaped ? quote(out) : t.slice(this.pos, i + 1);
    this.pos = i + 1;
    return out;
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_JSON_DEPTH) this.fail('nesting too deep');
    const out: JsonValue[] = [];
    this.pos++;
    this.ws();
    if (this.text[this.pos] === ']') {
      this.pos++;
      this.canon = '[]';
      return out;
    }
    let canon = '[';
    for (;;) {
      this.ws();
      out.push(this.value(depth));
      if (this.canonical) canon += out.length > 1 ? `,${this.canon}` : this.canon;
      this.ws();
      const c = this.text[this.pos];
      this.pos++;
      if (c === ']') {
        this.canon = `${canon}]`;
        return out;
      }
      if (c !== ',') {
        this.pos--;
        this.fail("expecting ',' or ']'");
      }
    }
  }

  object(depth: number): JsonObject {
    if (depth > MAX_JSON_DEPTH) this.fail('nesting too deep');
    const out = newJsonObject();
    // With `canonical`: the keys and their members' canonical value texts, in parallel.
    const keys: string[] | null = this.canonical ? [] : null;
    const canons: string[] = [];
    // Positions of keys, made at the first repeated key: a frame of repeated
    // keys would otherwise cost a scan of the keys for each (before its HMAC is checked).
    let positions: Map<string, number> | null = null;
    this.pos++;
    this.ws();
    if (this.text[this.pos] === '}') {
      this.pos++;
      this.canon = '{}';
      if (keys && depth === 1) this.members = { keys, canons };
      return out;
    }
    for (;;) {
      this.ws();
      if (this.text[this.pos] !== '"') this.fail('expecting a property name');
      const key = this.string();
      this.ws();
      if (this.text[this.pos] !== ':') this.fail("expecting ':'");
      this.pos++;
      this.ws();
      const seen = keys !== null && key in out;
      out[key] = this.value(depth); // duplicate keys: the last one wins, as in Python
      if (keys) {
        if (seen) {
          positions ??= new Map(keys.map((k, i) => [k, i]));
          canons[positions.get(key)!] = this.canon;
        } else {
          positions?.set(key, keys.length);
          keys.push(key);
          canons.push(this.canon);
        }
      }
      this.ws();
      const c = this.text[this.pos];
      this.pos++;
      if (c === '}') {
        // The top level's own text is not needed: the HMAC covers an envelope built from its members.
        if (keys && depth === 1) this.members = { keys, canons };
        else if (keys) this.canon = canonicalObject(keys, canons);
        return out;
      }
      if (c !== ',') {
        this.pos--;
        this.fail("expecting ',' or '}'");
      }
    }
  }
}

/** Parses JSON text like CPython's json.loads followed by a check that the
 * result can be canonicalised (finite floats, no lone surrogates). */
export function parseJson(text: string): JsonValue {
  const p = new Parser(text);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.pos !== text.length) p.fail('extra data after the value');
  return v;
}

/** An object's keys (insertion order, each once) and the canonical text of each value. */
export interface CanonicalMembers {
  keys: string[];
  canons: string[];
}

/** parseJson, and when the text is an object, the canonical text of each of
 * its member values (what canonicalJson would write for them). */
export function parseJsonMembers(text: string): { value: JsonValue; members: CanonicalMembers | null } {
  const p = new Parser(text, true);
  p.ws();
  const value = p.value(0);
  p.ws();
  if (p.pos !== text.length) p.fail('extra data after the value');
  return { value, members: isJsonObject(value) ? p.members : null };
}

/** Python `repr(float)`: shortest round-trip digits, positional for decimal
 * exponents -4..15 (always with a fractional part), else `d.ddde±XX`. */
export function pythonFloatRepr(x: number): string {
  if (!Number.isFinite(x)) throw new JsonError('NaN and Infinity are not valid JSON');
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // toExponential() without an argument yields the shortest round-trip digits.
  const [mantissa = '', expText = ''] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exp = Number(expText);
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
    const intLen = exp + 1;
    if (digits.length <= intLen) return `${sign}${digits}${'0'.repeat(intLen - digits.length)}.0`;
    return `${sign}${digits.slice(0, intLen)}.${digits.slice(intLen)}`;
  }
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const absExp = Math.abs(exp);
  return `${sign}${mant}e${exp < 0 ? '-' : '+'}${absExp < 10 ? '0' : ''}${absExp}`;
}

// Code point order for UTF-16 strings (what Python's sorted() does on str):
// shift surrogates above U+E000-U+FFFF at the first differing unit. Only
// differs from the default sort for keys mixing astral and U+E000+ chars.
const unitRank = (u: number): number => (u < 0xd800 ? u : u < 0xe000 ? u + 0x2000 : u - 0x800);

export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return unitRank(x) - unitRank(y);
  }
  return a.length - b.length;
}

function quote(s: string): string {
  if (isPlainJsonText(s)) return `"${s}"`;
  if (!s.isWellFormed()) throw new JsonError('lone surrogate in string');
  // For well-formed strings JSON.stringify escapes exactly what Python's
  // ensure_ascii=False does: `"`, `\` and U+0000-U+001F (\b \f \n \r \t short,
  // others \u00xx lowercase); everything else, U+2028/9 included, stays raw.
  return JSON.stringify(s);
}

/** Insertion sort of keys by UTF-16 units, their values alongside: for the few
 * keys of most objects, faster than Array.prototype.sort (for plain ASCII keys
 * that is code point order). */
function sortFew(keys: string[], values: string[]): void {
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    const v = values[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      values[j + 1] = values[j]!;
      j--;
    }
    keys[j + 1] = k;
    values[j + 1] = v;
  }
}

/** The canonical text of an object from its distinct keys and the canonical
 * text of each value (both arrays are reordered). Keys go in code point order,
 * as Python's sorted() orders str; plain ASCII keys, the usual case, are
 * quoted without escaping and ordered by the default comparison, which is
 * code point order for them. */
export function canonicalObject(keys: string[], canons: string[]): string {
  let plainKeys = true;
  for (let i = 0; i < keys.length && plainKeys; i++) plainKeys = isPlainJsonText(keys[i]!);
  if (plainKeys && keys.length <= 16) sortFew(keys, canons);
  else {
    const order = keys.map((_, i) => i).sort((a, b) => (plainKeys ? (keys[a]! < keys[b]! ? -1 : 1) : compareCodePoints(keys[a]!, keys[b]!)));
    const k = order.map((i) => keys[i]!);
    const c = order.map((i) => canons[i]!);
    for (let i = 0; i < k.length; i++) {
      keys[i] = k[i]!;
      canons[i] = c[i]!;
    }
  }
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (i > 0) out += ',';
    out += `${plainKeys ? `"${key}"` : quote(key)}:${canons[i]}`;
  }
  return `${out}}`;
}

// Built by concatenation (JSC joins string ropes cheaply).
function write(v: JsonValue, sorted: boolean, depth: number): string {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'string') return quote(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof JsonFloat) return pythonFloatRepr(v.value);
  if (typeof v !== 'object') throw new TypeError(`not a JsonValue: ${typeof v} (use toJsonValue for plain JS values)`);
  if (depth >= MAX_JSON_DEPTH) throw new JsonError('nesting too deep');
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ',';
      out += write(v[i] as JsonValue, sorted, depth + 1); // a hole is undefined and throws
    }
    return `${out}]`;
  }
  if (!isPlainObject(v)) throw new TypeError('not a JsonValue: only plain objects serialise');
  const keys = Object.keys(v);
  if (sorted) return canonicalObject(keys, keys.map((key) => write(v[key] as JsonValue, sorted, depth + 1)));
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (i > 0) out += ',';
    out += `${quote(key)}:${write(v[key] as JsonValue, sorted, depth + 1)}`;
  }
  return `${out}}`;
}

/** The canonical text a z4j HMAC covers (see the header comment). */
export const canonicalJson = (value: JsonValue): string => write(value, true, 0);

/** Compact JSON keeping object insertion order; for wire text whose key order
 * is only cosmetic (receivers re-canonicalise). */
export const compactJson = (value: JsonValue): string => write(value, false, 0);
