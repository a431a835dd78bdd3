// Idempotency keys for the routes that issue commands and jobs (docs/operator-actions.md): one key per intent
// (a dialog opened to do one thing), so a repeated click, or a retry after the answer was lost, gets the first
// answer again instead of issuing twice. Random hex from getRandomValues: crypto.randomUUID exists only in
// secure contexts, and svc may be served over plain http on a private network.
import { useMemo } from 'preact/hooks';

export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dash-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The request options of an issuing call under `key`. */
export const idempotent = (key: string) => ({ headers: { 'idempotency-key': key } });

/** A key that stays the same while `intent` does (a dialog's target, its open state): a new intent, a new key. */
export const useIdempotencyKey = (intent: unknown): string => useMemo(newIdempotencyKey, [intent]);
