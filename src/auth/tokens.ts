// Bearer-style secrets the service hands out (session cookies, API keys,
// trusted-device cookies, setup and invitation tokens) are stored only as
// keyed hashes. Looking one up tries the current SVC_SECRET and each previous
// one, so rotating the master secret does not end every session at once.
import { hmacHex, randomToken } from '../lib/crypto.ts';

export interface Masters {
  current: string;
  previous: readonly string[];
}

export const mastersOf = (c: { SVC_SECRET: string; SVC_PREVIOUS_SECRETS: readonly string[] }): Masters => ({
  current: c.SVC_SECRET,
  previous: c.SVC_PREVIOUS_SECRETS,
});

/** The stored form of `token` for `purpose`, under the current secret. */
export const tokenHash = (m: Masters, purpose: string, token: string): string => hmacHex(m.current, `svc/${purpose}/v1:${token}`);

/** Every hash the token may be stored under (current secret first). */
export const tokenHashes = (m: Masters, purpose: string, token: string): string[] =>
  [m.current, ...m.previous].map((s) => hmacHex(s, `svc/${purpose}/v1:${token}`));

export const mintToken = (bytes = 32): string => randomToken(bytes);
