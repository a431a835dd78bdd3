// Encryption at rest for small secrets the service must read back (TOTP
// seeds): AES-256-GCM under a key derived from SVC_SECRET by HKDF, with the
// owner bound in as associated data so a sealed value cannot be moved to
// another row. Opening also tries SVC_PREVIOUS_SECRETS, so rotating the
// master secret does not lock users out of MFA.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const INFO = 'svc/seal/v1';

const keyOf = (master: string, purpose: string): Buffer => Buffer.from(hkdfSync('sha256', master, 'svc-seal-salt-v1', `${INFO}:${purpose}`, 32));

/** base64url(nonce ‖ ciphertext ‖ tag). */
export function seal(plaintext: Uint8Array, master: string, purpose: string, owner: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(master, purpose), nonce);
  cipher.setAAD(Buffer.from(owner));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

/** The plaintext, or null when no configured secret opens it. */
export function unseal(sealed: string, masters: readonly string[], purpose: string, owner: string): Buffer | null {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < 12 + 16) return null;
  for (const master of masters) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(master, purpose), raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(owner));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
    } catch {
      /* try the next secret */
    }
  }
  return null;
}
