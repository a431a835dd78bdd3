// confirm_token for purge_queue commands (z4j >= 1.7 agents): a keyed HMAC so
// only a holder of the project secret can authorise a purge of that exact
// queue at that depth. Agents accept the unkeyed SHA-256 form only when
// Z4J_ACCEPT_LEGACY_PURGE_TOKEN=1, so the server issues the keyed one.
import { hmacHex } from '../lib/crypto.ts';

export const purgeConfirmToken = (projectSecret: Uint8Array, queue: string, depth: number | bigint): string =>
  hmacHex(projectSecret, Buffer.from(`purge|${queue}|${depth}`, 'utf8'));
