// Liveness and readiness. Readiness is 200 once startup has finished and a
// trivial query round-trips within two seconds; it does not compare the schema
// with the migration head and does not look at agents.
import type { AppContext } from '../server/context.ts';

export const READY_DB_TIMEOUT_MS = 2000;

export type Readiness = { ok: true } | { ok: false; reason: 'starting' | 'database' };

export async function readiness(ctx: AppContext): Promise<Readiness> {
  if (!ctx.lifecycle.ready) return { ok: false, reason: 'starting' };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), READY_DB_TIMEOUT_MS)));
  try {
    const outcome = await Promise.race([ctx.db.ping().then(() => 'ok' as const), timeout]);
    return outcome === 'ok' ? { ok: true } : { ok: false, reason: 'database' };
  } catch {
    return { ok: false, reason: 'database' };
  } finally {
    clearTimeout(timer);
  }
}
