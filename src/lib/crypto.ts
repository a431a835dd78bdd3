// Small wrappers over node:crypto used across areas. Secrets are compared in
// constant time only; nothing here logs.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function hmacSha256(key: string | Uint8Array, message: string | Uint8Array): Buffer {
  return createHmac('sha256', key).update(message).digest();
}

// Keyed hashers for the few long-lived keys (master secrets, the audit chain
// key), each with its domain-separation prefix already fed in: copying one
// skips the key setup and the prefix each HMAC would otherwise repeat.
// Looked up by prefix, then key: both are long-lived strings whose hashes the
// engine keeps, where a combined key would be built anew for every call.
const keyed = new Map<string, Map<string, Bun.CryptoHasher>>();
let keyedCount = 0;
const keyedBytes = new WeakMap<Uint8Array, { prefix: string; hasher: Bun.CryptoHasher }>();

/** Hex HMAC-SHA256 of `prefix + message`, strings as UTF-8 (Bun's native hasher: about twice as fast as node:crypto's). */
export function hmacHex(key: string | Uint8Array, message: string | Uint8Array, prefix = ''): string {
  if (typeof key !== 'string') {
    // Byte keys (frame signing keys) are long-lived objects, never changed in place: cached by identity, dropped with them.
    let bytesBase = keyedBytes.get(key);
    if (!bytesBase || bytesBase.prefix !== prefix) keyedBytes.set(key, (bytesBase = { prefix, hasher: new Bun.CryptoHasher('sha256', key).update(prefix) }));
    return bytesBase.hasher.copy().update(message).digest('hex');
  }
  let byKey = keyed.get(prefix);
  let base = byKey?.get(key);
  if (!base) {
    // A handful of keys and prefixes in practice; start over if that ever grows.
    if (keyedCount >= 256) {
      keyed.clear();
      keyedCount = 0;
      byKey = undefined;
    }
    if (!byKey) keyed.set(prefix, (byKey = new Map()));
    byKey.set(key, (base = new Bun.CryptoHasher('sha256', key).update(prefix)));
    keyedCount++;
  }
  return base.copy().update(message).digest('hex');
}

export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** URL-safe base64 without padding of `bytes` random bytes (Python's token_urlsafe). */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** Constant-time equality of two strings. Equal lengths (the usual case:
 * MACs and tokens have fixed, public lengths) compare every UTF-16 unit with
 * no early exit (no Buffers: audit verification calls this for every row);
 * otherwise both sides are hashed first so the comparison time says nothing. */
export function safeEqual(a: string, b: string): boolean {
  if (a.length === b.length) {
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
    return diff === 0;
  }
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
  return false;
}
