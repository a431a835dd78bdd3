// The inbound half of a session: turns frame text into a verified frame or a
// FrameError, applying z4j's receiver rules in z4j's order (agent-protocol.md
// §2.3): shape and version, then HMAC (so unsigned input cannot probe
// anything else), then content rules, then the replay guard last so a refused
// frame leaves seq and nonce state untouched. Everything before the replay
// guard depends on the frame alone (decode), so any thread can run it; the
// guard (admit) runs in the session's order.
import { readEvents, type ReadEvents } from '../ingest/events.ts';
import { nowMicros } from '../lib/clock.ts';
import { hmacHex, safeEqual } from '../lib/crypto.ts';
import { isPlainJsonText } from '../lib/sorted-json.ts';
import { FrameError } from './errors.ts';
import {
  assertSecret,
  INBOUND_SIGNED_TYPES,
  isHandshakeType,
  isSignedType,
  PROTOCOL_VERSION,
  quickEnvelopeText,
  receivedFrameHmac,
  type FrameBinding,
  type HandshakeType,
  type SignedFrameType,
} from './frames.ts';
import { toPlainJson, toPlainObject, type PlainJson, type PlainObject } from './json-convert.ts';
import { isJsonObject, JsonError, parseJsonMembers, type CanonicalMembers, type JsonObject, type JsonValue } from './json.ts';
import { ReplayGuard, type FrameStamp } from './replay.ts';
import { isValidTelemetryLoss } from './telemetry.ts';
import { parseFrameTimestamp } from './timestamp.ts';

export interface VerifiedSignedFrame {
  kind: 'signed';
  type: SignedFrameType;
  /** The frame id when it is a string; the brain's fast path does not validate it further. */
  id: string | null;
  seq: bigint;
  nonce: string;
  ts: string;
  tsMicros: number;
  /** Plain JS view; `{}` when the frame had no payload (or null). An event_batch's
   * `events` list is not kept here: it is read into `batch`. */
  payload: PlainObject;
  /** event_batch only: its event records, read at decoding (null when `events` is not a list). */
  batch?: ReadEvents | null;
}

/** A signed frame that passed every check but the replay guard. Plain data (structured-clone safe). */
export interface DecodedSignedFrame {
  kind: 'decoded';
  type: SignedFrameType;
  id: string | null;
  /** seq, nonce and ts as sent. */
  stamp: FrameStamp;
  payload: PlainObject;
  batch?: ReadEvents | null;
}

/** hello / hello_ack: unsigned, returned for the caller to validate strictly. */
export interface HandshakeFrame {
  kind: 'handshake';
  type: HandshakeType;
  id: string | null;
  payload: PlainJson | null;
}

export type VerifiedFrame = VerifiedSignedFrame | HandshakeFrame;
export type DecodedFrame = DecodedSignedFrame | HandshakeFrame;

export interface FrameVerifierOptions {
  /** Signed types this side accepts; others are protocol errors. Default: what agents send. */
  accept?: readonly SignedFrameType[];
}

const HMAC_HEX_CHARS = 64;
const COMMAND_RESULT_STATUSES: ReadonlySet<string> = new Set(['success', 'failed']);
const TWO = BigInt(PROTOCOL_VERSION);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const stringOrNull = (v: JsonValue | undefined): string | null => (typeof v === 'string' ? v : null);
// Hex is plain ASCII (one unit a code point): the spread only for anything else.
const codePointLength = (s: string): number => (isPlainJsonText(s) ? s.length : [...s].length);

export class FrameVerifier {
  private readonly guard = new ReplayGuard();
  private readonly accepted: ReadonlySet<string>;

  constructor(
    readonly secret: Uint8Array,
    readonly binding: FrameBinding,
    /** Kept so a decoding thread can build an equal verifier. */
    readonly options: FrameVerifierOptions = {},
  ) {
    assertSecret(secret);
    this.accepted = new Set(options.accept ?? INBOUND_SIGNED_TYPES);
  }

  /** Seq of the last accepted signed frame (0n before any). */
  get lastSeq(): bigint {
    return this.guard.lastSeq;
  }

  verify(text: string): VerifiedFrame {
    return this.admit(this.decode(text));
  }

  /** Every check that depends on the frame alone; `now` (µs) bounds event times. Throws FrameError. */
  decode(text: string, now = nowMicros()): DecodedFrame {
    return this.quickEventBatch(text, now) ?? this.decodeFully(text, now);
  }

  /** The bulk of what agents send, an event_batch of plain data, verified from
   * JSON.parse and JSON.stringify (quickEnvelopeText): null sends the frame
   * down the full path, which decides alone what to refuse and how. What this
   * accepts, the full path accepts with the same result, but for two kinds of
   * frame no agent sends: one signed over the quick text where the canonical
   * text differs (12 for 12.0, also in `v` and `seq`: read as the integers
   * they equal; only a holder of the key can make one), and one with a
   * repeated key whose overwritten value the full parser cannot read (a lone
   * surrogate, 1e400): JSON.parse drops it unread, as Python does, where the
   * full path refuses the frame. */
  private quickEventBatch(text: string, now: number): DecodedSignedFrame | null {
    let frame: unknown;
    let envelope: string;
    try {
      frame = JSON.parse(text);
      if (!isRecord(frame) || frame.type !== 'event_batch' || frame.v !== PROTOCOL_VERSION || !this.accepted.has('event_batch')) return null;
      envelope = quickEnvelopeText(frame, this.binding);
    } catch {
      return null; // not JSON, or a value the full path reads otherwise or refuses (keysSorted)
    }
    const payload = frame.payload ?? null;
    const hmac = frame.hmac;
    if ((payload !== null && !isRecord(payload)) || typeof hmac !== 'string' || hmac.length !== HMAC_HEX_CHARS) return null;
    if (!safeEqual(hmacHex(this.secret, envelope), hmac)) return null;
    const { seq, nonce, ts } = frame;
    // An integral seq is a safe int here, and in an honestly signed frame an int
    // lexeme: 5.0 would have made a different text.
    const stamp: FrameStamp = { seq: Number.isInteger(seq) ? BigInt(seq as number) : seq, nonce, ts, tsMicros: typeof ts === 'string' ? parseFrameTimestamp(ts) : null };
    const id = typeof frame.id === 'string' ? frame.id : null;
    const { events, ...rest } = (payload ?? {}) as PlainObject;
    const batch = Array.isArray(events)
      ? readEvents({ events }, { projectId: this.binding.projectId, agentId: this.binding.agentId, frameId: id, nowMicros: now })
      : null;
    return { kind: 'decoded', type: 'event_batch', id, stamp, payload: rest, batch };
  }

  /** decode without the quick path (what it falls back to; tests compare the two). */
  decodeFully(text: string, now = nowMicros()): DecodedFrame {
    let parsed: JsonValue;
    let members: CanonicalMembers | null;
    try {
      ({ value: parsed, members } = parseJsonMembers(text));
    } catch (e) {
      if (e instanceof JsonError) throw new FrameError('malformed', `frame is not valid JSON: ${e.message}`);
      throw e;
    }
    if (!isJsonObject(parsed) || !members) throw new FrameError('protocol', 'frame must be a JSON object');
    const frame = parsed;

    // Version before type, so a newer peer's new frame type reads as a version
    // mismatch (recoverable) rather than as garbage. A missing `v` falls through.
    const v = frame.v;
    if (typeof v === 'bigint' && v !== TWO) throw new FrameError('version', 'unsupported frame version');
    if (v !== undefined && v !== null && typeof v !== 'bigint') throw new FrameError('protocol', 'frame v must be an integer');
    const type = frame.type;
    if (typeof type !== 'string') throw new FrameError('protocol', 'frame missing required type');

    if (isHandshakeType(type)) {
      // Parsed by Pydantic on the brain, where `v` defaults to 2 but null is invalid.
      if (v === null) throw new FrameError('protocol', 'frame v must be an integer');
      const payload = frame.payload === undefined ? null : toPlainJson(frame.payload);
      return { kind: 'handshake', type, id: stringOrNull(frame.id), payload };
    }
    if (!isSignedType(type)) throw new FrameError('protocol', 'unknown frame type');
    if (!this.accepted.has(type)) throw new FrameError('protocol', 'unexpected frame type for this direction');
    if (v !== TWO) throw new FrameError('protocol', 'frame v missing');
    const payload = frame.payload ?? null;
    if (payload !== null && !isJsonObject(payload)) {
      throw new FrameError('protocol', 'signed frame payload must be a JSON object');
    }

    this.checkHmac(frame, members);

    if (type === 'command_result') {
      const status = payload?.status;
      if (typeof status !== 'string' || !COMMAND_RESULT_STATUSES.has(status)) {
        throw new FrameError('protocol', "command_result payload status must be 'success' or 'failed'");
      }
    }
    if ((type === 'heartbeat' || type === 'agent_status') && payload !== null) {
      const loss = payload.telemetry_loss;
      if (loss !== undefined && loss !== null && !isValidTelemetryLoss(loss)) {
        throw new FrameError('protocol', 'invalid telemetry loss counters');
      }
    }

    const id = stringOrNull(frame.id);
    const ts = frame.ts;
    const stamp: FrameStamp = { seq: frame.seq, nonce: frame.nonce, ts, tsMicros: typeof ts === 'string' ? parseFrameTimestamp(ts) : null };
    const plain = payload === null ? {} : toPlainObject(payload);
    if (type !== 'event_batch') return { kind: 'decoded', type, id, stamp, payload: plain };
    const { events, ...rest } = plain;
    const batch = Array.isArray(events)
      ? readEvents({ events }, { projectId: this.binding.projectId, agentId: this.binding.agentId, frameId: id, nowMicros: now })
      : null;
    return { kind: 'decoded', type, id, stamp, payload: rest, batch };
  }

  /** The replay guard, in the session's order: a decoded frame becomes a verified one. Throws FrameError('replay'). */
  admit(frame: DecodedFrame): VerifiedFrame {
    if (frame.kind === 'handshake') return frame;
    const accepted = this.guard.accept(frame.stamp);
    return { kind: 'signed', type: frame.type, id: frame.id, ...accepted, payload: frame.payload, batch: frame.batch };
  }

  private checkHmac(frame: JsonObject, members: CanonicalMembers): void {
    const provided = frame.hmac;
    if (provided === undefined || provided === null || provided === '') {
      throw new FrameError('signature', 'missing hmac signature');
    }
    if (typeof provided !== 'string' || codePointLength(provided) !== HMAC_HEX_CHARS) {
      throw new FrameError('signature', 'invalid hmac signature length');
    }
    // The parser built each member's canonical text (and refused what has none).
    const expected = receivedFrameHmac(this.secret, members, this.binding);
    if (!safeEqual(expected, provided)) throw new FrameError('signature', 'hmac signature mismatch');
  }
}
