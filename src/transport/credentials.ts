// Agent credentials as a z4j brain mints them, so tokens and hmac_secret
// values issued by a real brain keep working here (agent-protocol.md §2.1-2.2).
// Masters are used as their raw UTF-8 bytes, never decoded.
import { hmacHex, hmacSha256, randomToken, safeEqual } from '../lib/crypto.ts';

const AGENT_TOKEN_SALT = 'z4j-agent-token-v1';
const PROJECT_SECRET_LABEL = 'z4j-project-secret-v1:';
/** The brain refuses masters (and agents refuse project secrets) shorter than this. */
export const MIN_SECRET_BYTES = 32;

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** `secrets.token_urlsafe(32)`: 43 base64url characters. */
export const mintAgentToken = (): string => randomToken(32);

/** The stored form of an agent token: the HMAC key is master bytes followed by
 * the salt (a concatenation, not a nested HMAC). */
export const agentTokenHash = (master: string, token: string): string =>
  hmacHex(Buffer.concat([utf8(master), utf8(AGENT_TOKEN_SALT)]), utf8(token));

export interface MasterSecrets {
  current: string;
  /** Retired masters still accepted after a rotation, newest first. */
  previous?: readonly string[];
}

/** Hashes to look an agent up by: current master first, then each previous one. */
export const agentTokenHashes = (token: string, masters: MasterSecrets): string[] =>
  [masters.current, ...(masters.previous ?? [])].map((master) => agentTokenHash(master, token));

export type AgentTokenMatch = { master: 'current' } | { master: 'previous'; index: number };

/** Which master produced `storedHash` for `token`, or null. Every candidate is
 * compared (constant time each, no early exit) so timing does not reveal which. */
export function matchAgentToken(token: string, storedHash: string, masters: MasterSecrets): AgentTokenMatch | null {
  let matched = -1;
  const hashes = agentTokenHashes(token, masters);
  for (let i = 0; i < hashes.length; i++) {
    if (safeEqual(hashes[i] as string, storedHash) && matched < 0) matched = i;
  }
  if (matched < 0) return null;
  return matched === 0 ? { master: 'current' } : { master: 'previous', index: matched - 1 };
}

const UUID_RE = /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/i;

/** Python's `uuid.bytes_le`: the first three groups byte-reversed, the rest as is. */
export function uuidBytesLe(uuid: string): Buffer {
  const m = UUID_RE.exec(uuid);
  if (!m) throw new TypeError('not a UUID');
  const [, a = '', b = '', c = '', d = '', e = ''] = m;
  const le = (hex: string): Buffer => Buffer.from(hex, 'hex').reverse();
  return Buffer.concat([le(a), le(b), le(c), Buffer.from(d + e, 'hex')]);
}

/** The 32-byte signing secret of one project: HMAC(master, label || uuid.bytes_le). */
export function deriveProjectSecret(master: string, projectId: string): Buffer {
  const key = utf8(master);
  if (key.length < MIN_SECRET_BYTES) throw new RangeError(`master secret must be at least ${MIN_SECRET_BYTES} bytes`);
  return hmacSha256(key, Buffer.concat([utf8(PROJECT_SECRET_LABEL), uuidBytesLe(projectId)]));
}

/** The `hmac_secret` an operator pastes into Z4J_HMAC_SECRET: base64url with
 * `=` padding (44 characters for 32 bytes), as Python's urlsafe_b64encode. */
export function hmacSecretText(secret: Uint8Array): string {
  const text = Buffer.from(secret).toString('base64url');
  return text + '='.repeat((4 - (text.length % 4)) % 4);
}

// Python's str.split() whitespace (str.isspace), which differs from JS \s.
const PY_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** The token of an `Authorization: Bearer <token>` header as the brain reads
 * it: exactly two whitespace-separated parts, scheme `bearer` in any case. */
export function parseBearer(header: string | null | undefined): string | null {
  if (!header) return null;
  const parts = header.split(PY_WHITESPACE).filter((p) => p !== '');
  if (parts.length !== 2 || parts[0]?.toLowerCase() !== 'bearer') return null;
  return parts[1] || null;
}
