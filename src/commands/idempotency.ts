// Idempotency-Key on command-issuing routes. The first request with a key
// claims it (a row keyed by project, caller and key) in the same transaction
// that issues the command and stores the answer, so the answer exists exactly
// when the command does. Within 24 hours the same key with the same body
// replays that answer (same status, same body) without issuing again; the same
// key with another body is refused. Failed requests store nothing: a client
// may retry them with the same key.
import { Type } from '@sinclair/typebox';
import { and, eq, lt } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import type { Db, Executor } from '../db/connect.ts';
import { conflict, validationFailed } from '../http/errors.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { rootCause } from '../lib/errors.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import type { AppContext } from '../server/context.ts';
import { idempotencyKeys } from './tables.ts';

export const IDEMPOTENCY_TTL_HOURS = 24;
const KEY_PATTERN = '^[\\x21-\\x7e]{1,200}$';
const KEY_RE = new RegExp(KEY_PATTERN);

/** The header as the contracts document it (checked by the handler). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: KEY_PATTERN,
      description: `Replays the first answer for ${IDEMPOTENCY_TTL_HOURS} h when the same caller sends the same key and body again; another body with the key is 409 idempotency_key_reused`,
    }),
  ),
});
/** 409 codes the header adds to a route's failures. */
export const IDEMPOTENCY_ERRORS = ['idempotency_key_reused'] as const;

/** The 409 of a key that already stands for another request: the header here, a command's body
 * `idempotency_key` in service.ts (one code, so clients handle both alike). */
export const keyReused = (key: string, name = 'Idempotency-Key') =>
  conflict(`this ${name} was used with a different request; use a new key`, { idempotency_key: key }, IDEMPOTENCY_ERRORS[0]);

type Row = typeof idempotencyKeys.sqlite.$inferSelect;
const table = (ex: Executor) => (ex.dialect === 'sqlite' ? idempotencyKeys.sqlite : idempotencyKeys.pg);

/** The caller as keys are scoped: the API key when one is used, else the user. */
export const principalKey = (who: Principal): string => (who.via === 'api_key' && who.apiKey ? `key:${who.apiKey.id}` : `user:${who.user.id}`);

export interface IdempotentScope {
  projectId: string;
  who: Principal;
}

export interface Answered<T> {
  status: number;
  body: T;
  replayed: boolean;
}

const UNIQUE = new Set(['23505', 'SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE']);

/** Runs `run` (which answers `status`) under the request's Idempotency-Key, if it has one. */
export async function idempotent<T>(ctx: AppContext, request: Request, scope: IdempotentScope, body: unknown, status: number, run: () => Promise<T>): Promise<Answered<T>> {
  const key = request.headers.get('idempotency-key');
  if (key === null) return { status, body: await run(), replayed: false };
  if (!KEY_RE.test(key)) {
    throw validationFailed([{ location: 'header', path: '/idempotency-key', message: 'must be 1 to 200 printable ASCII characters without spaces' }]);
  }
  const principal = principalKey(scope.who);
  const hash = sha256Hex(`${request.method} ${new URL(request.url).pathname}\n${sortedJson(body ?? null)}`);
  const id = { project_id: scope.projectId, principal, key };
  const replay = (row: Row): Answered<T> => {
    if (row.request_hash !== hash) throw keyReused(key);
    return { status: row.status_code, body: JSON.parse(row.response) as T, replayed: true };
  };
  try {
    return await ctx.db.tx(async (tx) => {
      const micros = nowMicros();
      const now = isoMicros(micros);
      const t = table(tx);
      const where = and(eq(t.project_id, id.project_id), eq(t.principal, principal), eq(t.key, key));
      const [found] = await tx.q.select().from(t).where(where);
      if (found && found.expires_at > now) return replay(found);
      if (found) await tx.q.delete(t).where(where);
      // Claimed first: a concurrent request with the key waits here (PostgreSQL) and then replays.
      await tx.q.insert(t).values({ ...id, request_hash: hash, status_code: 0, response: '', created_at: now, expires_at: isoMicros(micros + IDEMPOTENCY_TTL_HOURS * 3600_000_000) });
      const answer = await run();
      await tx.q.update(t).set({ status_code: status, response: JSON.stringify(answer) }).where(where);
      return { status, body: answer, replayed: false };
    });
  } catch (e) {
    if (!UNIQUE.has(String((rootCause(e) as { code?: string }).code))) throw e;
    const t = table(ctx.db);
    const [won] = await ctx.db.q.select().from(t).where(and(eq(t.project_id, id.project_id), eq(t.principal, principal), eq(t.key, key)));
    if (!won) throw e;
    return replay(won);
  }
}

/** Sets the status and the replay marker of an idempotent answer; returns its body. */
export function answer<T>(set: { status?: unknown; headers: Record<string, string | number> }, a: Answered<T>): T {
  set.status = a.status;
  if (a.replayed) set.headers['idempotent-replayed'] = 'true';
  return a.body;
}

/** Drops answers past their 24 hours. */
export async function pruneIdempotencyKeys(db: Db): Promise<number> {
  const now = isoMicros(nowMicros());
  return db.tx(async (tx) => {
    const t = table(tx);
    return (await tx.q.delete(t).where(lt(t.expires_at, now)).returning({ key: t.key })).length;
  });
}
