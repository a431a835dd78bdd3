// Small wrappers over node:crypto used across areas. Secrets are compared in
// constant time only; nothing here logs.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function hmacSha256(key: string | Uint8Array, message: string | Uint8Array): Buffer {
  return createHmac('sha256', key).update(message).digest();
}

export const hmacHex = (key: string | Uint8Array, message: string | Uint8Array): string =>
  hmacSha256(key, message).toString('hex');

export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** URL-safe base64 without padding of `bytes` random bytes (Python's token_urlsafe). */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** Constant-time equality of two strings; differing lengths compare unequal
 * after hashing both sides so the length itself is not timed. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
