// Content-derived event ids (agent-protocol.md §3.4.3), so the same lifecycle
// event reported twice, by a re-sent batch or by a second agent, is stored once.

/** Namespace of the z4j brain's event ids (a fact of the protocol, kept for parity). */
export const EVENT_ID_NAMESPACE = 'c4d2c84e-2f0a-4b6c-9c5b-1d6f9a1e7c2a';

const hexOf = (uuid: string): string => uuid.replace(/-/g, '').toLowerCase();

function formatUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

// Per namespace, a SHA-1 state with the namespace already fed in, copied for
// each id (Bun's native hasher; made on first use, so importing this module
// needs no Bun API).
const namespaced = new Map<string, Bun.CryptoHasher>();

/** SHA-1 of namespace + name, hex (the hash of a name-based UUID). */
function nameHash(namespace: string, name: string): string {
  let base = namespaced.get(namespace);
  if (!base) namespaced.set(namespace, (base = new Bun.CryptoHasher('sha1').update(Buffer.from(hexOf(namespace), 'hex'))));
  return base.copy().update(name).digest('hex');
}

/** `hex` with `version` in the 13th digit and the RFC variant in the 17th, as a UUID. */
function stamped(hex: string, version: string): string {
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return formatUuid(`${hex.slice(0, 12)}${version}${hex.slice(13, 16)}${variant}${hex.slice(17, 32)}`);
}

/** RFC 4122 name-based UUID (SHA-1, version 5). */
export const uuidV5 = (namespace: string, name: string): string => stamped(nameHash(namespace, name), '5');

/** A name-based UUID whose first 48 bits are `unixMs` (the layout of UUIDv7's
 * time, so ids sort by it; version 8, RFC 9562's custom one): the same name
 * and time give the same id, as uuidV5 would. */
export function timePrefixedV5(namespace: string, name: string, unixMs: number): string {
  const time = Math.max(0, Math.floor(unixMs)).toString(16).padStart(12, '0').slice(-12);
  return stamped(`${time}${nameHash(namespace, name).slice(12)}`, '8');
}

/** The canonical form of an agent-minted event id when it is a usable v4 or v7
 * UUID (RFC variant, neither nil nor max), as Python's uuid.UUID would read it; else null. */
export function usableAgentEventId(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  let s = value.trim().toLowerCase();
  if (s.startsWith('urn:uuid:')) s = s.slice(9);
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  const hex = s.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/.test(hex)) return null;
  const version = hex[12];
  const variant = parseInt(hex[16]!, 16);
  if ((version !== '4' && version !== '7') || (variant & 0xc) !== 0x8) return null;
  return formatUuid(hex);
}

/** Task events collapse per (project, task, kind, whole second), as the z4j brain's;
 * their ids lead with that second, so events stored together land side by side
 * in the id index (the brain's version 5 ids would land anywhere in it). Others
 * collapse per agent event id. */
export function eventId(projectId: string, record: { taskId: string; kind: string; occurredMicros: number; agentEventId: unknown }, fallback: () => string): string {
  if (record.taskId !== '') {
    const second = Math.floor(record.occurredMicros / 1_000_000);
    return timePrefixedV5(EVENT_ID_NAMESPACE, `${projectId}:${record.taskId}:${record.kind}:${second}`, second * 1000);
  }
  const agentId = usableAgentEventId(record.agentEventId);
  return agentId ? uuidV5(EVENT_ID_NAMESPACE, `${projectId}:${agentId}`) : fallback();
}
