// Describing errors for logs without leaking what they carry. drizzle wraps
// driver errors in DrizzleQueryError, whose message includes the bound
// parameters (token hashes, e-mail addresses): never log that message.
import { DrizzleQueryError } from 'drizzle-orm/errors';

/** The driver's own error behind a drizzle wrapper, or the error itself. */
export function rootCause(e: unknown): unknown {
  return e instanceof DrizzleQueryError && e.cause ? e.cause : e;
}

/** A log-safe description: message and code, plus the failing SQL text
 * (placeholders only) for query errors, and the stack of the root cause. */
export function describeError(e: unknown): { message: string; code?: string; query?: string; stack?: string } {
  const cause = rootCause(e);
  const err = cause instanceof Error ? cause : new Error(String(cause));
  const code = (cause as { code?: unknown }).code;
  return {
    message: err.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(e instanceof DrizzleQueryError ? { query: e.query } : {}),
    ...(err.stack ? { stack: err.stack } : {}),
  };
}

/** A unique-constraint violation on either dialect (PostgreSQL 23505, SQLite's UNIQUE constraint), however wrapped. */
export function isUniqueViolation(e: unknown): boolean {
  for (let c: unknown = e; c; c = (c as { cause?: unknown }).cause) {
    const code = (c as { code?: unknown }).code;
    if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint failed/.test(String((c as { message?: unknown }).message))) return true;
  }
  return false;
}
