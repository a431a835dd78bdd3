// The inbound half of a session: turns frame text into a verified frame or a
// FrameError, applying z4j's receiver rules in z4j's order (agent-protocol.md
// §2.3): shape and version, then HMAC (so unsigned input cannot probe
// anything else), then content rules, then the replay guard last so a refused
// frame leaves seq and nonce state untouched.
import { safeEqual } from '../lib/crypto.ts';
import { FrameError } from './errors.ts';
import {
  assertSecret,
  frameHmac,
  INBOUND_SIGNED_TYPES,
  isHandshakeType,
  isSignedType,
  PROTOCOL_VERSION,
  type FrameBinding,
  type HandshakeType,
  type SignedFrameType,
} from './frames.ts';
import { toPlainJson, toPlainObject, type PlainJson, type PlainObject } from './json-convert.ts';
import { isJsonObject, JsonError, parseJson, type JsonObject, type JsonValue } from './json.ts';
import { ReplayGuard } from './replay.ts';
import { isValidTelemetryLoss } from './telemetry.ts';

export interface VerifiedSignedFrame {
  kind: 'signed';
  type: SignedFrameType;
  /** The frame id when it is a string; the brain's fast path does not validate it further. */
  id: string | null;
  seq: bigint;
  nonce: string;
  ts: string;
  tsMicros: number;
  /** Plain JS view; `{}` when the frame had no payload (or null). */
  payload: PlainObject;
  /** The parsed frame exactly as verified (hmac included), int/float and big ints intact. */
  raw: JsonObject;
}

/** hello / hello_ack: unsigned, returned for the caller to validate strictly. */
export interface HandshakeFrame {
  kind: 'handshake';
  type: HandshakeType;
  id: string | null;
  payload: PlainJson | null;
  raw: JsonObject;
}

export type VerifiedFrame = VerifiedSignedFrame | HandshakeFrame;

export interface FrameVerifierOptions {
  /** Signed types this side accepts; others are protocol errors. Default: what agents send. */
  accept?: readonly SignedFrameType[];
}

const HMAC_HEX_CHARS = 64;
const COMMAND_RESULT_STATUSES: ReadonlySet<string> = new Set(['success', 'failed']);
const TWO = BigInt(PROTOCOL_VERSION);

const stringOrNull = (v: JsonValue | undefined): string | null => (typeof v === 'string' ? v : null);
const codePointLength = (s: string): number => [...s].length;

export class FrameVerifier {
  private readonly guard = new ReplayGuard();
  private readonly accepted: ReadonlySet<string>;

  constructor(
    private readonly secret: Uint8Array,
    private readonly binding: FrameBinding,
    options: FrameVerifierOptions = {},
  ) {
    assertSecret(secret);
    this.accepted = new Set(options.accept ?? INBOUND_SIGNED_TYPES);
  }

  /** Seq of the last accepted signed frame (0n before any). */
  get lastSeq(): bigint {
    return this.guard.lastSeq;
  }

  verify(text: string): VerifiedFrame {
    let parsed: JsonValue;
    try {
      parsed = parseJson(text);
    } catch (e) {
      if (e instanceof JsonError) throw new FrameError('malformed', `frame is not valid JSON: ${e.message}`);
      throw e;
    }
    if (!isJsonObject(parsed)) throw new FrameError('protocol', 'frame must be a JSON object');
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
      return { kind: 'handshake', type, id: stringOrNull(frame.id), payload, raw: frame };
    }
    if (!isSignedType(type)) throw new FrameError('protocol', 'unknown frame type');
    if (!this.accepted.has(type)) throw new FrameError('protocol', 'unexpected frame type for this direction');
    if (v !== TWO) throw new FrameError('protocol', 'frame v missing');
    const payload = frame.payload ?? null;
    if (payload !== null && !isJsonObject(payload)) {
      throw new FrameError('protocol', 'signed frame payload must be a JSON object');
    }

    this.checkHmac(frame);

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

    const stamp = this.guard.accept(frame);
    return {
      kind: 'signed',
      type,
      id: stringOrNull(frame.id),
      ...stamp,
      payload: payload === null ? {} : toPlainObject(payload),
      raw: frame,
    };
  }

  private checkHmac(frame: JsonObject): void {
    const provided = frame.hmac;
    if (provided === undefined || provided === null || provided === '') {
      throw new FrameError('signature', 'missing hmac signature');
    }
    if (typeof provided !== 'string' || codePointLength(provided) !== HMAC_HEX_CHARS) {
      throw new FrameError('signature', 'invalid hmac signature length');
    }
    let expected: string;
    try {
      expected = frameHmac(this.secret, frame, this.binding);
    } catch (e) {
      // The parser already refuses what canonicalisation would; keep the kind honest if that ever drifts.
      if (e instanceof JsonError) throw new FrameError('malformed', 'frame cannot be canonicalised');
      throw e;
    }
    if (!safeEqual(expected, provided)) throw new FrameError('signature', 'hmac signature mismatch');
  }
}
