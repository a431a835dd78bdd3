// TOTP (RFC 6238: SHA-1, 6 digits, 30 s) and recovery codes.
import { randomBytes } from 'node:crypto';
import { encodeBase32UpperCaseNoPadding } from '@oslojs/encoding';
import { createTOTPKeyURI, verifyTOTPWithGracePeriod } from '@oslojs/otp';
import { hmacHex } from '../lib/crypto.ts';

export const newTotpKey = (): Uint8Array => new Uint8Array(randomBytes(20));
export const totpSecretText = (key: Uint8Array): string => encodeBase32UpperCaseNoPadding(key);
export const totpUri = (issuer: string, account: string, key: Uint8Array): string => createTOTPKeyURI(issuer, account, key, 30, 6);

/** Accepts the current code and the ones either side of it (clock drift). */
export const verifyTotp = (key: Uint8Array, code: string): boolean => /^\d{6}$/.test(code) && verifyTOTPWithGracePeriod(key, 30, 6, code, 30);

// Recovery codes: XXXX-XXXX-XXXX from an alphabet without look-alikes (~59 bits).
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

export function newRecoveryCode(): string {
  let chars = '';
  // Rejection sampling: bytes >= 248 (8 x 31) would bias the alphabet.
  while (chars.length < 12) for (const b of randomBytes(16)) if (b < 248 && chars.length < 12) chars += ALPHABET[b % ALPHABET.length];
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8, 12)}`;
}

/** Case, spaces and dashes do not matter when typing a code. */
export const normaliseRecoveryCode = (code: string): string => code.toUpperCase().replace(/[\s-]/g, '');

/** Stored form: keyed hash (the codes carry enough entropy for HMAC, and
 * checking all ten stays cheap and constant-time). */
export const recoveryCodeHash = (master: string, code: string): string => hmacHex(master, `svc-recovery-code-v1:${normaliseRecoveryCode(code)}`);
