// The unsigned WebSocket handshake: reading an agent's `hello` strictly enough
// to refuse garbage (close 4400) and other protocol versions (close 4426), and
// writing the `hello_ack` the agent parses in Pydantic strict mode (integers
// must be JSON integers, so it is serialised from lexeme-typed values).
import type { HelloFacts } from '../agents/service.ts';
import { nowMicros } from '../lib/clock.ts';
import { randomBytes } from 'node:crypto';
import { toJsonValue, toPlainJson, type PlainJson } from './json-convert.ts';
import { compactJson, isJsonObject, JsonError, parseJson, type JsonValue } from './json.ts';
import { formatFrameTimestamp } from './timestamp.ts';

export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = ['2'];
export const HEARTBEAT_INTERVAL_SECONDS = 10;

export type HelloResult = { ok: true; facts: HelloFacts } | { ok: false; code: 4400 | 4426; reason: string; protocolVersion?: string };

const bad = (reason: string): HelloResult => ({ ok: false, code: 4400, reason });

function strings(v: PlainJson | undefined, maxItems: number, maxChars: number): string[] | null {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > maxItems) return null;
  const out: string[] = [];
  for (const item of v) {
    if (typeof item !== 'string' || item.length > maxChars) return null;
    if (!out.includes(item)) out.push(item);
  }
  return out;
}

const optionalString = (v: PlainJson | undefined, max: number): string | null | undefined =>
  v === undefined || v === null ? null : typeof v === 'string' && v.length <= max ? v : undefined;

/** Reads the first message of a connection, which must be a `hello`. */
export function readHello(text: string): HelloResult {
  let frame: JsonValue;
  try {
    frame = parseJson(text);
  } catch (e) {
    if (e instanceof JsonError) return bad('first frame is not JSON');
    throw e;
  }
  if (!isJsonObject(frame) || frame.type !== 'hello') return bad('first frame must be hello');
  if (frame.v !== undefined && frame.v !== 2n) return bad('hello v must be the integer 2');
  if (!isJsonObject(frame.payload)) return bad('hello payload must be an object');
  const p = toPlainJson(frame.payload) as Record<string, PlainJson>;
  const version = p.protocol_version;
  if (typeof version !== 'string' || version.length > 40) return bad('hello protocol_version must be a string');
  if (!SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return { ok: false, code: 4426, reason: 'unsupported protocol version', protocolVersion: version };

  const framework = optionalString(p.framework, 40);
  const agentVersion = optionalString(p.agent_version, 40);
  const engines = strings(p.engines, 64, 64);
  const schedulers = strings(p.schedulers, 64, 64);
  const features = p.runtime_features === undefined ? undefined : strings(p.runtime_features, 64, 64);
  const workerId = optionalString(p.worker_id, 128);
  const role = optionalString(p.worker_role, 32);
  const startedAt = optionalString(p.worker_started_at, 64);
  const pid = p.worker_pid;
  if (framework === undefined || agentVersion === undefined || !engines || !schedulers || features === null) {
    return bad('hello payload has fields of the wrong type');
  }
  if (workerId === undefined || role === undefined || startedAt === undefined) return bad('hello worker fields have the wrong type');
  const pidOk = pid === undefined || pid === null || (typeof pid === 'number' && Number.isInteger(pid) && pid >= 0 && pid < 2 ** 31);
  if (!pidOk) return bad('hello worker_pid must be an integer');

  const capabilities: Record<string, string[]> = {};
  if (p.capabilities !== undefined && p.capabilities !== null) {
    if (typeof p.capabilities !== 'object' || Array.isArray(p.capabilities) || typeof p.capabilities === 'bigint') return bad('hello capabilities must be an object');
    for (const [name, list] of Object.entries(p.capabilities)) {
      const tokens = strings(list, 256, 128);
      if (!tokens) return bad('hello capabilities must map names to lists of strings');
      capabilities[name.slice(0, 64)] = tokens;
    }
  }
  const host = p.host;
  const isHost = typeof host === 'object' && host !== null && !Array.isArray(host) && typeof host !== 'bigint';
  const hostName = isHost && typeof host.name === 'string' ? host.name.slice(0, 200) : null;
  return {
    ok: true,
    facts: {
      protocolVersion: version,
      framework: framework ?? '',
      engines,
      schedulers,
      capabilities,
      runtimeFeatures: features ?? null,
      metadata: { host_name: hostName, agent_version: agentVersion ?? null, worker_role: role ?? null },
      worker: workerId ? { workerId, role: role ?? null, pid: typeof pid === 'number' ? pid : null, startedAt: startedAt ?? null } : null,
    },
  };
}

/** The unsigned hello_ack: the strings the session's frames are bound to. */
export function helloAck(fields: { brainVersion: string; agentId: string; projectId: string; sessionId: string; maxFrameBytes: number }): string {
  const frame = toJsonValue({
    v: 2,
    id: `hack_${randomBytes(6).toString('hex')}`,
    ts: formatFrameTimestamp(nowMicros()),
    type: 'hello_ack',
    payload: {
      protocol_version: '2',
      brain_version: fields.brainVersion.slice(0, 40),
      agent_id: fields.agentId,
      project_id: fields.projectId,
      session_id: fields.sessionId,
      heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS,
      max_frame_size_bytes: fields.maxFrameBytes,
    },
  });
  return compactJson(frame);
}

/** Engines whose retry-by-reference contract the hello's capabilities attest. */
export const retryEnginesOf = (capabilities: Record<string, string[]>): Set<string> =>
  new Set(Object.entries(capabilities).flatMap(([engine, tokens]) => (tokens.includes('retry_by_reference_v1') ? [engine] : [])));
