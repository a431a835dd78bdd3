// Passwords: argon2id hashes (@node-rs/argon2) and the policy of the spec
// (length 12..256 by default; three of lowercase, uppercase, digit, symbol
// below 16 characters; common passwords denied).
import { Type } from '@sinclair/typebox';
import type { Config } from '../config/load.ts';
import { handlerBounds } from '../http/contract.ts';

export const MAX_PASSWORD_LENGTH = 256;

/** A new password's field, `minLength` the configured minimum: the router admits up to 1024 characters so the
 * policy's 422 (with its code: too short, too long...) answers the rest; the document shows the policy's bounds. */
export const NewPassword = (minLength: number) => handlerBounds(Type.String({ minLength: 1, maxLength: 1024 }), { minLength, maxLength: MAX_PASSWORD_LENGTH });

type HashConfig = Pick<Config, 'SVC_ARGON2_TIME_COST' | 'SVC_ARGON2_MEMORY_KIB' | 'SVC_ARGON2_PARALLELISM'>;

const options = (c: HashConfig) => ({
  algorithm: 2 /* Argon2id */,
  timeCost: c.SVC_ARGON2_TIME_COST,
  memoryCost: c.SVC_ARGON2_MEMORY_KIB,
  parallelism: c.SVC_ARGON2_PARALLELISM,
  outputLen: 32,
});

// The native argon2 module is loaded at the first hash or verification, not at start-up.
const argon2 = () => import('@node-rs/argon2');

export const hashPassword = async (password: string, c: HashConfig): Promise<string> => (await argon2()).hash(password, options(c));

// A fixed hash verified for unknown accounts, so a login for an address with
// no user costs the same as one with a wrong password.
let dummy: Promise<string> | null = null;

export async function verifyPassword(stored: string | null, password: string, c: HashConfig): Promise<boolean> {
  const { hash, verify } = await argon2();
  if (stored === null) {
    dummy ??= hash('svc-dummy-password-for-timing', options(c));
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}

// ~49,000 common passwords (zxcvbn's list), lower-case. Loaded at the first password check: the
// package decompresses its lists as it is imported, some 14 MB that an idle service need not hold.
let common: Set<string> | null = null;
function commonPasswords(): Set<string> {
  if (!common) {
    const { dictionary } = require('@zxcvbn-ts/language-common') as { dictionary: Record<string, string[]> };
    common = new Set<string>(dictionary['passwords-common'] ?? []);
  }
  return common;
}

/** A common password, one typed twice, or one with digits and symbols stuck on (Summer2026!). */
function isCommon(password: string): boolean {
  const COMMON = commonPasswords();
  const folded = password.toLowerCase();
  if (COMMON.has(folded)) return true;
  const half = folded.slice(0, folded.length / 2);
  if (folded.length % 2 === 0 && half.repeat(2) === folded && COMMON.has(half)) return true;
  const base = folded.replace(/[\d\W_]+$/, '').replace(/^[\d\W_]+/, '');
  return base.length >= 4 && base.length < folded.length && COMMON.has(base);
}

export interface PolicyViolation {
  code: 'password_too_short' | 'password_too_long' | 'password_too_simple' | 'password_common';
  message: string;
}

export function checkPasswordPolicy(password: string, minLength: number): PolicyViolation | null {
  const length = [...password].length;
  if (length < minLength) return { code: 'password_too_short', message: `password must have at least ${minLength} characters` };
  if (length > MAX_PASSWORD_LENGTH) return { code: 'password_too_long', message: `password must have at most ${MAX_PASSWORD_LENGTH} characters` };
  if (length < 16) {
    const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z\d\s]/].filter((re) => re.test(password)).length;
    if (classes < 3) {
      return {
        code: 'password_too_simple',
        message: 'passwords under 16 characters need three of: lowercase, uppercase, digit, symbol',
      };
    }
  }
  if (isCommon(password)) return { code: 'password_common', message: 'password is too common' };
  return null;
}
