// Frame vocabulary of z4j wire protocol v2 and the one signing rule both
// directions share: hmac = hex HMAC-SHA256(project secret, canonical JSON of
// the frame minus `hmac`, with agent_id/project_id/session_id set to the
// session's bound strings). Binding those three in means a frame captured on
// one session, agent or project never verifies on another.
import { hmacHex } from '../lib/crypto.ts';
import { MIN_SECRET_BYTES } from './credentials.ts';
import { canonicalJson, canonicalObject, MAX_JSON_DEPTH, newJsonObject, type CanonicalMembers, type JsonObject, type JsonValue } from './json.ts';

/** Frame field `v`; handshake payloads carry it as the string "2". */
export const PROTOCOL_VERSION = 2;

export const HANDSHAKE_TYPES = ['hello', 'hello_ack'] as const;
/** Signed frames an agent may send (registry_delta and error are defined but unused by agents). */
export const INBOUND_SIGNED_TYPES = [
  'event_batch',
  'heartbeat',
  'agent_status',
  'command_ack',
  'command_result',
  'registry_delta',
  'error',
] as const;
/** Signed frames the server sends. */
export const OUTBOUND_SIGNED_TYPES = ['command', 'event_batch_ack', 'error'] as const;

export type HandshakeType = (typeof HANDSHAKE_TYPES)[number];
export type InboundSignedType = (typeof INBOUND_SIGNED_TYPES)[number];
export type OutboundSignedType = (typeof OUTBOUND_SIGNED_TYPES)[number];
export type SignedFrameType = InboundSignedType | OutboundSignedType;

const SIGNED_TYPES: ReadonlySet<string> = new Set<string>([...INBOUND_SIGNED_TYPES, ...OUTBOUND_SIGNED_TYPES]);
export const isSignedType = (type: string): type is SignedFrameType => SIGNED_TYPES.has(type);
export const isHandshakeType = (type: string): type is HandshakeType => type === 'hello' || type === 'hello_ack';

/** The strings one session's frames are bound to, both directions. WS: the
 * values sent in hello_ack; long-poll: the agent/project UUIDs and the
 * X-Z4J-Session-Nonce header. Use canonical lowercase UUID strings. */
export interface FrameBinding {
  readonly agentId: string;
  readonly projectId: string;
  readonly sessionId: string;
}

export function assertSecret(secret: Uint8Array): void {
  if (secret.length < MIN_SECRET_BYTES) throw new RangeError(`frame secret must be at least ${MIN_SECRET_BYTES} bytes`);
}

/** The object a frame's hmac covers. Unknown keys and nulls stay in: they are signed too. */
export function signingEnvelope(frame: JsonObject, binding: FrameBinding): JsonObject {
  const envelope = newJsonObject();
  for (const key of Object.keys(frame)) {
    if (key !== 'hmac') envelope[key] = frame[key] as JsonValue;
  }
  envelope.agent_id = binding.agentId;
  envelope.project_id = binding.projectId;
  envelope.session_id = binding.sessionId;
  return envelope;
}

/** Lowercase hex HMAC-SHA256 of the frame's canonical envelope (its UTF-8 bytes). */
export const frameHmac = (secret: Uint8Array, frame: JsonObject, binding: FrameBinding): string =>
  hmacHex(secret, canonicalJson(signingEnvelope(frame, binding)));

/** frameHmac of a received frame from the canonical text of each of its members
 * (parseJsonMembers): the same envelope, without writing the frame out again. */
export function receivedFrameHmac(secret: Uint8Array, members: CanonicalMembers, binding: FrameBinding): string {
  const keys: string[] = [];
  const canons: string[] = [];
  members.keys.forEach((key, i) => {
    if (key === 'hmac' || key === 'agent_id' || key === 'project_id' || key === 'session_id') return;
    keys.push(key);
    canons.push(members.canons[i]!);
  });
  keys.push('agent_id', 'project_id', 'session_id');
  canons.push(canonicalJson(binding.agentId), canonicalJson(binding.projectId), canonicalJson(binding.sessionId));
  return hmacHex(secret, canonicalObject(keys, canons));
}

/** A parsed value with its object keys sorted at every level (`__proto__` kept
 * as data). Throws, sending the frame down the full path, where that path
 * reads the value otherwise or refuses it: an integral number beyond 2^53 (an
 * int with more digits than a double keeps, or a float such as 1e21), one out
 * of range (1e400 parses as Infinity), nesting deeper than MAX_JSON_DEPTH. */
function keysSorted(value: unknown, depth: number): unknown {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) throw new RangeError('a number the full path reads');
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_JSON_DEPTH) throw new RangeError('nesting too deep');
  if (Array.isArray(value)) return value.map((item) => keysSorted(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = keysSorted((value as Record<string, unknown>)[key], depth + 1);
    if (key === '__proto__') Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    else out[key] = item;
  }
  return out;
}

/** The signing envelope of a frame read with JSON.parse, written by
 * JSON.stringify with keys sorted: for a frame whose integers are exact in a
 * double, whose floats JS writes as Python does (1.5, 0.25; not 12.0 or
 * 1e-05), whose strings are well-formed and whose keys are not array indices,
 * this is the canonical text, byte for byte, and an order of magnitude faster
 * to make. For any other frame it is a different text, so a signature made
 * over the canonical form fails to match it and the caller falls back to
 * receivedFrameHmac; some values throw instead (see keysSorted). */
export function quickEnvelopeText(frame: Record<string, unknown>, binding: FrameBinding): string {
  // A spread copies a `__proto__` member as data, as JSON.parse made it.
  const envelope: Record<string, unknown> = { ...frame };
  delete envelope.hmac;
  envelope.agent_id = binding.agentId;
  envelope.project_id = binding.projectId;
  envelope.session_id = binding.sessionId;
  return JSON.stringify(keysSorted(envelope, 0));
}
