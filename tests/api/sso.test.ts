// Single sign-on, tested like the security feature it is. Two providers on loopback: the certified
// `oidc-provider` (a real OpenID Provider: discovery, PKCE, codes used once, userinfo) for the
// sign-in paths, linking, provisioning, group mapping and MFA; and a forge the test controls (its
// discovery, key set and token endpoint answer id_tokens this file signs) for each precise way an
// id_token can be wrong. Every refusal asserts its status, the envelope's code, that no session
// cookie was set, and its audit row. Also: the trusted-proxy header, the cap on refusal rows (and the
// summary of the rest), and password sign-in turned off.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { LOGIN_STATE_TTL_SECONDS } from '../../src/auth/sso/policy.ts';
import { ConfigError } from '../../src/config/load.ts';
import { ManualClock, isoMicros, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { testService, type TestResponse, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, STRONG_PASSWORD, mfaAdmin, setupAdmin, userBrowser } from '../helpers/identity.ts';
import { signInAtProvider, startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';

const CLIENT_ID = 'svc-test';
const CLIENT_SECRET = 'client-secret-of-the-svc-test-client-0123456789';
const CALLBACK = 'http://localhost/api/v1/auth/sso/callback';

const oidcEnv = (issuer: string, extra: Record<string, string> = {}) => ({
  ...FAST_IDENTITY_ENV,
  SVC_OIDC_ISSUER: issuer,
  SVC_OIDC_CLIENT_ID: CLIENT_ID,
  SVC_OIDC_CLIENT_SECRET: CLIENT_SECRET,
  SVC_OIDC_ALLOW_HTTP: 'true',
  SVC_OIDC_ALLOW_PRIVATE_PROVIDER: 'true',
  ...extra,
});

interface AuditRow {
  action: string;
  result: string;
  user_id: string | null;
  target_id: string | null;
  source_ip: string | null;
  metadata: Record<string, any>;
}

async function auditRows(svc: TestService, action: string): Promise<AuditRow[]> {
  const rows = await svc.ctx.db.all<AuditRow & { metadata: unknown }>(
    sql`SELECT action, result, user_id, target_id, source_ip, metadata FROM audit_log WHERE action = ${action} ORDER BY occurred_at, id`,
  );
  return rows.map((r) => ({ ...r, metadata: typeof r.metadata === 'string' ? JSON.parse(r.metadata) : (r.metadata as Record<string, any>) }));
}

const sessionCookieSet = (res: TestResponse) => res.headers.getSetCookie().some((c) => /^svc_session=[^;]+/.test(c));

/** The refusal as the tests want it: status, code, no session, and an `auth.sso.refused` row with the reason. */
async function expectRefused(svc: TestService, res: TestResponse, status: number, error: string, reason: string, method = 'oidc') {
  expect({ status: res.status, error: res.body?.error, reason: res.body?.details?.reason }).toEqual({ status, error, reason });
  expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['error', 'message', 'details']));
  expect(sessionCookieSet(res)).toBe(false);
  const rows = await auditRows(svc, 'auth.sso.refused');
  const row = rows.at(-1)!;
  expect(row).toBeDefined();
  expect({ result: row.result, method: row.metadata.method, reason: row.metadata.reason, error: row.metadata.error }).toEqual({ result: 'denied', method, reason, error });
}

/** Starts a login in `b`; answers the provider URL's parameters. */
async function start(b: Browser, query = '') {
  const res = await b.call('GET', `/api/v1/auth/sso/login${query}`);
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  return { location, state: location.searchParams.get('state')!, nonce: location.searchParams.get('nonce')! };
}

const callbackPath = (url: string) => {
  const u = new URL(url);
  expect(`${u.origin}${u.pathname}`).toBe(CALLBACK);
  return `${u.pathname}${u.search}`;
};

/** As if SVC_MFA_VERIFICATION_TTL_SECONDS had passed since the user's sessions verified MFA. */
const ageMfa = (svc: TestService, userId: string) =>
  svc.ctx.db.tx((tx) => tx.run(sql`UPDATE sessions SET mfa_verified_at = ${'2000-01-01T00:00:00.000000+00:00'} WHERE user_id = ${userId}`));

/** `email`'s account signed in through the provider with its MFA assertion (`ssoLogin`), then
 * SVC_MFA_VERIFICATION_TTL_SECONDS later. */
async function signedInPastMfaWindow(admin: Browser, email: string, ssoLogin: (b: Browser) => Promise<TestResponse>): Promise<Browser & { id: string }> {
  const user = await userBrowser(admin, email);
  const b = Object.assign(new Browser(admin.svc), { id: user.id });
  expect((await ssoLogin(b)).status).toBe(302);
  expect((await b.call('GET', '/api/v1/auth/me')).body.mfa).toEqual({ enrolled: false, pending: false, fresh: true });
  await ageMfa(admin.svc, user.id);
  return b;
}

const newKey = (b: Browser) => b.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } });
/** A refused re-verification left the session as it was: the same user, MFA not fresh, fresh-MFA routes still refused. */
async function expectMfaStillStale(b: Browser & { id: string }) {
  const me = (await b.call('GET', '/api/v1/auth/me')).body;
  expect({ id: me.id, mfa: me.mfa }).toEqual({ id: b.id, mfa: { enrolled: false, pending: false, fresh: false } });
  expect((await newKey(b)).body.error).toBe('mfa_reverify_sso');
}
const REVERIFY_URL = '/api/v1/auth/sso/login?reauthenticate=true';
/** What the dashboard does with 403 mfa_reverify_sso: to its login_url, asking to come back to `next`. */
const startReverify = (b: Browser, next: string) => start(b, `?reauthenticate=true&next=${encodeURIComponent(next)}`);

// --- the real provider ------------------------------------------------------------------------------

describe('OpenID Connect with a real provider (oidc-provider)', () => {
  let op: TestOidcProvider;
  let svc: TestService;
  let admin: Browser;

  /** The whole browser round trip; answers svc's callback response. */
  async function ssoLogin(b: Browser, email: string, query = ''): Promise<TestResponse> {
    const { location } = await start(b, query);
    return b.call('GET', callbackPath(await signInAtProvider(location.toString(), email)));
  }

  beforeAll(async () => {
    op = await startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUris: [CALLBACK],
      accounts: [
        { sub: 'sub-admin', email: 'admin@example.com' },
        { sub: 'sub-dev', email: 'dev@example.com' },
        { sub: 'sub-new', email: 'new.person@example.com', name: 'New Person', groups: ['svc-ops', 'everyone'] },
        { sub: 'sub-boss', email: 'boss@example.com', groups: ['svc-admins', 'svc-ops-lead'] },
        { sub: 'sub-unverified', email: 'unverified@example.com', email_verified: false },
        { sub: 'sub-gone', email: 'gone@example.com' },
        { sub: 'sub-stranger', email: 'stranger@example.com' },
        { sub: 'sub-mfa', email: 'strong@example.com', amr: ['pwd', 'mfa'] },
        { sub: 'sub-totp', email: 'totp@example.com' },
        { sub: 'sub-otp', email: 'otp@example.com', amr: ['pwd', 'otp'] },
        { sub: 'sub-acr', email: 'acr@example.com', acr: 'urn:svc-test:mfa' },
        { sub: 'sub-acr-weak', email: 'acr-weak@example.com', acr: 'urn:svc-test:pwd' },
        { sub: 'sub-totp-idp', email: 'totp-idp@example.com', amr: ['pwd', 'mfa'] },
        { sub: 'sub-inactive', email: 'inactive@example.com' },
        { sub: 'sub-again', email: 'again@example.com', amr: ['pwd', 'mfa'] },
        { sub: 'sub-again-2', email: 'again-2@example.com', amr: ['pwd', 'mfa'] },
        { sub: 'sub-again-other', email: 'again-other@example.com', amr: ['pwd', 'mfa'] },
        { sub: 'sub-again-totp', email: 'again-totp@example.com', amr: ['pwd', 'mfa'] },
      ],
    });
    svc = await testService({
      env: oidcEnv(op.issuer, {
        SVC_OIDC_SCOPES: 'openid email profile groups',
        SVC_SSO_AUTO_PROVISION: 'true',
        SVC_SSO_PROVISION_PROJECTS: 'default',
        SVC_SSO_PROVISION_ROLE: 'viewer',
        SVC_OIDC_ADMIN_GROUPS: 'svc-admins',
        SVC_OIDC_PROJECT_ROLES: 'svc-ops:ops:operator,svc-ops-lead:ops:admin',
        SVC_OIDC_MFA_ACR_VALUES: 'urn:svc-test:mfa',
      }),
    });
    admin = await setupAdmin(svc);
    await admin.enrollMfa();
    expect((await admin.call('POST', '/api/v1/projects', { body: { slug: 'ops', name: 'Operations' } })).status).toBe(201);
  });
  afterAll(async () => {
    await svc?.close();
    await op?.close();
  });

  test('the sign-in page learns that SSO is on and its label', async () => {
    const res = await svc.call('GET', '/api/v1/auth/sso/config');
    expect(res.body).toEqual({ oidc: { enabled: true, label: 'Sign in with SSO' }, proxy: { enabled: false }, password_login: { enabled: true, break_glass_only: false } });
  });

  test('the SSO settings are listed to administrators, the client secret masked', async () => {
    const settings = (await admin.call('GET', '/api/v1/admin/settings')).body.settings as { name: string; value: unknown }[];
    const by = Object.fromEntries(settings.map((s) => [s.name, s.value]));
    expect(by.SVC_OIDC_CLIENT_SECRET).toBe('***');
    expect(by.SVC_OIDC_ISSUER).toBe(op.issuer);
    expect(by.SVC_OIDC_PROJECT_ROLES).toBe('svc-ops:ops:operator,svc-ops-lead:ops:admin');
    expect(JSON.stringify(settings)).not.toContain(CLIENT_SECRET);
  });

  test('login: 302 to the provider with code flow, PKCE S256, state and nonce; the binding cookie is HttpOnly, Lax, short-lived', async () => {
    const b = new Browser(svc);
    const res = await b.call('GET', '/api/v1/auth/sso/login?next=/projects/default');
    expect(res.status).toBe(302);
    const u = new URL(res.headers.get('location')!);
    expect(`${u.origin}${u.pathname}`).toBe(`${op.issuer}/auth`);
    const p = Object.fromEntries(u.searchParams);
    expect(p).toMatchObject({ response_type: 'code', client_id: CLIENT_ID, redirect_uri: CALLBACK, code_challenge_method: 'S256', scope: 'openid email profile groups' });
    expect(p.state!.length).toBeGreaterThanOrEqual(43);
    expect(p.nonce!.length).toBeGreaterThanOrEqual(43);
    expect(p.code_challenge!).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('svc_sso='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Max-Age=600/);
    expect(sessionCookieSet(res)).toBe(false);
  });

  test('an existing account is matched by verified e-mail, linked, and signed in like a password login', async () => {
    const dev = await userBrowser(admin, 'dev@example.com');
    const b = new Browser(svc);
    const res = await ssoLogin(b, 'dev@example.com', '?next=/projects/default');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/projects/default');
    expect(b.cookies.has('svc_session')).toBe(true);
    expect(b.cookies.has('svc_csrf')).toBe(true);
    expect(b.cookies.has('svc_sso')).toBe(false);
    const me = await b.call('GET', '/api/v1/auth/me');
    expect(me.body).toMatchObject({ id: dev.id, email: 'dev@example.com', mfa: { enrolled: false, pending: false, fresh: false } });
    // CSRF works as for any session.
    expect((await b.call('PATCH', '/api/v1/auth/me', { body: { display_name: 'Dev' } })).status).toBe(200);
    expect((await b.call('PATCH', '/api/v1/auth/me', { body: { display_name: 'Dev' }, csrf: false })).status).toBe(403);
    const linked = (await auditRows(svc, 'auth.sso.linked')).find((r) => r.user_id === dev.id)!;
    expect(linked.metadata).toMatchObject({ issuer: op.issuer, subject: 'sub-dev', email: 'dev@example.com', matched_by: 'email' });
    const login = (await auditRows(svc, 'auth.login')).at(-1)!;
    expect(login).toMatchObject({ user_id: dev.id, result: 'success' });
    expect(login.metadata).toMatchObject({ method: 'oidc', issuer: op.issuer, subject: 'sub-dev', mfa_asserted: false, mfa_required: false });
    // The account page lists the identity.
    const ids = await b.call('GET', '/api/v1/auth/sso/identities');
    expect(ids.body).toMatchObject({ password_sign_in: true, identities: [{ issuer: op.issuer, subject: 'sub-dev', email: 'dev@example.com' }] });
    // Later logins match by (issuer, subject): a second login adds no link.
    const again = new Browser(svc);
    expect((await ssoLogin(again, 'dev@example.com')).status).toBe(302);
    expect((await auditRows(svc, 'auth.sso.linked')).filter((r) => r.user_id === dev.id)).toHaveLength(1);
  });

  test('first login of an unknown address provisions an account with the default role and the mapped roles', async () => {
    const b = new Browser(svc);
    const res = await ssoLogin(b, 'new.person@example.com');
    expect(res.status).toBe(302);
    const me = (await b.call('GET', '/api/v1/auth/me')).body;
    expect(me).toMatchObject({ email: 'new.person@example.com', display_name: 'New Person', is_admin: false });
    const roles = Object.fromEntries(me.memberships.map((m: any) => [m.project_slug, m.role]));
    expect(roles).toEqual({ default: 'viewer', ops: 'operator' });
    const provisioned = (await auditRows(svc, 'auth.sso.provisioned')).at(-1)!;
    expect(provisioned).toMatchObject({ user_id: me.id });
    expect(provisioned.metadata).toMatchObject({ email: 'new.person@example.com' });
    expect((await auditRows(svc, 'auth.sso.linked')).some((r) => r.user_id === me.id && r.metadata.matched_by === 'provisioned')).toBe(true);
    const applied = (await auditRows(svc, 'auth.sso.groups_applied')).find((r) => r.user_id === me.id)!;
    expect(applied.metadata.applied).toEqual({ projects: { ops: { from: null, to: 'operator' } } });
    // No password: the account cannot sign in with one, and its only identity cannot be unlinked.
    expect((await new Browser(svc).login('new.person@example.com', 'anything-at-all')).status).toBe(401);
    const ids = await b.call('GET', '/api/v1/auth/sso/identities');
    expect(ids.body.password_sign_in).toBe(false);
    const unlink = await b.call('DELETE', `/api/v1/auth/sso/identities/${ids.body.identities[0].id}`);
    expect({ status: unlink.status, error: unlink.body.error }).toEqual({ status: 409, error: 'last_sign_in_method' });
  });

  test('group mapping: the admin group makes a global administrator, the higher of two project rules wins, later logins follow the provider', async () => {
    const b = new Browser(svc);
    expect((await ssoLogin(b, 'boss@example.com')).status).toBe(302);
    const me = (await b.call('GET', '/api/v1/auth/me')).body;
    expect(me.is_admin).toBe(true);
    const users = await admin.call('GET', `/api/v1/users/${me.id}`);
    expect(users.body.is_admin).toBe(true);
    const members = (await admin.call('GET', '/api/v1/projects/ops/memberships')).body;
    expect(members.find((m: any) => m.user_id === me.id).role).toBe('admin');
    const applied = (await auditRows(svc, 'auth.sso.groups_applied')).find((r) => r.user_id === me.id)!;
    expect(applied.metadata.applied).toEqual({ is_admin: { from: false, to: true }, projects: { ops: { from: null, to: 'admin' } } });
    // Leaving the admin group at the provider clears the flag at the next login.
    op.accounts.get('sub-boss')!.groups = ['svc-ops'];
    const later = new Browser(svc);
    expect((await ssoLogin(later, 'boss@example.com')).status).toBe(302);
    expect((await later.call('GET', '/api/v1/auth/me')).body.is_admin).toBe(false);
    // The project's rules still apply: the last admin of `ops` is not demoted (the skip is audited).
    const roles = (await admin.call('GET', '/api/v1/projects/ops/memberships')).body;
    expect(roles.find((m: any) => m.user_id === me.id).role).toBe('admin');
    const last = (await auditRows(svc, 'auth.sso.groups_applied')).at(-1)!;
    expect(last.metadata).toMatchObject({ applied: { is_admin: { from: true, to: false } }, skipped: { ops: 'last_project_admin' } });
    // With another admin in the project, the next login lowers the role as mapped.
    const other = await userBrowser(admin, 'second-admin@example.com');
    expect((await admin.call('POST', '/api/v1/projects/ops/memberships', { body: { user_id: other.id, role: 'admin' } })).status).toBe(201);
    expect((await ssoLogin(new Browser(svc), 'boss@example.com')).status).toBe(302);
    const now = (await admin.call('GET', '/api/v1/projects/ops/memberships')).body;
    expect(now.find((m: any) => m.user_id === me.id).role).toBe('operator');
  });

  test('the provider asserting MFA makes the session MFA-fresh; without it svc asks for its own second factor', async () => {
    // amr: mfa → fresh MFA, even without svc's own authenticator: a fresh-MFA route works.
    await userBrowser(admin, 'strong@example.com');
    const strong = new Browser(svc);
    expect((await ssoLogin(strong, 'strong@example.com')).status).toBe(302);
    expect((await strong.call('GET', '/api/v1/auth/me')).body.mfa).toEqual({ enrolled: false, pending: false, fresh: true });
    expect((await strong.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } })).status).toBe(201);
    expect((await auditRows(svc, 'auth.login')).findLast((r) => r.metadata.subject === 'sub-mfa')!.metadata).toMatchObject({ method: 'oidc', mfa_asserted: true });
    // No assertion, no svc authenticator: fresh-MFA routes still refuse.
    const dev = new Browser(svc);
    expect((await ssoLogin(dev, 'dev@example.com')).status).toBe(302);
    const key = await dev.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } });
    expect({ status: key.status, error: key.body.error }).toEqual({ status: 403, error: 'mfa_enrollment_required' });
    // An account with svc's TOTP and no assertion: the MFA step follows the SSO login.
    const totp = await userBrowser(admin, 'totp@example.com');
    await totp.enrollMfa();
    const b = new Browser(svc);
    const res = await ssoLogin(b, 'totp@example.com', '?next=/activity');
    expect(res.headers.get('location')).toBe('/login/mfa?next=%2Factivity');
    expect((await b.call('GET', '/api/v1/projects')).body.error).toBe('mfa_required');
    b.totpKey = totp.totpKey;
    expect((await b.verifyMfa()).status).toBe(200);
    expect((await b.call('GET', '/api/v1/projects')).status).toBe(200);
  });

  test('MFA is also asserted by amr otp or a listed acr; an acr not in SVC_OIDC_MFA_ACR_VALUES is no assertion', async () => {
    const cases = [
      { email: 'otp@example.com', fresh: true },
      { email: 'acr@example.com', fresh: true },
      { email: 'acr-weak@example.com', fresh: false },
    ];
    for (const { email, fresh } of cases) {
      await userBrowser(admin, email);
      const b = new Browser(svc);
      expect((await ssoLogin(b, email)).status).toBe(302);
      const key = await b.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } });
      const login = (await auditRows(svc, 'auth.login')).findLast((r) => r.metadata.method === 'oidc')!;
      expect({ email, mfa: (await b.call('GET', '/api/v1/auth/me')).body.mfa, key: key.body.error ?? key.status, asserted: login.metadata.mfa_asserted }).toEqual({
        email,
        mfa: { enrolled: false, pending: false, fresh },
        key: fresh ? 201 : 'mfa_enrollment_required',
        asserted: fresh,
      });
    }
  });

  test('an account with svc\'s TOTP whose provider asserts MFA skips svc\'s authenticator step', async () => {
    const enrolled = await userBrowser(admin, 'totp-idp@example.com');
    await enrolled.enrollMfa();
    const b = new Browser(svc);
    const res = await ssoLogin(b, 'totp-idp@example.com', '?next=/activity');
    expect(res.headers.get('location')).toBe('/activity');
    expect((await b.call('GET', '/api/v1/auth/me')).body.mfa).toEqual({ enrolled: true, pending: false, fresh: true });
    expect((await b.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } })).status).toBe(201);
  });

  const idpMfaSessionPastWindow = (email: string) => signedInPastMfaWindow(admin, email, (b) => ssoLogin(b, email));

  test('MFA from the provider, past its window: 403 mfa_reverify_sso; signing in again there (prompt=login, max_age=0) makes the same session fresh', async () => {
    const b = await idpMfaSessionPastWindow('again@example.com');
    const refused = await newKey(b);
    expect({ status: refused.status, error: refused.body.error, details: refused.body.details }).toEqual({
      status: 403,
      error: 'mfa_reverify_sso',
      details: { ttl_seconds: svc.ctx.config.SVC_MFA_VERIFICATION_TTL_SECONDS, provider: new URL(op.issuer).host, login_url: REVERIFY_URL },
    });
    const session = b.cookies.get('svc_session');
    const logins = (await auditRows(svc, 'auth.login')).length;
    const { location } = await startReverify(b, '/account/security');
    expect({ prompt: location.searchParams.get('prompt'), max_age: location.searchParams.get('max_age') }).toEqual({ prompt: 'login', max_age: '0' });
    const back = await b.call('GET', callbackPath(await signInAtProvider(location.toString(), 'again@example.com')));
    expect({ status: back.status, location: back.headers.get('location'), newSession: sessionCookieSet(back) }).toEqual({ status: 302, location: '/account/security', newSession: false });
    expect(b.cookies.get('svc_session')).toBe(session);
    expect((await b.call('GET', '/api/v1/auth/me')).body.mfa).toEqual({ enrolled: false, pending: false, fresh: true });
    expect((await newKey(b)).status).toBe(201);
    const row = (await auditRows(svc, 'auth.sso.reverified')).at(-1)!;
    expect({ user_id: row.user_id, target_id: row.target_id, issuer: row.metadata.issuer, subject: row.metadata.subject }).toEqual({
      user_id: b.id,
      target_id: b.id,
      issuer: op.issuer,
      subject: 'sub-again',
    });
    // A confirmation, not a sign-in.
    expect(await auditRows(svc, 'auth.login')).toHaveLength(logins);
  });

  test('refused: the provider signing in someone else to confirm; audited, and the session stays as it was', async () => {
    // The other person has an svc account, linked to their identity at the provider.
    const other = await userBrowser(admin, 'again-other@example.com');
    expect((await ssoLogin(new Browser(svc), 'again-other@example.com')).status).toBe(302);
    const b = await idpMfaSessionPastWindow('again-2@example.com');
    const session = b.cookies.get('svc_session');
    const { location } = await startReverify(b, '/settings');
    const back = await b.call('GET', callbackPath(await signInAtProvider(location.toString(), 'again-other@example.com')));
    await expectRefused(svc, back, 403, 'sso_reverify_refused', 'different_user');
    const row = (await auditRows(svc, 'auth.sso.refused')).at(-1)!;
    expect(row.target_id).toBe(b.id);
    expect(b.cookies.get('svc_session')).toBe(session);
    await expectMfaStillStale(b);
    expect((await other.call('GET', '/api/v1/auth/me')).body.id).toBe(other.id);
    // A browser is led back to its page, still signed in, with the reason.
    const again = await startReverify(b, '/settings');
    const page = await b.call('GET', callbackPath(await signInAtProvider(again.location.toString(), 'again-other@example.com')), { headers: { accept: 'text/html' } });
    expect({ status: page.status, location: page.headers.get('location') }).toEqual({ status: 303, location: '/settings?sso_error=sso_reverify_refused' });
    expect(b.cookies.get('svc_session')).toBe(session);
  });

  test('an account with svc\'s TOTP still confirms with its authenticator, though its MFA came from the provider', async () => {
    const enrolled = await userBrowser(admin, 'again-totp@example.com');
    await enrolled.enrollMfa();
    const b = new Browser(svc);
    expect((await ssoLogin(b, 'again-totp@example.com')).status).toBe(302);
    await ageMfa(svc, enrolled.id);
    const refused = await newKey(b);
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 403, error: 'mfa_reverify_required' });
    b.totpKey = enrolled.totpKey;
    expect((await b.verifyMfa()).status).toBe(200);
    expect((await newKey(b)).status).toBe(201);
  });

  test('refused: a login that took longer than its state lifetime', async () => {
    const b = new Browser(svc);
    // Started LOGIN_STATE_TTL_SECONDS (and a second) ago, answered now.
    setClock(new ManualClock(nowMicros() - (LOGIN_STATE_TTL_SECONDS + 1) * 1_000_000));
    let location: URL;
    try {
      ({ location } = await start(b));
    } finally {
      resetClock();
    }
    const back = await signInAtProvider(location.toString(), 'admin@example.com');
    await expectRefused(svc, await b.call('GET', callbackPath(back)), 400, 'sso_state_invalid', 'expired_state');
  });

  test('refused: an unverified e-mail address', async () => {
    const b = new Browser(svc);
    const res = await ssoLogin(b, 'unverified@example.com');
    await expectRefused(svc, res, 403, 'sso_email_unverified', 'email_unverified');
    expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!.metadata.email).toBe('unverified@example.com');
  });

  test('refused: a deactivated account, whatever the provider says (also once linked)', async () => {
    const gone = await userBrowser(admin, 'gone@example.com');
    expect((await ssoLogin(new Browser(svc), 'gone@example.com')).status).toBe(302);
    expect((await admin.call('PATCH', `/api/v1/users/${gone.id}`, { body: { is_active: false } })).status).toBe(200);
    const res = await ssoLogin(new Browser(svc), 'gone@example.com');
    await expectRefused(svc, res, 403, 'sso_account_inactive', 'account_inactive');
    expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!).toMatchObject({ user_id: null });
  });

  test('refused: a deactivated account matched by e-mail before any link; no identity is linked', async () => {
    const inactive = await userBrowser(admin, 'inactive@example.com');
    expect((await admin.call('PATCH', `/api/v1/users/${inactive.id}`, { body: { is_active: false } })).status).toBe(200);
    const res = await ssoLogin(new Browser(svc), 'inactive@example.com');
    await expectRefused(svc, res, 403, 'sso_account_inactive', 'account_inactive');
    expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!.target_id).toBe(inactive.id);
    expect((await auditRows(svc, 'auth.sso.linked')).filter((r) => r.user_id === inactive.id)).toEqual([]);
  });

  test('refused: a wrong state, and a state started in another browser', async () => {
    const b = new Browser(svc);
    const { location } = await start(b);
    const back = new URL(await signInAtProvider(location.toString(), 'admin@example.com'));
    const code = back.searchParams.get('code')!;
    const forged = await b.call('GET', `/api/v1/auth/sso/callback?code=${code}&state=${'A'.repeat(43)}`);
    await expectRefused(svc, forged, 400, 'sso_state_invalid', 'unknown_state');
    const missing = await b.call('GET', `/api/v1/auth/sso/callback?code=${code}`);
    await expectRefused(svc, missing, 400, 'sso_state_invalid', 'missing_state');
    // The right state in another browser (login CSRF): refused, and the login stays usable where it started.
    const other = new Browser(svc);
    const elsewhere = await other.call('GET', callbackPath(back.toString()));
    await expectRefused(svc, elsewhere, 400, 'sso_state_invalid', 'browser_mismatch');
    expect((await b.call('GET', callbackPath(back.toString()))).status).toBe(302);
  });

  test('refused: a replayed callback, and a replayed code with a new state', async () => {
    const b = new Browser(svc);
    const { location } = await start(b);
    const back = await signInAtProvider(location.toString(), 'admin@example.com');
    expect((await b.call('GET', callbackPath(back))).status).toBe(302);
    const attacker = new Browser(svc);
    attacker.cookies.set('svc_sso', b.cookies.get('svc_sso') ?? '');
    // The same answer again (even with the binding cookie): the state was used.
    const replay = await b.call('GET', callbackPath(back));
    await expectRefused(svc, replay, 400, 'sso_replayed', 'state_replayed');
    // The same code under a fresh login of svc's: the provider refuses it (used, and bound to another PKCE verifier).
    const fresh = await start(b);
    const code = new URL(back).searchParams.get('code')!;
    const res = await b.call('GET', `/api/v1/auth/sso/callback?code=${code}&state=${fresh.state}`);
    await expectRefused(svc, res, 400, 'sso_code_rejected', 'code_rejected');
    expect(res.body.details.provider_error).toBe('invalid_grant');
  });

  test('refused: an address with no account while provisioning is off; a browser is sent to the sign-in page', async () => {
    const closed = await testService({ env: oidcEnv(op.issuer) });
    try {
      const b = new Browser(closed);
      const { location } = await start(b);
      const back = callbackPath(await signInAtProvider(location.toString(), 'stranger@example.com'));
      const res = await b.call('GET', back, { headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/login?sso_error=sso_no_account');
      expect(sessionCookieSet(res)).toBe(false);
      expect((await auditRows(closed, 'auth.sso.refused')).at(-1)!.metadata).toMatchObject({ method: 'oidc', reason: 'no_account' });
    } finally {
      await closed.close();
    }
  });

  test('unlinking: allowed while a password remains, audited', async () => {
    const b = new Browser(svc);
    await b.login('admin@example.com', STRONG_PASSWORD);
    await b.verifyMfa().catch(() => {});
    const sso = new Browser(svc);
    await ssoLogin(sso, 'admin@example.com');
    const ids = await admin.call('GET', '/api/v1/auth/sso/identities');
    expect(ids.body.identities).toHaveLength(1);
    const res = await admin.call('DELETE', `/api/v1/auth/sso/identities/${ids.body.identities[0].id}`);
    expect(res.status).toBe(200);
    expect((await auditRows(svc, 'auth.sso.unlinked')).at(-1)!.metadata).toMatchObject({ issuer: op.issuer, subject: 'sub-admin' });
    expect((await admin.call('GET', '/api/v1/auth/sso/identities')).body.identities).toEqual([]);
    expect((await admin.call('DELETE', `/api/v1/auth/sso/identities/${ids.body.identities[0].id}`)).status).toBe(404);
  });
});

// --- the forge: id_tokens signed by this test --------------------------------------------------------

describe('id_token checks (tokens this test signs, keys it serves)', () => {
  let forge: ReturnType<typeof Bun.serve>;
  let issuer: string;
  let svc: TestService;
  let next: { id_token: string } | null = null;
  let jwksFetches = 0;
  let key: CryptoKey;
  let strangerKey: CryptoKey;
  let publicJwk: JWK;
  let admin: Browser;
  const SUB = 'forged-sub';

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    key = pair.privateKey;
    publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    strangerKey = (await generateKeyPair('RS256')).privateKey;
    forge = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        if (path === '/.well-known/openid-configuration') {
          return Response.json({
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            // HS256 too: svc must not take a provider's word for a symmetric algorithm.
            id_token_signing_alg_values_supported: ['RS256', 'HS256'],
          });
        }
        if (path === '/jwks') {
          jwksFetches++;
          return Response.json({ keys: [publicJwk] });
        }
        if (path === '/token' && req.method === 'POST') {
          if (!next) return Response.json({ error: 'invalid_grant' }, { status: 400 });
          const answer = { ...next, access_token: 'at', token_type: 'Bearer' };
          next = null;
          return Response.json(answer);
        }
        return new Response('not found', { status: 404 });
      },
    });
    issuer = `http://127.0.0.1:${forge.port}`;
    svc = await testService({ env: oidcEnv(issuer) });
    admin = await mfaAdmin(svc);
    await userBrowser(admin, 'forged@example.com');
  });
  afterAll(async () => {
    await svc?.close();
    forge?.stop(true);
  });

  const now = () => Math.floor(Date.now() / 1000);

  async function sign(claims: Record<string, unknown>, opts: { key?: CryptoKey; kid?: string } = {}): Promise<string> {
    return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? 'k1' }).sign(opts.key ?? key);
  }

  type Token = (nonce: string) => Promise<string> | string;

  /** A login whose token endpoint answers `token(nonce)`; answers svc's callback response. */
  async function loginWith(token: Token, callbackQuery = ''): Promise<TestResponse> {
    const b = new Browser(svc);
    return answerWith(b, await start(b), token, callbackQuery);
  }

  /** The provider's answer to the login `b` started: its token endpoint answers `token(nonce)`. */
  async function answerWith(b: Browser, { state, nonce }: { state: string; nonce: string }, token: Token, callbackQuery = ''): Promise<TestResponse> {
    next = { id_token: await token(nonce) };
    try {
      return await b.call('GET', `/api/v1/auth/sso/callback?code=forged-code&state=${state}${callbackQuery}`);
    } finally {
      next = null;
    }
  }

  const good = (nonce: string, over: Record<string, unknown> = {}) => ({
    iss: issuer,
    aud: CLIENT_ID,
    sub: SUB,
    email: 'forged@example.com',
    email_verified: true,
    nonce,
    iat: now(),
    exp: now() + 300,
    ...over,
  });

  test('a well-formed token signs in (the forge itself works); the key set is fetched once and reused', async () => {
    const res = await loginWith((nonce) => sign(good(nonce)));
    expect(res.status).toBe(302);
    expect(sessionCookieSet(res)).toBe(true);
    expect(jwksFetches).toBe(1);
    expect((await loginWith((nonce) => sign(good(nonce)))).status).toBe(302);
    expect(jwksFetches).toBe(1);
  });

  test('refused: a wrong nonce', async () => {
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { nonce: `${nonce}x` }))), 401, 'sso_token_invalid', 'nonce_mismatch');
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { nonce: undefined }))), 401, 'sso_token_invalid', 'nonce_mismatch');
  });

  test('refused: an expired token', async () => {
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { iat: now() - 900, exp: now() - 120 }))), 401, 'sso_token_invalid', 'id_token_expired');
  });

  test('refused: a token from the future (iat, nbf)', async () => {
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { iat: now() + 600, exp: now() + 900 }))), 401, 'sso_token_invalid', 'id_token_not_yet_valid');
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { nbf: now() + 600 }))), 401, 'sso_token_invalid', 'id_token_not_yet_valid');
  });

  test('accepted: a clock difference within SVC_OIDC_CLOCK_SKEW_SECONDS', async () => {
    expect((await loginWith((nonce) => sign(good(nonce, { iat: now() + 30, nbf: now() + 30 })))).status).toBe(302);
  });

  test('refused: a wrong audience, and several audiences without svc as the authorised party', async () => {
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { aud: 'another-client' }))), 401, 'sso_token_invalid', 'wrong_audience');
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { aud: [CLIENT_ID, 'another-client'] }))), 401, 'sso_token_invalid', 'azp_missing');
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { aud: [CLIENT_ID, 'x'], azp: 'x' }))), 401, 'sso_token_invalid', 'wrong_azp');
  });

  test('refused: a wrong issuer', async () => {
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce, { iss: 'https://evil.example' }))), 401, 'sso_token_invalid', 'wrong_issuer');
  });

  test('refused: a callback whose iss parameter names another issuer (RFC 9207); ours is accepted', async () => {
    const res = await loginWith((nonce) => sign(good(nonce)), `&iss=${encodeURIComponent('https://evil.example')}`);
    await expectRefused(svc, res, 401, 'sso_token_invalid', 'wrong_issuer');
    expect((await loginWith((nonce) => sign(good(nonce)), `&iss=${encodeURIComponent(issuer)}`)).status).toBe(302);
  });

  test('refused: an HS256 id_token keyed with the client secret, though the provider lists HS256', async () => {
    const hmac = (nonce: string) => new SignJWT(good(nonce)).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(CLIENT_SECRET));
    await expectRefused(svc, await loginWith(hmac), 401, 'sso_token_invalid', 'alg_not_allowed');
  });

  test('refused: alg none', async () => {
    const unsigned = (nonce: string) => {
      const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return `${part({ alg: 'none', typ: 'JWT' })}.${part(good(nonce))}.`;
    };
    await expectRefused(svc, await loginWith(unsigned), 401, 'sso_token_invalid', 'alg_not_allowed');
  });

  test('refused: a key not in the key set (after one refresh of the set), and a bad signature', async () => {
    const before = jwksFetches;
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce), { key: strangerKey, kid: 'k2' })), 401, 'sso_token_invalid', 'unknown_key');
    expect(jwksFetches - before).toBeLessThanOrEqual(1);
    // Another unknown key id within the minute: no second refetch (rate-limited).
    const after = jwksFetches;
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce), { key: strangerKey, kid: 'k3' })), 401, 'sso_token_invalid', 'unknown_key');
    expect(jwksFetches).toBe(after);
    // The known key id with another key's signature.
    await expectRefused(svc, await loginWith((nonce) => sign(good(nonce), { key: strangerKey, kid: 'k1' })), 401, 'sso_token_invalid', 'bad_signature');
  });

  describe('re-verification at the provider refused, the answer chosen claim by claim', () => {
    // From an address of its own: this describe's refusals stay within the audit rows per address (30 in ten minutes).
    beforeAll(() => svc.setPeer('10.66.0.1'));
    afterAll(() => svc.setPeer('127.0.0.1'));

    /** The provider's answer for `email`'s identity: signed in just now, with multi-factor; `over` changes that. */
    const again = (email: string, over: Record<string, unknown> = {}) => (nonce: string) =>
      sign(good(nonce, { sub: `forged-${email}`, email, auth_time: now(), amr: ['pwd', 'mfa'], ...over }));

    /** `email` signed in through the forge with its MFA assertion (which links the identity), past the fresh-MFA window. */
    const pastWindow = (email: string) => signedInPastMfaWindow(admin, email, async (b) => answerWith(b, await start(b), again(email)));

    async function expectReverifyRefused(b: Browser & { id: string }, res: TestResponse, reason: string) {
      await expectRefused(svc, res, 403, 'sso_reverify_refused', reason);
      expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!.target_id).toBe(b.id);
    }

    test('not_reauthenticated: an auth_time from before the request (past the clock skew), or none; the session stays as it was', async () => {
      const b = await pastWindow('not-again@example.com');
      // The provider kept the sign-in of ten minutes ago instead of asking again.
      await expectReverifyRefused(b, await answerWith(b, await startReverify(b, '/settings'), again('not-again@example.com', { auth_time: now() - 600 })), 'not_reauthenticated');
      await expectReverifyRefused(b, await answerWith(b, await startReverify(b, '/settings'), again('not-again@example.com', { auth_time: undefined })), 'not_reauthenticated');
      await expectMfaStillStale(b);
      // The same answer signed in just now confirms: the refusals were the auth_time's alone.
      const ok = await answerWith(b, await startReverify(b, '/settings'), again('not-again@example.com'));
      expect({ status: ok.status, location: ok.headers.get('location') }).toEqual({ status: 302, location: '/settings' });
      expect((await b.call('GET', '/api/v1/auth/me')).body.mfa).toEqual({ enrolled: false, pending: false, fresh: true });
    });

    test('mfa_not_asserted: signed in again just now, but with neither amr mfa/otp nor a listed acr; the session stays as it was', async () => {
      const b = await pastWindow('one-factor@example.com');
      const res = await answerWith(b, await startReverify(b, '/settings'), again('one-factor@example.com', { amr: ['pwd'], acr: 'urn:svc-test:pwd' }));
      await expectReverifyRefused(b, res, 'mfa_not_asserted');
      await expectMfaStillStale(b);
    });

    test('session_ended: the session was signed out while the provider was asked; it stays ended', async () => {
      const b = await pastWindow('signed-out@example.com');
      const session = b.cookies.get('svc_session')!;
      const started = await startReverify(b, '/settings');
      expect((await b.call('POST', '/api/v1/auth/logout')).status).toBe(204);
      await expectReverifyRefused(b, await answerWith(b, started, again('signed-out@example.com')), 'session_ended');
      b.cookies.set('svc_session', session);
      const me = await b.call('GET', '/api/v1/auth/me');
      expect({ status: me.status, error: me.body.error }).toEqual({ status: 401, error: 'unauthenticated' });
    });
  });

  test('a rotated key is picked up: an unknown key id refetches the set once', async () => {
    const rotated = await generateKeyPair('RS256', { extractable: true });
    publicJwk = { ...(await exportJWK(rotated.publicKey)), kid: 'k-rotated', alg: 'RS256', use: 'sig' };
    // Past the refresh interval of the previous test's refetch.
    const clock = new ManualClock(Date.now() * 1000 + 120_000_000);
    setClock(clock);
    try {
      const res = await loginWith((nonce) => sign(good(nonce, { iat: Math.floor(clock.nowMicros() / 1e6), exp: Math.floor(clock.nowMicros() / 1e6) + 300 }), { key: rotated.privateKey, kid: 'k-rotated' }));
      expect(res.status).toBe(302);
    } finally {
      resetClock();
    }
  });
});

// --- trusted-proxy header --------------------------------------------------------------------------

const PROXY_ENV = { ...FAST_IDENTITY_ENV, SVC_AUTH_PROXY_HEADER: 'X-Forwarded-Email', SVC_AUTH_PROXY_ADDRESSES: '10.77.0.0/24' };

describe('trusted-proxy header', () => {
  let svc: TestService;
  let admin: Browser;
  const PROXY = '10.77.0.5';

  beforeAll(async () => {
    svc = await testService({ env: PROXY_ENV });
    admin = await mfaAdmin(svc);
    await userBrowser(admin, 'proxied@example.com');
  });
  afterAll(() => svc?.close());

  test('from a listed proxy the header signs the user in', async () => {
    svc.setPeer(PROXY);
    const b = new Browser(svc);
    const res = await b.call('GET', '/api/v1/auth/proxy/login?next=/activity', { headers: { 'x-forwarded-email': 'Proxied@Example.com' } });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/activity');
    expect((await b.call('GET', '/api/v1/auth/me')).body.email).toBe('proxied@example.com');
    expect((await auditRows(svc, 'auth.login')).at(-1)!.metadata).toMatchObject({ method: 'proxy' });
  });

  test('refused: the header from an address not in the list', async () => {
    svc.setPeer('127.0.0.1');
    const res = await new Browser(svc).call('GET', '/api/v1/auth/proxy/login', { headers: { 'x-forwarded-email': 'proxied@example.com', 'x-forwarded-for': PROXY } });
    await expectRefused(svc, res, 403, 'proxy_not_trusted', 'untrusted_proxy', 'proxy');
    // The header is ignored everywhere else: it is no credential.
    const me = await svc.call('GET', '/api/v1/auth/me', { headers: { 'x-forwarded-email': 'proxied@example.com' } });
    expect(me.status).toBe(401);
  });

  test('refused: a listed proxy without the header, or naming no account', async () => {
    svc.setPeer(PROXY);
    await expectRefused(svc, await svc.call('GET', '/api/v1/auth/proxy/login'), 401, 'proxy_header_missing', 'header_missing', 'proxy');
    await expectRefused(svc, await svc.call('GET', '/api/v1/auth/proxy/login', { headers: { 'x-forwarded-email': 'nobody@example.com' } }), 403, 'sso_no_account', 'no_account', 'proxy');
  });

  test('refused: a deactivated account, though a listed proxy names it', async () => {
    const former = await userBrowser(admin, 'former@example.com');
    expect((await admin.call('PATCH', `/api/v1/users/${former.id}`, { body: { is_active: false } })).status).toBe(200);
    svc.setPeer(PROXY);
    const res = await svc.call('GET', '/api/v1/auth/proxy/login', { headers: { 'x-forwarded-email': 'former@example.com' } });
    await expectRefused(svc, res, 403, 'sso_account_inactive', 'account_inactive', 'proxy');
    expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!.target_id).toBe(former.id);
  });

  test('with SVC_SSO_AUTO_PROVISION a listed proxy provisions an unknown address (no identity to link)', async () => {
    const open = await testService({ env: { ...PROXY_ENV, SVC_SSO_AUTO_PROVISION: 'true', SVC_SSO_PROVISION_PROJECTS: 'default' } });
    try {
      await setupAdmin(open);
      open.setPeer(PROXY);
      const b = new Browser(open);
      const res = await b.call('GET', '/api/v1/auth/proxy/login?next=/activity', { headers: { 'x-forwarded-email': 'newcomer@example.com' } });
      expect({ status: res.status, location: res.headers.get('location') }).toEqual({ status: 302, location: '/activity' });
      const me = (await b.call('GET', '/api/v1/auth/me')).body;
      expect(me).toMatchObject({ email: 'newcomer@example.com', is_admin: false });
      expect(me.memberships.map((m: any) => [m.project_slug, m.role])).toEqual([['default', 'viewer']]);
      expect((await auditRows(open, 'auth.sso.provisioned')).map((r) => [r.user_id, r.metadata.email])).toEqual([[me.id, 'newcomer@example.com']]);
      expect((await auditRows(open, 'auth.login')).at(-1)!).toMatchObject({ user_id: me.id, metadata: { method: 'proxy' } });
      expect((await b.call('GET', '/api/v1/auth/sso/identities')).body).toEqual({ identities: [], password_sign_in: false });
    } finally {
      await open.close();
    }
  });
});

// --- refusal audit rows --------------------------------------------------------------------------------

describe('refusal audit rows: 30 per address in ten minutes, the rest in one summary row', () => {
  test('a flood of refusals (throttled ones included) is summarised when its window ends, and at shutdown', async () => {
    const clock = new ManualClock(Date.now() * 1000);
    setClock(clock);
    // A callback without state is refused before any provider is asked: none needs to listen.
    const svc = await testService({ env: oidcEnv('http://127.0.0.1:9') });
    try {
      const refuse = async () => (await svc.call('GET', '/api/v1/auth/sso/callback')).status;
      const started = clock.nowMicros();
      const statuses: number[] = [];
      for (let i = 0; i < 64; i++) statuses.push(await refuse());
      // The callback's throttle (60 a minute per address) answers the last four.
      expect(statuses.filter((s) => s === 429)).toHaveLength(4);
      expect(await auditRows(svc, 'auth.sso.refused')).toHaveLength(30);
      expect(await auditRows(svc, 'auth.sso.refused_suppressed')).toEqual([]);
      // Another address has rows of its own.
      svc.setPeer('10.9.9.9');
      expect(await refuse()).toBe(400);
      expect((await auditRows(svc, 'auth.sso.refused')).at(-1)!.source_ip).toBe('10.9.9.9');

      // The window ends; the next refusal writes the summary first, then opens a new window with a row of its own.
      clock.advance(600_000);
      svc.setPeer('127.0.0.1');
      expect(await refuse()).toBe(400);
      const [summary] = await auditRows(svc, 'auth.sso.refused_suppressed');
      expect(summary).toEqual({
        action: 'auth.sso.refused_suppressed',
        result: 'denied',
        user_id: null,
        target_id: '',
        source_ip: '127.0.0.1',
        metadata: { count: 34, by_reason: { missing_state: 30, rate_limited: 4 }, window_start: isoMicros(started), window_end: isoMicros(started + 600_000_000) },
      });
      expect(await auditRows(svc, 'auth.sso.refused')).toHaveLength(32);

      // Refusals left out of a window still open are summarised when the service stops.
      for (let i = 0; i < 32; i++) expect(await refuse()).toBe(400);
      expect(await auditRows(svc, 'auth.sso.refused')).toHaveLength(61);
      await svc.ctx.lifecycle.shutdown();
      const last = (await auditRows(svc, 'auth.sso.refused_suppressed')).map((r) => r.metadata);
      expect(last).toEqual([summary!.metadata, { count: 3, by_reason: { missing_state: 3 }, window_start: isoMicros(started + 600_000_000), window_end: isoMicros(clock.nowMicros()) }]);
    } finally {
      await svc.close();
      resetClock();
    }
  });
});

// --- password sign-in turned off ---------------------------------------------------------------------

describe('password sign-in turned off (break-glass admin only)', () => {
  test('others get 403 password_login_disabled; the break-glass admin still signs in', async () => {
    const svc = await testService({
      env: {
        ...FAST_IDENTITY_ENV,
        SVC_AUTH_PROXY_HEADER: 'X-Forwarded-Email',
        SVC_AUTH_PROXY_ADDRESSES: '10.77.0.0/24',
        SVC_PASSWORD_LOGIN_DISABLED: 'true',
        SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL: 'Admin@Example.com',
      },
    });
    try {
      const admin = await setupAdmin(svc);
      await admin.enrollMfa();
      await admin.call('POST', '/api/v1/users', { body: { email: 'user@example.com', password: STRONG_PASSWORD } });
      const res = await new Browser(svc).login('user@example.com', STRONG_PASSWORD);
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 403, error: 'password_login_disabled' });
      expect(sessionCookieSet(res)).toBe(false);
      expect((await auditRows(svc, 'auth.login')).at(-1)!).toMatchObject({ result: 'failed', metadata: { reason: 'password_login_disabled' } });
      expect((await new Browser(svc).login('admin@example.com', STRONG_PASSWORD)).status).toBe(200);
      expect((await svc.call('GET', '/api/v1/auth/sso/config')).body.password_login).toEqual({ enabled: true, break_glass_only: true });
    } finally {
      await svc.close();
    }
  });

  test('refused at start-up without single sign-on, or without a break-glass address', async () => {
    await expect(testService({ env: { ...FAST_IDENTITY_ENV, SVC_PASSWORD_LOGIN_DISABLED: 'true', SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL: 'a@example.com' } })).rejects.toThrow(ConfigError);
    await expect(
      testService({ env: { ...FAST_IDENTITY_ENV, SVC_PASSWORD_LOGIN_DISABLED: 'true', SVC_AUTH_PROXY_HEADER: 'X-Email', SVC_AUTH_PROXY_ADDRESSES: '10.0.0.1' } }),
    ).rejects.toThrow(/BREAK_GLASS/);
    await expect(testService({ env: { ...FAST_IDENTITY_ENV, SVC_OIDC_ISSUER: 'https://idp.example' } })).rejects.toThrow(/CLIENT_ID/);
    await expect(testService({ env: { ...FAST_IDENTITY_ENV, SVC_OIDC_PROJECT_ROLES: 'ops-only' } })).rejects.toThrow(/group:project-slug:role/);
  });

  test('without SSO configured the routes answer 404 and a private provider is refused by the outbound policy', async () => {
    const svc = await testService({ env: FAST_IDENTITY_ENV });
    try {
      const res = await svc.call('GET', '/api/v1/auth/sso/login');
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 404, error: 'sso_not_configured' });
      expect((await svc.call('GET', '/api/v1/auth/proxy/login')).body.error).toBe('proxy_auth_not_configured');
    } finally {
      await svc.close();
    }
    // A loopback provider without SVC_OIDC_ALLOW_PRIVATE_PROVIDER: discovery is never sent.
    const strict = await testService({ env: { ...oidcEnv('http://127.0.0.1:9'), SVC_OIDC_ALLOW_PRIVATE_PROVIDER: 'false' } });
    try {
      const res = await strict.call('GET', '/api/v1/auth/sso/login');
      expect({ status: res.status, error: res.body.error, reason: res.body.details.reason }).toEqual({ status: 502, error: 'sso_provider_error', reason: 'discovery_unreachable' });
      expect(res.body.message).toMatch(/loopback/);
      // A refused start is audited like a refused callback, and a browser lands on the sign-in page.
      expect((await auditRows(strict, 'auth.sso.refused')).at(-1)!.metadata).toMatchObject({ method: 'oidc', reason: 'discovery_unreachable', error: 'sso_provider_error' });
      const page = await strict.call('GET', '/api/v1/auth/sso/login', { headers: { accept: 'text/html' } });
      expect({ status: page.status, location: page.headers.get('location') }).toEqual({ status: 303, location: '/login?sso_error=sso_provider_error' });
    } finally {
      await strict.close();
    }
  });
});
