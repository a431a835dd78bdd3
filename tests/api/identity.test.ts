// Identity and access flows through the HTTP API: setup, login, MFA,
// sessions, users, projects, memberships, invitations, API keys.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { verifyChain } from '../../src/audit/verify.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, STRONG_PASSWORD, mfaAdmin, setupAdmin, userBrowser } from '../helpers/identity.ts';
import { mintSetupToken } from '../../src/setup/service.ts';

let svc: TestService;
beforeEach(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
});
afterEach(() => svc.close());

const auditActions = async () => (await svc.ctx.db.all<{ action: string }>(sql`SELECT action FROM audit_log ORDER BY occurred_at, id`)).map((r) => r.action);

describe('first-boot setup', () => {
  test('status is open, completion creates the admin and default project and signs in; a second completion gets 409', async () => {
    const anon = new Browser(svc);
    expect((await anon.call('GET', '/api/v1/setup/status')).body).toEqual({ first_boot: true });
    const page = await anon.call('GET', '/setup?token=x');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'nonce-");
    const { token } = (await mintSetupToken(svc.ctx))!;
    const done = await anon.call('POST', '/api/v1/setup/complete', { body: { token, email: 'Root@Example.COM', password: STRONG_PASSWORD } });
    expect(done.status).toBe(201);
    expect(done.body.user).toMatchObject({ email: 'root@example.com', is_admin: true, is_active: true });
    expect(done.body.project).toMatchObject({ slug: 'default', role: 'admin' });
    expect(done.text).not.toContain(STRONG_PASSWORD);
    const setCookies = done.headers.getSetCookie().join('\n');
    expect(setCookies).toMatch(/svc_session=[^;]+; Path=\/; Max-Age=\d+; SameSite=Lax; HttpOnly/);
    expect(setCookies).toMatch(/svc_csrf=[^;]+; Path=\/; Max-Age=\d+; SameSite=Strict(?!; HttpOnly)/);
    // Signed in right away.
    expect((await anon.call('GET', '/api/v1/auth/me')).body.email).toBe('root@example.com');
    expect((await anon.call('GET', '/api/v1/setup/status')).body).toEqual({ first_boot: false });
    // Setup is closed for good.
    const again = await new Browser(svc).call('POST', '/api/v1/setup/complete', { body: { token, email: 'x@example.com', password: STRONG_PASSWORD } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'conflict', detail: 'already_initialised', details: { reason: 'already_initialised' } });
    // Whatever the body: a malformed token, missing fields, unknown fields, no body at all.
    for (const body of [{ token: 'x' }, {}, { token, email: 1, extra: true }, undefined]) {
      const r = await new Browser(svc).call('POST', '/api/v1/setup/complete', { body });
      expect([r.status, r.body.detail]).toEqual([409, 'already_initialised']);
    }
    expect((await new Browser(svc).call('GET', '/setup')).status).toBe(404);
    expect((await new Browser(svc).call('GET', '/api/v1/setup/status')).status).toBe(401);
    expect(await auditActions()).toEqual(expect.arrayContaining(['user.created', 'project.created', 'membership.granted', 'setup.completed']));
  });

  test('a wrong or expired token is refused and audited; the per-address bucket answers 429 after five', async () => {
    await mintSetupToken(svc.ctx);
    const anon = new Browser(svc);
    for (let i = 0; i < 5; i++) {
      const r = await anon.call('POST', '/api/v1/setup/complete', { body: { token: 'not-the-right-token', email: 'a@example.com', password: STRONG_PASSWORD } });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('invalid_setup_token');
    }
    const limited = await anon.call('POST', '/api/v1/setup/complete', { body: { token: 'not-the-right-token', email: 'a@example.com', password: STRONG_PASSWORD } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await auditActions()).filter((a) => a === 'setup.attempt')).toHaveLength(5);
  });

  test('a password breaking the policy is a 422 naming the field, and nothing is created', async () => {
    const { token } = (await mintSetupToken(svc.ctx))!;
    for (const [password, code] of [
      ['short', 'password_too_short'],
      ['passwordpassword', 'password_common'],
      ['iloveyouiloveyou', 'password_common'],
      ['lowercaseonly12', 'password_too_simple'],
      ['Password1234!', 'password_common'],
    ]) {
      const r = await new Browser(svc).call('POST', '/api/v1/setup/complete', { body: { token, email: 'a@example.com', password } });
      expect(r.status).toBe(422);
      expect(r.body.details.fields[0]).toMatchObject({ path: '/password', code });
    }
    expect((await svc.ctx.db.all(sql`SELECT id FROM users`)).length).toBe(0);
  });
});

describe('login, sessions and MFA', () => {
  test('wrong credentials look the same; lockout after the threshold; logout ends the session', async () => {
    const admin = await setupAdmin(svc);
    const b = new Browser(svc);
    const unknown = await b.login('nobody@example.com', 'whatever-password');
    const wrong = await b.login('admin@example.com', 'wrong-password-1');
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_credentials');
    expect(wrong.body.message).toBe(unknown.body.message);
    for (let i = 0; i < 9; i++) await b.login('admin@example.com', 'wrong-password-1');
    // Locked now: even the right password fails for a while.
    expect((await b.login('admin@example.com', STRONG_PASSWORD)).status).toBe(401);
    const rows = await svc.ctx.db.all<{ metadata: unknown }>(sql`SELECT metadata FROM audit_log WHERE action = 'auth.login' AND result = 'failed'`);
    expect(rows.length).toBe(12);
    expect(JSON.stringify(rows)).toContain('locked');
    // The admin's own session still works; logout ends it.
    expect((await admin.call('GET', '/api/v1/auth/me')).status).toBe(200);
    expect((await admin.call('POST', '/api/v1/auth/logout')).status).toBe(204);
    expect((await admin.call('GET', '/api/v1/auth/me')).status).toBe(401);
  });

  test('TOTP enrolment, the login MFA step, recovery codes, remembered devices, fresh-MFA routes', async () => {
    const admin = await setupAdmin(svc);
    // Without MFA a fresh-MFA route is refused with a clear next step.
    const before = await admin.call('POST', '/api/v1/users', { body: { email: 'bob@example.com', password: STRONG_PASSWORD } });
    expect(before.status).toBe(403);
    expect(before.body.error).toBe('mfa_enrollment_required');
    await admin.enrollMfa();
    expect(admin.recoveryCodes).toHaveLength(10);
    expect(admin.recoveryCodes[0]).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    // Enrolling counts as a fresh verification.
    expect((await admin.call('POST', '/api/v1/users', { body: { email: 'bob@example.com', password: STRONG_PASSWORD } })).status).toBe(201);

    // A new login needs the second step before anything else.
    const b = new Browser(svc);
    b.totpKey = admin.totpKey;
    const login = await b.login('admin@example.com', STRONG_PASSWORD);
    expect(login.body.mfa_required).toBe(true);
    expect((await b.call('GET', '/api/v1/projects')).body.error).toBe('mfa_required');
    expect((await b.call('GET', '/api/v1/auth/me')).body.mfa).toMatchObject({ enrolled: true, pending: true });
    const wrong = await b.call('POST', '/api/v1/auth/mfa/verify', { body: { code: '000000' } });
    expect(wrong.status).toBe(400);
    // A recovery code works once.
    const recovery = await b.call('POST', '/api/v1/auth/mfa/verify', { body: { code: admin.recoveryCodes[0]!.toLowerCase() } });
    expect(recovery.body).toMatchObject({ ok: true, used_recovery_code: true, remaining_recovery_codes: 9 });
    expect((await b.call('GET', '/api/v1/projects')).status).toBe(200);
    const reuse = new Browser(svc);
    await reuse.login('admin@example.com', STRONG_PASSWORD);
    expect((await reuse.call('POST', '/api/v1/auth/mfa/verify', { body: { code: admin.recoveryCodes[0]! } })).status).toBe(400);

    // Remembered device: the next login on this browser skips the step.
    const remembered = new Browser(svc);
    remembered.totpKey = admin.totpKey;
    await remembered.login('admin@example.com', STRONG_PASSWORD);
    expect((await remembered.verifyMfa({ remember_device: true })).status).toBe(200);
    expect(remembered.cookies.has('svc_mfa_trust')).toBe(true);
    remembered.cookies.delete('svc_session');
    remembered.cookies.delete('svc_csrf');
    expect((await remembered.login('admin@example.com', STRONG_PASSWORD)).body.mfa_required).toBe(false);
    const devices = await remembered.call('GET', '/api/v1/auth/mfa/trusted-devices');
    expect(devices.body[0]).toMatchObject({ label: 'Firefox on Linux', active: true });
    expect(JSON.stringify(devices.body)).not.toContain(remembered.cookies.get('svc_mfa_trust')!);
    expect(await auditActions()).toEqual(expect.arrayContaining(['user.mfa_enrolled', 'user.mfa_recovery_code_used', 'user.mfa_trusted_device_added', 'user.mfa_trusted_device_used']));
  });

  test('sessions can be listed and revoked; a revoked session is gone', async () => {
    const admin = await setupAdmin(svc);
    const other = new Browser(svc, 'curl/8');
    await other.login('admin@example.com', STRONG_PASSWORD);
    const list = await admin.call('GET', '/api/v1/auth/sessions');
    expect(list.body).toHaveLength(2);
    const theirs = list.body.find((s: any) => !s.is_current);
    expect(JSON.stringify(list.body)).not.toContain(other.cookies.get('svc_session')!);
    expect((await admin.call('POST', `/api/v1/auth/sessions/${theirs.id}/revoke`)).body).toEqual({ revoked: true });
    expect((await other.call('GET', '/api/v1/auth/me')).status).toBe(401);
  });
});

describe('users', () => {
  test('create, read, patch (email ignored), reset password, delete with the spec rules', async () => {
    const admin = await mfaAdmin(svc);
    const created = await admin.call('POST', '/api/v1/users', {
      body: { email: 'carol@example.com', password: STRONG_PASSWORD, first_name: 'Carol', last_name: 'C', timezone: 'Europe/Berlin' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email: 'carol@example.com', display_name: 'Carol C', is_admin: false, timezone: 'Europe/Berlin', last_login_at: null });
    expect(Object.keys(created.body).sort()).toEqual(
      ['created_at', 'display_name', 'email', 'first_name', 'id', 'is_active', 'is_admin', 'last_login_at', 'last_name', 'timezone', 'updated_at'].sort(),
    );
    const id = created.body.id;
    expect((await admin.call('POST', '/api/v1/users', { body: { email: 'CAROL@example.com', password: STRONG_PASSWORD } })).status).toBe(409);
    const patched = await admin.call('PATCH', `/api/v1/users/${id}`, { body: { email: 'evil@example.com', display_name: 'Caz', unknown: 1 } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ email: 'carol@example.com', display_name: 'Caz' });
    // Carol signs in; an admin reset ends her session.
    const carol = new Browser(svc);
    await carol.login('carol@example.com', STRONG_PASSWORD);
    expect((await admin.call('GET', `/api/v1/users/${id}`)).body.last_login_at).not.toBeNull();
    expect((await admin.call('POST', `/api/v1/users/${id}/password`, { body: { new_password: 'Another-Strong-Pass-7' } })).body).toEqual({ success: true });
    expect((await carol.call('GET', '/api/v1/auth/me')).status).toBe(401);
    expect((await carol.login('carol@example.com', 'Another-Strong-Pass-7')).status).toBe(200);
    // Self-protection.
    const me = (await admin.call('GET', '/api/v1/auth/me')).body.id;
    expect((await admin.call('PATCH', `/api/v1/users/${me}`, { body: { is_admin: false } })).body.error).toBe('self_demotion');
    expect((await admin.call('PATCH', `/api/v1/users/${me}`, { body: { is_active: false } })).body.error).toBe('self_deactivation');
    expect((await admin.call('DELETE', `/api/v1/users/${me}`)).body.error).toBe('self_delete');
    // Delete Carol: her sessions, memberships go; her actor reference in audit rows is anonymised.
    const carolRows = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log WHERE user_id = ${id}`);
    expect(Number(carolRows[0]!.n)).toBeGreaterThan(0);
    expect((await admin.call('DELETE', `/api/v1/users/${id}`)).body).toEqual({ success: true });
    expect((await admin.call('GET', `/api/v1/users/${id}`)).status).toBe(404);
    expect(Number((await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log WHERE user_id = ${id}`))[0]!.n)).toBe(0);
    expect((await verifyChain(svc.ctx.db, svc.ctx.audit.keyring)).clean).toBe(true);
    expect(await auditActions()).toEqual(expect.arrayContaining(['user.created', 'user.updated', 'user.password.reset', 'user.deleted']));
  });

  test('the last active administrator cannot be demoted, deactivated or deleted', async () => {
    const admin = await mfaAdmin(svc);
    const other = await admin.call('POST', '/api/v1/users', { body: { email: 'admin2@example.com', password: STRONG_PASSWORD, is_admin: true } });
    const id = other.body.id;
    expect((await admin.call('PATCH', `/api/v1/users/${id}`, { body: { is_admin: false } })).status).toBe(200);
    // Now admin2 is not an admin; the first admin is the last one, protected from others too.
    expect((await admin.call('PATCH', `/api/v1/users/${id}`, { body: { is_admin: true } })).status).toBe(200);
    expect((await admin.call('PATCH', `/api/v1/users/${id}`, { body: { is_active: false } })).status).toBe(200);
    const me = (await admin.call('GET', '/api/v1/auth/me')).body.id;
    const b = await svc.ctx.db.all(sql`SELECT id FROM users WHERE is_admin = ${svc.ctx.db.dialect === 'postgres' ? sql`true` : sql`1`} AND is_active = ${svc.ctx.db.dialect === 'postgres' ? sql`true` : sql`1`}`);
    expect(b).toEqual([{ id: me }]);
  });
});

describe('projects, memberships, invitations', () => {
  test('projects are created by admins, seen by members only, archived softly', async () => {
    const admin = await mfaAdmin(svc);
    const dan = await userBrowser(admin, 'dan@example.com');
    expect((await dan.call('GET', '/api/v1/projects')).body).toEqual([]);
    const created = await admin.call('POST', '/api/v1/projects', { body: { slug: 'billing', name: 'Billing' } });
    expect(created.status).toBe(201);
    expect((await admin.call('POST', '/api/v1/projects', { body: { slug: 'billing', name: 'Again' } })).status).toBe(409);
    expect((await admin.call('POST', '/api/v1/projects', { body: { slug: '-bad-', name: 'x' } })).status).toBe(422);
    expect((await dan.call('GET', '/api/v1/projects/billing')).status).toBe(404);
    const m = await admin.call('POST', '/api/v1/projects/billing/memberships', { body: { user_id: dan.id, role: 'viewer' } });
    expect(m.status).toBe(201);
    expect((await dan.call('GET', '/api/v1/projects/billing')).body.role).toBe('viewer');
    expect((await dan.call('GET', '/api/v1/projects/billing/memberships')).status).toBe(403);
    expect((await admin.call('DELETE', '/api/v1/projects/billing')).body).toEqual({ archived: true });
    expect((await dan.call('GET', '/api/v1/projects/billing')).status).toBe(404);
    expect((await admin.call('GET', '/api/v1/projects?include_archived=true')).body.map((p: any) => p.slug)).toEqual(['billing', 'default']);
  });

  test('the last project admin is protected', async () => {
    const admin = await mfaAdmin(svc);
    const members = await admin.call('GET', '/api/v1/projects/default/memberships');
    const own = members.body[0];
    expect(own.role).toBe('admin');
    expect((await admin.call('PATCH', `/api/v1/projects/default/memberships/${own.id}`, { body: { role: 'viewer' } })).body.error).toBe('last_project_admin');
    expect((await admin.call('DELETE', `/api/v1/projects/default/memberships/${own.id}`)).body.error).toBe('last_project_admin');
  });

  test('invitations: mint, preview, accept creates the account and membership; expired and revoked ones fail', async () => {
    const admin = await mfaAdmin(svc);
    const inv = await admin.call('POST', '/api/v1/projects/default/invitations', { body: { email: 'Eve@Example.com', role: 'operator' } });
    expect(inv.status).toBe(201);
    expect(inv.body.invitation).toMatchObject({ email: 'eve@example.com', role: 'operator' });
    const token = inv.body.token;
    expect((await admin.call('GET', '/api/v1/projects/default/invitations')).body).toHaveLength(1);
    expect(JSON.stringify((await admin.call('GET', '/api/v1/projects/default/invitations')).body)).not.toContain(token);
    const anon = new Browser(svc);
    expect((await anon.call('GET', `/api/v1/invitations/preview?token=${token}`)).body).toMatchObject({ email: 'eve@example.com', project_slug: 'default' });
    const accepted = await anon.call('POST', '/api/v1/invitations/accept', { body: { token, password: STRONG_PASSWORD, display_name: 'Eve' } });
    expect(accepted.status).toBe(201);
    expect((await anon.call('GET', '/api/v1/projects/default')).body.role).toBe('operator');
    expect((await anon.call('POST', '/api/v1/invitations/accept', { body: { token, password: STRONG_PASSWORD } })).status).toBe(404);
    const second = await admin.call('POST', '/api/v1/projects/default/invitations', { body: { email: 'frank@example.com' } });
    expect((await admin.call('DELETE', `/api/v1/projects/default/invitations/${second.body.invitation.id}`)).status).toBe(200);
    expect((await anon.call('GET', `/api/v1/invitations/preview?token=${second.body.token}`)).status).toBe(404);
  });
});

describe('API keys', () => {
  test('secret shown once, hashed, scoped; refused where the spec says; revoked keys fail', async () => {
    const admin = await mfaAdmin(svc);
    const made = await admin.call('POST', '/api/v1/api-keys', { body: { name: 'ci', scopes: ['users:read', 'projects:read'] } });
    expect(made.status).toBe(201);
    const token: string = made.body.token;
    expect(token).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    const list = await admin.call('GET', '/api/v1/api-keys');
    expect(JSON.stringify(list.body)).not.toContain(token);
    const stored = await svc.ctx.db.all<{ token_hash: string }>(sql`SELECT token_hash FROM api_keys`);
    expect(stored[0]!.token_hash).not.toContain(token.slice(4));
    const bearer = { authorization: `Bearer ${token}` };
    expect((await svc.call('GET', '/api/v1/users', { headers: bearer })).status).toBe(200);
    expect((await svc.call('GET', '/api/v1/projects', { headers: bearer })).status).toBe(200);
    expect((await svc.call('POST', '/api/v1/users', { headers: bearer, body: { email: 'x@example.com', password: STRONG_PASSWORD } })).body.error).toBe(
      'api_key_not_allowed',
    );
    expect((await svc.call('GET', '/api/v1/admin/settings', { headers: bearer })).body.error).toBe('api_key_not_allowed');
    expect((await svc.call('GET', '/api/v1/admin/system/versions', { headers: bearer })).body.error).toBe('api_key_not_allowed');
    expect((await svc.call('GET', '/api/v1/activity', { headers: bearer })).body.error).toBe('api_key_not_allowed');
    expect((await svc.call('GET', '/api/v1/auth/me', { headers: bearer })).status).toBe(403);
    expect((await admin.call('DELETE', `/api/v1/api-keys/${made.body.id}`)).status).toBe(200);
    const revoked = await svc.call('GET', '/api/v1/users', { headers: bearer });
    expect(revoked.status).toBe(401);
    expect(revoked.body.details.reason).toBe('revoked');
    expect((await svc.call('GET', '/api/v1/users', { headers: { authorization: 'Bearer svc_unknown' } })).status).toBe(401);
  });

  test('non-admins cannot mint admin-only scopes; an admin-scoped key of a demoted owner no longer reads users', async () => {
    const admin = await mfaAdmin(svc);
    const bob = await userBrowser(admin, 'bob@example.com');
    await bob.enrollMfa();
    expect((await bob.call('POST', '/api/v1/api-keys', { body: { name: 'x', scopes: ['users:read'] } })).status).toBe(422);
    const ok = await bob.call('POST', '/api/v1/api-keys', { body: { name: 'x', scopes: ['projects:read'] } });
    expect(ok.status).toBe(201);
    expect((await svc.call('GET', '/api/v1/users', { headers: { authorization: `Bearer ${ok.body.token}` } })).status).toBe(403);
  });
});
