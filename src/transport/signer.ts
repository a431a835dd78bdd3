// The outbound half of a session: every signed frame the server sends on one
// session (command, event_batch_ack, error) takes the next value of a single
// seq counter starting at 1. The agent rejects any frame whose seq is not
// above the last one it accepted, so frames must reach the socket in the
// order they were signed: sign at send time, from one place per session.
import { nowMicros } from '../lib/clock.ts';
import { randomToken } from '../lib/crypto.ts';
import { toJsonValue, type JsonInputObject } from './json-convert.ts';
import { compactJson, isJsonObject, newJsonObject } from './json.ts';
import { assertSecret, frameHmac, PROTOCOL_VERSION, type FrameBinding, type SignedFrameType } from './frames.ts';
import { formatFrameTimestamp } from './timestamp.ts';

export interface FrameSignerOptions {
  /** Nonce source; defaults to token_urlsafe(16), 22 characters. Tests pin it. */
  nonce?: () => string;
}

const MAX_FRAME_ID_CHARS = 64;

export class FrameSigner {
  private seq = 0;
  private readonly makeNonce: () => string;

  constructor(
    private readonly secret: Uint8Array,
    private readonly binding: FrameBinding,
    options: FrameSignerOptions = {},
  ) {
    assertSecret(secret);
    this.makeNonce = options.nonce ?? (() => randomToken(16));
  }

  /** The seq of the last frame signed (0 before the first). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Stamps ts/nonce/seq, signs, and returns the wire text (the binding
   * fields are signed but not sent). Any signed type is accepted so tests
   * can also play the agent; the server itself sends OUTBOUND_SIGNED_TYPES. */
  sign(type: SignedFrameType, id: string, payload: JsonInputObject): string {
    // Agents parse ids as 1..64 characters; a longer one is a bug on our side.
    if (id.length === 0 || [...id].length > MAX_FRAME_ID_CHARS) throw new RangeError('frame id must be 1..64 characters');
    const body = toJsonValue(payload);
    if (!isJsonObject(body)) throw new TypeError('frame payload must be an object');
    this.seq += 1;
    // Python's field order, for readers of captures; receivers re-canonicalise anyway.
    const frame = newJsonObject();
    frame.v = BigInt(PROTOCOL_VERSION);
    frame.id = id;
    frame.ts = formatFrameTimestamp(nowMicros());
    frame.nonce = this.makeNonce();
    frame.seq = BigInt(this.seq);
    frame.hmac = '';
    frame.type = type;
    frame.payload = body;
    frame.hmac = frameHmac(this.secret, frame, this.binding);
    return compactJson(frame);
  }
}
