// First-boot setup. While the users table is empty a one-shot token (its
// keyed hash stored, valid SVC_FIRST_BOOT_TOKEN_TTL_SECONDS) lets whoever
// holds the printed link create the first administrator and the default
// project. Any user row closes the window for good.
import { and, count, eq, gt, sql } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';
import { ApiError, conflict, tooManyRequests } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import { logger } from '../lib/log.ts';
import { limiterFor } from '../lib/rate-limit.ts';
import type { AppContext } from '../server/context.ts';
import type { Actor } from '../auth/actor.ts';
import { createSession, type NewSession } from '../auth/sessions.ts';
import { mastersOf, mintToken, tokenHash, tokenHashes } from '../auth/tokens.ts';
import { grantMembership, insertNewProject, type ProjectPublic } from '../projects/service.ts';
import { insertPreparedUser, prepareUser, usersExist, type UserPublic } from '../users/service.ts';

const log = logger('setup');
const WINDOW_MICROS = 15 * 60_000_000;

export const DEFAULT_PROJECT = { slug: 'default', name: 'Default' };

export const setupOpen = async (ex: Executor): Promise<boolean> => !(await usersExist(ex));

/** Replaces any pending token with a new one; null once a user exists. */
export async function mintSetupToken(ctx: AppContext): Promise<{ token: string; expiresAt: string } | null> {
  const token = mintToken();
  const now = nowMicros();
  const expiresAt = isoMicros(now + ctx.config.SVC_FIRST_BOOT_TOKEN_TTL_SECONDS * 1_000_000);
  const minted = await ctx.db.tx(async (tx) => {
    if (!(await setupOpen(tx))) return false;
    await tx.q.delete(tx.t.firstBootTokens);
    await tx.q.insert(tx.t.firstBootTokens).values({
      id: crypto.randomUUID(),
      token_hash: tokenHash(mastersOf(ctx.config), 'setup', token),
      created_at: isoMicros(now),
      expires_at: expiresAt,
    });
    return true;
  });
  return minted ? { token, expiresAt } : null;
}

export async function hasLiveSetupToken(ex: Executor): Promise<boolean> {
  const t = ex.t.firstBootTokens;
  return (await ex.q.select({ n: count() }).from(t).where(gt(t.expires_at, nowIso())))[0]!.n > 0;
}

async function tokenState(ex: Executor, ctx: AppContext, token: string): Promise<'valid' | 'expired' | 'invalid'> {
  const t = ex.t.firstBootTokens;
  for (const hash of tokenHashes(mastersOf(ctx.config), 'setup', token)) {
    const [row] = await ex.q.select().from(t).where(eq(t.token_hash, hash));
    if (row) return parseIsoMicros(row.expires_at)! > nowMicros() ? 'valid' : 'expired';
  }
  return 'invalid';
}

/** Failed completions from `ip` in the last 15 minutes, counted from audit
 * rows so the budget holds across processes and restarts. */
async function recentFailures(ex: Executor, ip: string): Promise<number> {
  const t = ex.t.auditLog;
  const since = isoMicros(nowMicros() - WINDOW_MICROS);
  const [row] = await ex.q
    .select({ n: count() })
    .from(t)
    .where(and(eq(t.action, 'setup.attempt'), eq(t.result, 'failed'), eq(t.source_ip, ip), sql`${t.occurred_at} > ${since}`));
  return row!.n;
}

export interface SetupInput {
  token: string;
  email: string;
  password: string;
  display_name?: string;
  first_name?: string;
  last_name?: string;
  timezone?: string;
}

export interface SetupResult {
  user: UserPublic;
  project: ProjectPublic;
  session: NewSession;
}

/** The answer to a setup completion once users exist. */
export const setupClosed = () => new ApiError(409, 'conflict', 'setup is already complete', { reason: 'already_initialised' }, {}, 'already_initialised');

export async function completeSetup(ctx: AppContext, input: SetupInput, actor: Actor): Promise<SetupResult> {
  if (!(await setupOpen(ctx.db))) throw setupClosed();
  // Completion requests per address per 15 minutes (per worker process).
  const perIp = limiterFor(ctx, 'setup-complete', 5, 15 * 60_000);
  const ip = actor.source_ip ?? 'unknown';
  if (!perIp.take(ip)) throw tooManyRequests(perIp.retryAfterSeconds(ip), 'too many setup attempts from this address; try again later');
  if ((await recentFailures(ctx.db, ip)) >= ctx.config.SVC_FIRST_BOOT_ATTEMPTS_PER_IP) {
    throw tooManyRequests(900, 'too many failed setup attempts from this address; try again later');
  }
  const state = await tokenState(ctx.db, ctx, input.token);
  if (state !== 'valid') {
    await ctx.audit.record(ctx.db, { ...actor, action: 'setup.attempt', result: 'failed', target_type: 'setup', metadata: { reason: `${state}_token` } });
    throw new ApiError(403, 'invalid_setup_token', state === 'expired' ? 'the setup link has expired; restart svc for a new one' : 'the setup link is not valid', {
      reason: state,
    });
  }
  const prepared = await prepareUser(ctx, { ...input, is_admin: true });
  return ctx.db.tx(async (tx) => {
    if (!(await setupOpen(tx))) throw setupClosed();
    const user = await insertPreparedUser(tx, ctx, prepared, actor);
    const project = await insertNewProject(tx, ctx, DEFAULT_PROJECT, { ...actor, user_id: prepared.id });
    await grantMembership(tx, ctx, project.id, prepared.id, 'admin', { ...actor, user_id: prepared.id });
    await tx.q.delete(tx.t.firstBootTokens);
    await ctx.audit.append(tx, { ...actor, user_id: prepared.id, action: 'setup.completed', target_type: 'user', target_id: prepared.id, project_id: project.id });
    const session = await createSession(tx, ctx, prepared, { remember: false, ip: actor.source_ip ?? null, userAgent: actor.user_agent ?? null, mfaVerified: false });
    return {
      user,
      project: { ...project, role: 'admin' as const },
      session,
    };
  });
}

/** `svc bootstrap-admin` and SVC_BOOTSTRAP_ADMIN_*: the first admin without the link. */
export async function bootstrapAdmin(ctx: AppContext, input: { email: string; password: string; display_name?: string }, actor: Actor): Promise<UserPublic> {
  const prepared = await prepareUser(ctx, { ...input, is_admin: true });
  return ctx.db.tx(async (tx) => {
    if (!(await setupOpen(tx))) throw conflict('setup is already complete: users exist', { reason: 'already_initialised' }, 'already_initialised');
    const user = await insertPreparedUser(tx, ctx, prepared, actor, 'setup.bootstrap_admin');
    const project = await insertNewProject(tx, ctx, DEFAULT_PROJECT, actor);
    await grantMembership(tx, ctx, project.id, prepared.id, 'admin', actor);
    await tx.q.delete(tx.t.firstBootTokens);
    return user;
  });
}

/** At start: create the admin from SVC_BOOTSTRAP_ADMIN_* when both are set
 * and valid; an invalid pair is logged and setup stays open for the link. */
export async function bootstrapFromSettings(ctx: AppContext): Promise<boolean> {
  const { SVC_BOOTSTRAP_ADMIN_EMAIL: email, SVC_BOOTSTRAP_ADMIN_PASSWORD: password } = ctx.config;
  if (email === '' || password === '' || !(await setupOpen(ctx.db))) return false;
  try {
    const user = await bootstrapAdmin(ctx, { email, password }, { user_id: null, api_key_id: null, source_ip: null, user_agent: 'svc serve (SVC_BOOTSTRAP_ADMIN_EMAIL)' });
    log.info({ user_id: user.id }, 'created the bootstrap administrator from SVC_BOOTSTRAP_ADMIN_EMAIL');
    return true;
  } catch (e) {
    const details = e instanceof ApiError ? { error: e.error, fields: e.details.fields } : { error: (e as Error).message };
    log.error(details, 'SVC_BOOTSTRAP_ADMIN_EMAIL / _PASSWORD were not accepted; use the setup link instead');
    return false;
  }
}

export async function resetSetupTokens(ctx: AppContext, actor: Actor): Promise<number> {
  return ctx.db.tx(async (tx) => {
    if (!(await setupOpen(tx))) throw conflict('users exist: setup is complete and cannot be reset', {}, 'already_initialised');
    const deleted = (await tx.q.delete(tx.t.firstBootTokens).returning({ id: tx.t.firstBootTokens.id })).length;
    await ctx.audit.append(tx, { ...actor, action: 'setup.tokens_reset', target_type: 'setup', metadata: { tokens_deleted: deleted } });
    return deleted;
  });
}


