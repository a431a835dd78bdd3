// Failures that say the database cannot be reached (or is too busy) right
// now, rather than that a query is wrong: answered 503 with Retry-After, not
// 500, so clients and load balancers retry and nothing is logged as a bug.
import { rootCause } from '../lib/errors.ts';

// postgres-js's own codes for a connection that failed or went away, the socket errors under them, and
// PostgreSQL's SQLSTATEs for shutdown and connection failures (classes 08 and 57P); SQLite's lock
// contention past the busy timeout.
const CODES: ReadonlySet<string> = new Set([
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

export function isDatabaseUnavailable(e: unknown): boolean {
  const code = (rootCause(e) as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (CODES.has(code) || code.startsWith('08'));
}
