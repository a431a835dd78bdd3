// Single sign-on: the OpenID Connect login (start and callback), the trusted-proxy header login,
// account linking and provisioning, group mapping, and linked identities. A successful sign-in ends
// exactly like a password login: the same session, cookies and `auth.login` audit row (with
// metadata.method `oidc` or `proxy`), and the same MFA step for accounts with svc's own
// authenticator unless the identity provider asserted multi-factor sign-in.
import type { Tx } from '../../db/connect.ts';
import { ApiError, conflict, notFound, tooManyRequests } from '../../http/errors.ts';
import { isoMicros, nowIso, nowMicros, nowMs, parseIsoMicros } from '../../lib/clock.ts';
import { logger } from '../../lib/log.ts';
import { listHas, normaliseIp, addressList, type AddressList } from '../../lib/net.ts';
import { limiterFor } from '../../lib/rate-limit.ts';
import { canonicalEmail } from '../../lib/validate.ts';
import { changeMemberRole, findProjectBySlug, grantMembership, listMembers, type Role } from '../../projects/service.ts';
import type { AppContext } from '../../server/context.ts';
import { findUserByEmail, insertPreparedUser, patchUser, prepareUser } from '../../users/service.ts';
import { userById, type UserRow } from '../../users/store.ts';
import type { Actor } from '../actor.ts';
import { completeSignIn } from '../login.ts';
import type { Principal } from '../principal.ts';
import { resolveSession, type NewSession } from '../sessions.ts';
import { liveSessionsOf, updateSession } from '../store.ts';
import { mastersOf, mintToken, tokenHash } from '../tokens.ts';
import { OidcClient, SsoRefusal, type Claims } from './oidc.ts';
import { LOGIN_STATE_TTL_SECONDS, higherRole, oidcConfigured, passwordLoginAllowed, projectRoleRules } from './policy.ts';
import { refusalAudit } from './refusals.ts';
import {
  consumeLoginState,
  deleteIdentity,
  identitiesOf,
  identityBySubject,
  insertIdentity,
  insertLoginState,
  loginState,
  pruneLoginStates,
  touchIdentity,
  type IdentityRow,
  type LoginStateRow,
} from './store.ts';

const log = logger('sso');

/** The password hash of an account created by single sign-on: no password verifies against it. */
export const NO_PASSWORD = '!sso-only';
const STATE_RE = /^[A-Za-z0-9_-]{32,128}$/;

const clients = new WeakMap<AppContext, OidcClient>();
function oidc(ctx: AppContext): OidcClient {
  // routes.ts answers 404 sso_not_configured before loading this module.
  if (!oidcConfigured(ctx.config)) throw new Error('OpenID Connect is not configured');
  let c = clients.get(ctx);
  if (!c) clients.set(ctx, (c = new OidcClient(ctx.config)));
  return c;
}

const proxyLists = new WeakMap<AppContext, AddressList>();
const proxyList = (ctx: AppContext): AddressList => {
  let l = proxyLists.get(ctx);
  if (!l) proxyLists.set(ctx, (l = addressList(ctx.config.SVC_AUTH_PROXY_ADDRESSES)));
  return l;
};

function throttle(ctx: AppContext, name: string, limit: number, ip: string | null): void {
  const bucket = limiterFor(ctx, name, limit, 60_000);
  const key = ip ?? 'unknown';
  if (!bucket.take(key)) throw tooManyRequests(bucket.retryAfterSeconds(key), 'too many sign-in attempts; try again in a minute');
}

/** A dashboard path to return to: same-origin, absolute path only. */
export function safeNext(raw: string | undefined | null): string {
  if (!raw || raw.length > 2048 || !raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\') || /[\u0000-\u001f]/.test(raw)) return '/';
  return raw;
}

// --- OpenID Connect: start -------------------------------------------------------------------

export interface Started {
  location: string;
  /** The browser token of the pending login (kept in the svc_sso cookie). */
  browserToken: string;
}

export async function startOidcLogin(
  ctx: AppContext,
  input: {
    next: string;
    remember: boolean;
    redirectUri: string;
    browserToken: string | null;
    actor: Actor;
    /** Ask the provider to sign the user in again; from a signed-in browser (`sessionToken`) this confirms
     * that session's user afresh instead of starting a new session. */
    reauthenticate: boolean;
    sessionToken: string | null;
  },
): Promise<Started> {
  const client = oidc(ctx);
  throttle(ctx, 'sso-start', 30, input.actor.source_ip ?? null);
  const doc = await client.discover();
  const signedIn = input.reauthenticate && input.sessionToken ? await resolveSession(ctx, input.sessionToken) : null;
  const browserToken = input.browserToken ?? mintToken();
  const state = mintToken();
  const nonce = mintToken();
  const verifier = mintToken(48);
  const now = nowMicros();
  await ctx.db.tx(async (tx) => {
    // Ended logins are forgotten a day after they ran out (a replay until then is recognised as one).
    await pruneLoginStates(tx, isoMicros(now - 86_400_000_000));
    await insertLoginState(tx, {
      id: tokenHash(mastersOf(ctx.config), 'sso-state', state),
      browser_hash: tokenHash(mastersOf(ctx.config), 'sso-browser', browserToken),
      nonce,
      code_verifier: verifier,
      redirect_uri: input.redirectUri,
      next_path: safeNext(input.next),
      remember: input.remember,
      created_at: isoMicros(now),
      expires_at: isoMicros(now + LOGIN_STATE_TTL_SECONDS * 1_000_000),
      consumed_at: null,
      reverify_session_id: signedIn?.session.id ?? null,
      reverify_user_id: signedIn?.user.id ?? null,
    });
  });
  return { location: client.authorizationUrl(doc, { state, nonce, verifier, redirectUri: input.redirectUri, reauthenticate: input.reauthenticate }), browserToken };
}

// --- OpenID Connect: callback ----------------------------------------------------------------

export interface CallbackQuery {
  state?: string;
  code?: string;
  error?: string;
  iss?: string;
}

export interface SignedIn {
  /** Where the browser goes next: the path it came from, or the MFA step first. */
  location: string;
  session: NewSession;
  user: UserRow;
}

/** A re-verification passed: the browser's own session is MFA-fresh again (no new session, no new cookies). */
export interface Reverified {
  location: string;
  reverified: true;
}

const stateInvalid = (reason: string, message: string) => new SsoRefusal(400, 'sso_state_invalid', reason, message);

export async function finishOidcLogin(
  ctx: AppContext,
  query: CallbackQuery,
  browserToken: string | null,
  trustToken: string | null,
  actor: Actor,
): Promise<SignedIn | Reverified> {
  const client = oidc(ctx);
  throttle(ctx, 'sso-callback', 60, actor.source_ip ?? null);
  if (!query.state || !STATE_RE.test(query.state)) throw stateInvalid('missing_state', 'the sign-in answer carries no valid state; start again from the sign-in page');
  const id = tokenHash(mastersOf(ctx.config), 'sso-state', query.state);
  const pending = await loginState(ctx.db, id);
  if (!pending) throw stateInvalid('unknown_state', 'this sign-in was not started here (or long ago); start again from the sign-in page');
  if (pending.consumed_at) throw new SsoRefusal(400, 'sso_replayed', 'state_replayed', 'this sign-in answer was used already; start again from the sign-in page');
  if (!browserToken || tokenHash(mastersOf(ctx.config), 'sso-browser', browserToken) !== pending.browser_hash) {
    throw stateInvalid('browser_mismatch', 'this sign-in was started in another browser; start again from the sign-in page');
  }
  if (parseIsoMicros(pending.expires_at)! <= nowMicros()) throw stateInvalid('expired_state', 'the sign-in took too long; start again from the sign-in page');
  // Single use: the one call that marks it used goes on; a concurrent or later replay stops here.
  if (!(await ctx.db.tx((tx) => consumeLoginState(tx, id, nowIso())))) {
    throw new SsoRefusal(400, 'sso_replayed', 'state_replayed', 'this sign-in answer was used already; start again from the sign-in page');
  }
  if (query.error) {
    const error = /^[A-Za-z0-9_.-]{1,64}$/.test(query.error) ? query.error : 'error';
    throw new SsoRefusal(403, 'sso_denied', 'provider_error', 'the identity provider did not sign you in', { provider_error: error });
  }
  // RFC 9207: an authorization answer naming its issuer must name ours (mix-up defence).
  if (query.iss !== undefined && query.iss !== client.issuer) throw new SsoRefusal(401, 'sso_token_invalid', 'wrong_issuer', 'the sign-in answer comes from another issuer');
  if (!query.code || query.code.length > 2048) throw new SsoRefusal(400, 'sso_code_rejected', 'missing_code', 'the sign-in answer carries no code');
  const tokens = await client.exchangeCode(query.code, pending.code_verifier, pending.redirect_uri);
  let claims: Claims = await client.verifyIdToken(tokens.idToken, pending.nonce);
  if (pending.reverify_session_id && pending.reverify_user_id) return reverify(ctx, client.issuer, pending, claims, actor);
  // Providers that keep e-mail and groups out of the id_token (oidc-provider, for one) give them at userinfo.
  const groupsClaim = ctx.config.SVC_OIDC_GROUPS_CLAIM;
  if (tokens.accessToken && (claims.email === undefined || (claims[groupsClaim] === undefined && wantsGroups(ctx)))) {
    claims = { ...(await client.userinfo(tokens.accessToken, claims.sub)), ...claims };
  }
  const issuer = client.issuer;
  const user = await accountFor(ctx, { method: 'oidc', issuer, claims }, actor);
  await applyGroups(ctx, user, claims, actor);
  const fresh = (await userById(ctx.db, user.id))!;
  const mfaAsserted = mfaAssertedBy(ctx, claims);
  return signIn(ctx, fresh, { method: 'oidc', issuer, subject: claims.sub, remember: pending.remember, next: pending.next_path, mfaAsserted, trustToken }, actor);
}

/** The end of a re-verification: the provider must have signed in the same person (the identity linked to the
 * session's user), just now, with multi-factor. Then the session's MFA is fresh again, as after svc's own
 * authenticator step. Anything else is refused and the session left as it was. */
async function reverify(ctx: AppContext, issuer: string, pending: LoginStateRow, claims: Claims, actor: Actor): Promise<Reverified> {
  const userId = pending.reverify_user_id!;
  // Refusals lead the browser back to the page it came from (routes.ts), still signed in.
  const refuse = (reason: string, message: string) =>
    new SsoRefusal(403, 'sso_reverify_refused', reason, message, { user_id: userId, return_to: pending.next_path });
  const linked = await identityBySubject(ctx.db, issuer, claims.sub);
  if (linked?.user_id !== userId) throw refuse('different_user', 'the identity provider signed in someone else than you; nothing was changed');
  const authTime = typeof claims.auth_time === 'number' ? claims.auth_time * 1_000_000 : null;
  if (authTime === null || authTime < parseIsoMicros(pending.created_at)! - ctx.config.SVC_OIDC_CLOCK_SKEW_SECONDS * 1_000_000) {
    throw refuse('not_reauthenticated', 'the identity provider did not ask you to sign in again');
  }
  if (!mfaAssertedBy(ctx, claims)) throw refuse('mfa_not_asserted', 'the identity provider did not confirm a multi-factor sign-in');
  const user = await userById(ctx.db, userId);
  const session = user?.is_active ? (await liveSessionsOf(ctx.db, userId, nowIso())).find((s) => s.id === pending.reverify_session_id) : undefined;
  if (!session) throw refuse('session_ended', 'your session ended meanwhile; sign in again');
  const at = nowIso();
  await ctx.db.tx(async (tx) => {
    await updateSession(tx, session.id, { mfa_verified_at: at, mfa_via: 'idp' });
    await touchIdentity(tx, linked.id, at);
    await ctx.audit.append(tx, {
      ...actor,
      user_id: userId,
      action: 'auth.sso.reverified',
      target_type: 'user',
      target_id: userId,
      metadata: { issuer, subject: claims.sub, session_id: session.id, acr: typeof claims.acr === 'string' ? claims.acr : null },
    });
  });
  return { location: pending.next_path, reverified: true };
}

const wantsGroups = (ctx: AppContext) => ctx.config.SVC_OIDC_ADMIN_GROUPS.length > 0 || ctx.config.SVC_OIDC_PROJECT_ROLES.length > 0;

/** `amr` containing mfa or otp, or an `acr` the operator listed. */
export function mfaAssertedBy(ctx: AppContext, claims: Record<string, unknown>): boolean {
  const amr = Array.isArray(claims.amr) ? claims.amr : [];
  if (amr.includes('mfa') || amr.includes('otp')) return true;
  return typeof claims.acr === 'string' && ctx.config.SVC_OIDC_MFA_ACR_VALUES.includes(claims.acr);
}

const emailVerified = (v: unknown): boolean => v === true || v === 'true';

// --- accounts ----------------------------------------------------------------------------------

interface Asserted {
  method: 'oidc' | 'proxy';
  /** OIDC only. */
  issuer?: string;
  claims: Claims | { sub?: undefined; email: string; email_verified: true };
}

const noAccount = () =>
  new SsoRefusal(403, 'sso_no_account', 'no_account', 'no svc account has this e-mail address; ask an administrator to create one or to invite you');
const inactive = (userId: string) => new SsoRefusal(403, 'sso_account_inactive', 'account_inactive', 'this svc account is deactivated', { user_id: userId });

/** The account an identity signs in to: linked before (issuer, subject), else matched by verified
 * e-mail and linked now, else created when provisioning is on. A deactivated account is refused. */
async function accountFor(ctx: AppContext, who: Asserted, actor: Actor): Promise<UserRow> {
  const { claims } = who;
  if (who.method === 'oidc') {
    const linked = await identityBySubject(ctx.db, who.issuer!, claims.sub!);
    if (linked) {
      const user = await userById(ctx.db, linked.user_id);
      if (!user) throw noAccount();
      if (!user.is_active) throw inactive(user.id);
      await ctx.db.tx((tx) => touchIdentity(tx, linked.id, nowIso()));
      return user;
    }
  }
  const rawEmail = typeof claims.email === 'string' ? claims.email : '';
  const email = canonicalEmail(rawEmail);
  if (!email) throw new SsoRefusal(403, 'sso_email_unverified', 'email_missing', 'the identity provider gave no usable e-mail address');
  if (!emailVerified(claims.email_verified)) {
    throw new SsoRefusal(403, 'sso_email_unverified', 'email_unverified', 'the identity provider has not verified this e-mail address', { email });
  }
  const existing = await findUserByEmail(ctx.db, email);
  if (existing) {
    if (!existing.is_active) throw inactive(existing.id);
    if (who.method === 'oidc') await ctx.db.tx((tx) => link(tx, ctx, existing.id, who.issuer!, claims.sub!, email, actor, 'email'));
    return existing;
  }
  if (!ctx.config.SVC_SSO_AUTO_PROVISION) throw noAccount();
  return provision(ctx, who, email, actor);
}

async function link(tx: Tx, ctx: AppContext, userId: string, issuer: string, subject: string, email: string, actor: Actor, matchedBy: string): Promise<IdentityRow> {
  const row: IdentityRow = { id: crypto.randomUUID(), user_id: userId, issuer, subject, email, created_at: nowIso(), last_login_at: nowIso() };
  await insertIdentity(tx, row);
  await ctx.audit.append(tx, {
    ...actor,
    user_id: userId,
    action: 'auth.sso.linked',
    target_type: 'user',
    target_id: userId,
    metadata: { issuer, subject, email, matched_by: matchedBy },
  });
  return row;
}

const text = (v: unknown, max: number): string => (typeof v === 'string' ? v.trim().slice(0, max) : '');

async function provision(ctx: AppContext, who: Asserted, email: string, actor: Actor): Promise<UserRow> {
  const c = who.claims as Record<string, unknown>;
  // The users area's own checks and defaults; the random password is never kept (no password signs in).
  const prepared = await prepareUser(ctx, { email, password: mintToken(32), first_name: text(c.given_name, 100), last_name: text(c.family_name, 100), display_name: text(c.name, 200) });
  const user: UserRow = { ...prepared, password_hash: NO_PASSWORD };
  await ctx.db.tx(async (tx) => {
    const self = { ...actor, user_id: user.id };
    await insertPreparedUser(tx, ctx, user, self, 'auth.sso.provisioned');
    const joined: string[] = [];
    for (const slug of ctx.config.SVC_SSO_PROVISION_PROJECTS) {
      const project = await findProjectBySlug(tx, slug);
      if (!project?.is_active) {
        log.warn({ project: slug }, 'SVC_SSO_PROVISION_PROJECTS names no active project; skipped');
        continue;
      }
      await grantMembership(tx, ctx, project.id, user.id, ctx.config.SVC_SSO_PROVISION_ROLE, self);
      joined.push(slug);
    }
    if (who.method === 'oidc') await link(tx, ctx, user.id, who.issuer!, who.claims.sub!, email, self, 'provisioned');
    log.info({ user_id: user.id, method: who.method, projects: joined }, 'account provisioned by single sign-on');
  });
  return user;
}

// --- group mapping -------------------------------------------------------------------------------

function groupsOf(claims: Record<string, unknown>, name: string): string[] | null {
  const v = claims[name];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((g): g is string => typeof g === 'string');
  return null;
}

/** A principal with every project's admin rights, for role changes the mapping makes (the project
 * rules, such as keeping the last project admin, still apply). */
const mappingPrincipal = (user: UserRow): Principal => ({
  user: { ...user, is_admin: true },
  via: 'session',
  session: null,
  apiKey: null,
  mfaPending: false,
  mfaFresh: true,
});

/** SVC_OIDC_ADMIN_GROUPS sets or clears is_admin; SVC_OIDC_PROJECT_ROLES grants or changes project
 * roles (it never removes a membership). Without the groups claim nothing changes. */
async function applyGroups(ctx: AppContext, user: UserRow, claims: Record<string, unknown>, actor: Actor): Promise<void> {
  if (!wantsGroups(ctx)) return;
  const groups = groupsOf(claims, ctx.config.SVC_OIDC_GROUPS_CLAIM);
  if (groups === null) {
    log.warn({ user_id: user.id, claim: ctx.config.SVC_OIDC_GROUPS_CLAIM }, 'no groups claim in the sign-in; group mapping skipped');
    return;
  }
  const self = { ...actor, user_id: user.id };
  const applied: Record<string, unknown> = {};
  const skipped: Record<string, string> = {};
  if (ctx.config.SVC_OIDC_ADMIN_GROUPS.length > 0) {
    const admin = groups.some((g) => ctx.config.SVC_OIDC_ADMIN_GROUPS.includes(g));
    if (admin !== user.is_admin) {
      try {
        await patchUser(ctx, user.id, { is_admin: admin }, '', self);
        applied.is_admin = { from: user.is_admin, to: admin };
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        skipped.is_admin = e.error;
      }
    }
  }
  const wanted = new Map<string, Role>();
  for (const rule of projectRoleRules(ctx.config.SVC_OIDC_PROJECT_ROLES)) {
    if (groups.includes(rule.group)) wanted.set(rule.slug, higherRole(wanted.get(rule.slug), rule.role));
  }
  const projects: Record<string, unknown> = {};
  const as = mappingPrincipal(user);
  for (const [slug, role] of wanted) {
    try {
      const project = await findProjectBySlug(ctx.db, slug);
      if (!project?.is_active) {
        skipped[slug] = 'no_such_project';
        continue;
      }
      const mine = (await listMembers(ctx, as, slug)).find((m) => m.user_id === user.id);
      if (!mine) {
        await ctx.db.tx((tx) => grantMembership(tx, ctx, project.id, user.id, role, self));
        projects[slug] = { from: null, to: role };
      } else if (mine.role !== role) {
        await changeMemberRole(ctx, as, slug, mine.id, role, self);
        projects[slug] = { from: mine.role, to: role };
      }
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      skipped[slug] = e.error;
    }
  }
  if (Object.keys(projects).length > 0) applied.projects = projects;
  if (Object.keys(applied).length > 0 || Object.keys(skipped).length > 0) {
    await ctx.audit.record(ctx.db, {
      ...self,
      action: 'auth.sso.groups_applied',
      target_type: 'user',
      target_id: user.id,
      metadata: { groups: groups.slice(0, 50), applied, skipped },
    });
  }
}

// --- signing in ----------------------------------------------------------------------------------

async function signIn(
  ctx: AppContext,
  user: UserRow,
  how: { method: 'oidc' | 'proxy'; issuer?: string; subject?: string; remember: boolean; next: string; mfaAsserted: boolean; trustToken: string | null },
  actor: Actor,
): Promise<SignedIn> {
  const metadata = { method: how.method, ...(how.issuer ? { issuer: how.issuer, subject: how.subject } : {}), mfa_asserted: how.mfaAsserted };
  const done = await completeSignIn(ctx, user, { remember: how.remember, trustToken: how.trustToken, mfaAsserted: how.mfaAsserted, metadata }, actor);
  const location = done.mfaRequired ? `/login/mfa?next=${encodeURIComponent(how.next)}` : how.next;
  return { location, session: done.session, user: done.user };
}

// --- trusted-proxy header --------------------------------------------------------------------------

/** Signs in the user named by SVC_AUTH_PROXY_HEADER, when the socket peer is one of SVC_AUTH_PROXY_ADDRESSES.
 * From any other address the header is not believed: the request is refused (and audited). */
export async function proxyLogin(
  ctx: AppContext,
  request: Request,
  input: { next: string; remember: boolean; trustToken: string | null },
  actor: Actor,
): Promise<SignedIn> {
  const peerRaw = ctx.peerAddress(request);
  const peer = peerRaw ? normaliseIp(peerRaw) : null;
  const header = request.headers.get(ctx.config.SVC_AUTH_PROXY_HEADER);
  if (!peer || !listHas(proxyList(ctx), peer)) {
    log.warn({ peer, header_present: header !== null }, 'trusted-proxy header from an address not in SVC_AUTH_PROXY_ADDRESSES ignored');
    throw new SsoRefusal(403, 'proxy_not_trusted', 'untrusted_proxy', 'this address may not sign users in by header', { header_present: header !== null });
  }
  throttle(ctx, 'sso-proxy', 120, peer);
  const email = header ? canonicalEmail(header) : null;
  if (!email) throw new SsoRefusal(401, 'proxy_header_missing', 'header_missing', `the proxy sent no usable ${ctx.config.SVC_AUTH_PROXY_HEADER} header`);
  const user = await accountFor(ctx, { method: 'proxy', claims: { email, email_verified: true } }, actor);
  return signIn(ctx, user, { method: 'proxy', remember: input.remember, next: safeNext(input.next), mfaAsserted: false, trustToken: input.trustToken }, actor);
}

// --- refusals --------------------------------------------------------------------------------------

/** An `auth.sso.refused` row for the refusal, or, past the address's share of rows, a count in the
 * window's `auth.sso.refused_suppressed` row (refusals.ts). */
export async function auditRefusal(ctx: AppContext, method: 'oidc' | 'proxy', error: ApiError, actor: Actor): Promise<void> {
  const reason = error instanceof SsoRefusal ? error.reason : error.error;
  const ip = actor.source_ip ?? 'unknown';
  const audit = refusalAudit(ctx);
  const { leftOut, closed } = audit.ledger.record(ip, reason, nowMs());
  audit.arm();
  await audit.write(closed);
  if (leftOut > 0) {
    if (leftOut === 1) log.warn({ method, reason, ip }, 'single sign-on refusals from this address: further ones are counted in one audit row at the end of the window');
    return;
  }
  const details = error.details as Record<string, unknown>;
  const userId = typeof details.user_id === 'string' ? details.user_id : null;
  await ctx.audit.record(ctx.db, {
    ...actor,
    action: 'auth.sso.refused',
    result: 'denied',
    target_type: 'user',
    target_id: userId ?? '',
    metadata: {
      method,
      reason,
      error: error.error,
      ...(typeof details.email === 'string' ? { email: details.email } : {}),
      ...(typeof details.provider_error === 'string' ? { provider_error: details.provider_error } : {}),
    },
  });
}

// --- linked identities -----------------------------------------------------------------------------

export async function linkedIdentities(ctx: AppContext, user: UserRow) {
  return {
    identities: (await identitiesOf(ctx.db, user.id)).map((i) => ({
      id: i.id,
      issuer: i.issuer,
      subject: i.subject,
      email: i.email,
      created_at: i.created_at,
      last_login_at: i.last_login_at,
    })),
    password_sign_in: hasPasswordSignIn(ctx, user),
  };
}

const hasPasswordSignIn = (ctx: AppContext, user: UserRow): boolean => user.password_hash !== NO_PASSWORD && passwordLoginAllowed(ctx.config, user.email);

/** Unlinks one of the caller's identities, unless it is their last way to sign in. */
export async function unlinkIdentity(ctx: AppContext, userId: string, id: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const user = await userById(tx, userId);
    if (!user) throw notFound('user');
    const mine = await identitiesOf(tx, userId);
    const identity = mine.find((i) => i.id === id);
    if (!identity) throw notFound('identity');
    if (mine.length === 1 && !hasPasswordSignIn(ctx, user)) {
      throw conflict('this is your last way to sign in: set a password (or link another identity) first', {}, 'last_sign_in_method');
    }
    await deleteIdentity(tx, userId, id);
    await ctx.audit.append(tx, {
      ...actor,
      action: 'auth.sso.unlinked',
      target_type: 'user',
      target_id: userId,
      metadata: { issuer: identity.issuer, subject: identity.subject },
    });
  });
}
