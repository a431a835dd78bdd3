// Shared values for the transport-*.test.ts files: the §8.4 binding and secret,
// a ManualClock at the heartbeat vector's instant, and a helper that signs
// hand-made frames (any field may be altered or removed) the way an agent would.
import { expect } from 'bun:test';
import { ManualClock, nowMicros } from '../../src/lib/clock.ts';
import { deriveProjectSecret } from '../../src/transport/credentials.ts';
import { FrameError, type FrameErrorKind } from '../../src/transport/errors.ts';
import { frameHmac, type FrameBinding } from '../../src/transport/frames.ts';
import { toJsonValue, type JsonInput } from '../../src/transport/json-convert.ts';
import { compactJson, type JsonObject } from '../../src/transport/json.ts';
import { formatFrameTimestamp } from '../../src/transport/timestamp.ts';

export const MASTER = 'z4j-test-master-secret-0123456789abcdef';
export const PROJECT_ID = '0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2f';
export const SECRET = deriveProjectSecret(MASTER, PROJECT_ID);
export const BINDING: FrameBinding = {
  agentId: '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b',
  projectId: PROJECT_ID,
  sessionId: '5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716',
};
/** 2026-05-01T12:00:00.123456Z in epoch microseconds. */
export const T0 = Date.UTC(2026, 4, 1, 12, 0, 0, 123) * 1000 + 456;
export const newClock = (): ManualClock => new ManualClock(T0);

export const HEARTBEAT_PAYLOAD = { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} };

let nonceCounter = 0;
const freshNonce = (): string => `nonce-${++nonceCounter}`.padEnd(22, 'x');

export interface SignOptions {
  binding?: FrameBinding;
  secret?: Uint8Array;
  /** Replaces the computed hmac (undefined removes it). */
  hmac?: JsonInput | undefined;
}

/** A heartbeat at the current clock with seq 1 and a fresh nonce, with
 * `fields` merged over it (a field set to undefined is removed), then signed. */
export function agentFrame(fields: Record<string, JsonInput | undefined> = {}, options: SignOptions = {}): string {
  const base: Record<string, JsonInput | undefined> = {
    v: 2,
    id: 'hb_0123456789ab',
    ts: formatFrameTimestamp(nowMicros()),
    nonce: freshNonce(),
    seq: 1,
    type: 'heartbeat',
    payload: HEARTBEAT_PAYLOAD,
    ...fields,
  };
  const frame = toJsonValue(base) as JsonObject;
  if ('hmac' in options) {
    if (options.hmac !== undefined) frame.hmac = toJsonValue(options.hmac);
  } else {
    frame.hmac = frameHmac(options.secret ?? SECRET, frame, options.binding ?? BINDING);
  }
  return compactJson(frame);
}

export function expectFrameError(fn: () => unknown, kind: FrameErrorKind, rule?: RegExp): FrameError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(FrameError);
    const error = e as FrameError;
    expect(error.kind).toBe(kind);
    if (rule) expect(error.message).toMatch(rule);
    return error;
  }
  throw new Error(`expected a FrameError of kind ${kind}`);
}

/** Random JSON texts, the same for a seed: random whitespace, strings with
 * escapes (some as \uXXXX where a raw character would do), astral and
 * separator characters, numbers Python reads as ints or floats (some past
 * 2^53), `__proto__` and duplicate keys. */
export function randomJsonWriter(seed: number) {
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor(seed / 65536) % n; // the high bits: the low ones of this generator repeat quickly
  };
  const ws = (): string => [' ', '', '\n', '\t ', ''][rand(5)]!;
  const CHARS = ['a', 'Z', ' ', '"', '\\', '/', '\n', '\u0001', '\u007f', 'é', '\u2028', '\ue000', '\u{1F600}', '_', '0'];
  const text = (): string => Array.from({ length: rand(6) }, () => CHARS[rand(CHARS.length)]!).join('');
  const str = (s: string): string =>
    `"${[...s].map((c) => (rand(4) === 0 ? c.split('').map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('') : JSON.stringify(c).slice(1, -1))).join('')}"`;
  const NUMBERS = ['0', '-0', '12', '-7', '123456789012345', '1234567890123456789', '1.0', '-0.0', '1e3', '2.5E-7', '0.1', '1e40', '100', '9007199254740993', '9007199254740994'];
  function wire(depth: number): string {
    const kind = depth > 3 ? rand(4) : rand(6);
    if (kind === 0) return ['null', 'true', 'false'][rand(3)]!;
    if (kind === 1) return NUMBERS[rand(NUMBERS.length)]!;
    if (kind === 2 || kind === 3) return str(text());
    if (kind === 4) return `[${ws()}${Array.from({ length: rand(4) }, () => wire(depth + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
    const keys = Array.from({ length: rand(7) }, () => (rand(5) === 0 ? '__proto__' : text()));
    if (keys.length > 0 && rand(3) === 0) keys.push(keys[0]!); // a duplicate key
    return `{${ws()}${keys.map((k) => `${str(k)}${ws()}:${ws()}${wire(depth + 1)}`).join(`${ws()},${ws()}`)}${ws()}}`;
  }
  return { rand, wire, str, text };
}
