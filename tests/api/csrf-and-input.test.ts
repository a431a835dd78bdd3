// CSRF on every state-changing identity and notification route, and bad input on every route:
// each refusal is a 4xx in the envelope and leaves the database as it was.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, STRONG_PASSWORD, mfaAdmin, userBrowser } from '../helpers/identity.ts';

let svc: TestService;
let admin: Browser;
let userId: string;
let membershipId: string;
let invitationId: string;
let keyId: string;
let sessionId: string;
let projectId: string;
const notif: Record<'channel' | 'userChannel' | 'default' | 'subscription' | 'inbox', string> = { channel: '', userChannel: '', default: '', subscription: '', inbox: '' };
/** A public address (no DNS needed): configs validate; nothing is sent, every send below is refused first. */
const HOOK = { type: 'webhook', config: { url: 'https://11.0.0.5/hook' } };

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  admin = await mfaAdmin(svc);
  const bob = await userBrowser(admin, 'bob@example.com');
  userId = bob.id;
  membershipId = (await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: userId, role: 'viewer' } })).body.id;
  invitationId = (await admin.call('POST', '/api/v1/projects/default/invitations', { body: { email: 'inv@example.com' } })).body.invitation.id;
  keyId = (await admin.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['projects:read'] } })).body.id;
  sessionId = (await admin.call('GET', '/api/v1/auth/sessions')).body[0].id;
  const N = '/api/v1/projects/default/notifications';
  notif.channel = (await admin.call('POST', `${N}/channels`, { body: { name: 'ops', ...HOOK } })).body.id;
  notif.userChannel = (await admin.call('POST', '/api/v1/user/channels', { body: { name: 'mine', ...HOOK } })).body.id;
  notif.default = (await admin.call('GET', `${N}/defaults`)).body[0].id;
  projectId = (await admin.call('GET', '/api/v1/projects/default')).body.id;
  notif.subscription = (await admin.call('POST', '/api/v1/user/subscriptions', { body: { project_id: projectId, trigger: 'agent.offline' } })).body.id;
  const me = (await admin.call('GET', '/api/v1/auth/me')).body.id;
  notif.inbox = crypto.randomUUID();
  await svc.ctx.db.tx((tx) =>
    tx.run(sql`INSERT INTO user_notifications (id, user_id, project_id, trigger, title, body, data, created_at) VALUES (${notif.inbox}, ${me}, ${projectId}, 'task.failed', 't', 'b', '{}', '2026-01-01T00:00:00.000000+00:00')`),
  );
  for (const id of Object.values(notif)) expect(id).toMatch(/^[0-9a-f-]{36}$/);
});
afterAll(() => svc.close());

const TABLES = [
  ...['users', 'sessions', 'api_keys', 'projects', 'memberships', 'invitations', 'mfa_recovery_codes', 'trusted_devices', 'audit_log'],
  ...['notification_channels', 'user_channels', 'project_default_subscriptions', 'user_subscriptions', 'user_notifications', 'notification_deliveries'],
];

/** Every row of the identity and notification tables, to prove a refused request changed nothing. */
async function snapshot(): Promise<string> {
  const parts: string[] = [];
  for (const t of TABLES) parts.push(JSON.stringify(await svc.ctx.db.all(sql.raw(`SELECT * FROM ${t} ORDER BY id`))));
  return parts.join('\n');
}

// Every state-changing route a browser session reaches, with a body that
// would otherwise be accepted.
const MUTATIONS: [string, string, () => unknown][] = [
  ['POST', '/api/v1/auth/logout', () => undefined],
  ['PATCH', '/api/v1/auth/me', () => ({ display_name: 'Changed' })],
  ['POST', '/api/v1/auth/change-password', () => ({ current_password: STRONG_PASSWORD, new_password: 'Brand-New-Password-1' })],
  ['POST', `/api/v1/auth/sessions/{session}/revoke`, () => undefined],
  ['POST', '/api/v1/auth/mfa/enroll-start', () => undefined],
  ['POST', '/api/v1/auth/mfa/enroll-complete', () => ({ code: '123456' })],
  ['POST', '/api/v1/auth/mfa/verify', () => ({ code: admin.code() })],
  ['POST', '/api/v1/auth/mfa/disable', () => ({ password: STRONG_PASSWORD, code: admin.code() })],
  ['POST', '/api/v1/auth/mfa/recovery-codes/regenerate', () => undefined],
  ['POST', '/api/v1/api-keys', () => ({ name: 'x', scopes: ['projects:read'] })],
  ['DELETE', '/api/v1/api-keys/{key}', () => undefined],
  ['POST', '/api/v1/users', () => ({ email: 'new@example.com', password: STRONG_PASSWORD })],
  ['PATCH', '/api/v1/users/{user}', () => ({ display_name: 'X' })],
  ['POST', '/api/v1/users/{user}/password', () => ({ new_password: 'Brand-New-Password-1' })],
  ['DELETE', '/api/v1/users/{user}', () => undefined],
  ['POST', '/api/v1/projects', () => ({ slug: 'newproj', name: 'New' })],
  ['PATCH', '/api/v1/projects/default', () => ({ name: 'Renamed' })],
  ['DELETE', '/api/v1/projects/default', () => undefined],
  ['POST', '/api/v1/projects/default/memberships', () => ({ user_id: userId, role: 'operator' })],
  ['PATCH', '/api/v1/projects/default/memberships/{membership}', () => ({ role: 'operator' })],
  ['DELETE', '/api/v1/projects/default/memberships/{membership}', () => undefined],
  ['POST', '/api/v1/projects/default/invitations', () => ({ email: 'someone@example.com' })],
  ['DELETE', '/api/v1/projects/default/invitations/{invitation}', () => undefined],
  // Notifications: the project's (project admins) and the caller's own.
  ['POST', '/api/v1/projects/default/notifications/channels', () => ({ name: 'new', ...HOOK })],
  ['POST', '/api/v1/projects/default/notifications/channels/import_from_user', () => ({ user_channel_id: notif.userChannel })],
  ['PATCH', '/api/v1/projects/default/notifications/channels/{channel}', () => ({ name: 'renamed' })],
  ['DELETE', '/api/v1/projects/default/notifications/channels/{channel}', () => undefined],
  ['POST', '/api/v1/projects/default/notifications/channels/{channel}/test', () => undefined],
  ['POST', '/api/v1/projects/default/notifications/channels/test', () => HOOK],
  ['POST', '/api/v1/projects/default/notifications/defaults', () => ({ trigger: 'agent.online' })],
  ['PATCH', '/api/v1/projects/default/notifications/defaults/{default}', () => ({ in_app: false })],
  ['DELETE', '/api/v1/projects/default/notifications/defaults/{default}', () => undefined],
  ['DELETE', '/api/v1/projects/default/notifications/deliveries', () => undefined],
  ['POST', '/api/v1/user/channels', () => ({ name: 'another', ...HOOK })],
  ['PATCH', '/api/v1/user/channels/{user_channel}', () => ({ name: 'renamed' })],
  ['DELETE', '/api/v1/user/channels/{user_channel}', () => undefined],
  ['POST', '/api/v1/user/channels/{user_channel}/test', () => undefined],
  ['POST', '/api/v1/user/channels/test', () => HOOK],
  ['POST', '/api/v1/user/channels/import_from_project', () => ({ project_slug: 'default', channel_id: notif.channel })],
  ['POST', '/api/v1/user/subscriptions', () => ({ project_id: projectId, trigger: 'task.retried' })],
  ['PATCH', '/api/v1/user/subscriptions/{subscription}', () => ({ cooldown_seconds: 60 })],
  ['DELETE', '/api/v1/user/subscriptions/{subscription}', () => undefined],
  ['POST', '/api/v1/user/notifications/{inbox}/read', () => undefined],
  ['POST', '/api/v1/user/notifications/read-all', () => undefined],
];

const fill = (path: string) =>
  path
    .replace('{user}', userId)
    .replace('{membership}', membershipId)
    .replace('{invitation}', invitationId)
    .replace('{key}', keyId)
    .replace('{session}', sessionId)
    .replace('{channel}', notif.channel)
    .replace('{user_channel}', notif.userChannel)
    .replace('{default}', notif.default)
    .replace('{subscription}', notif.subscription)
    .replace('{inbox}', notif.inbox);

describe('CSRF', () => {
  test('every state-changing route refuses a session request without the token, changing nothing', async () => {
    const before = await snapshot();
    for (const [method, path, body] of MUTATIONS) {
      const r = await admin.call(method, fill(path), { body: body(), csrf: false });
      expect({ route: `${method} ${path}`, status: r.status, error: r.body.error }).toEqual({ route: `${method} ${path}`, status: 403, error: 'csrf_failed' });
    }
    expect(await snapshot()).toBe(before);
  });

  test('a wrong token, a foreign Origin or a cross-site fetch is refused too', async () => {
    const before = await snapshot();
    const cases: Record<string, string>[] = [
      { 'x-csrf-token': 'not-the-token' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of cases) {
      const r = await admin.call('PATCH', '/api/v1/auth/me', { body: { display_name: 'Evil' }, headers });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('csrf_failed');
    }
    expect(await snapshot()).toBe(before);
    // The same request with the browser's own origin and token goes through.
    const ok = await admin.call('PATCH', '/api/v1/auth/me', { body: { display_name: 'Ada' }, headers: { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' } });
    expect(ok.status).toBe(200);
  });

  test('cookies are not sent cross-site: the session cookie is SameSite and HttpOnly, the CSRF cookie SameSite=Strict', async () => {
    const b = new Browser(svc);
    const res = await b.login('admin@example.com', STRONG_PASSWORD);
    const cookies = res.headers.getSetCookie();
    expect(cookies.find((c) => c.startsWith('svc_session='))).toMatch(/SameSite=(Lax|Strict).*HttpOnly/);
    expect(cookies.find((c) => c.startsWith('svc_csrf='))).toContain('SameSite=Strict');
  });
});

describe('bad input on every route', () => {
  // Bodies that are wrong in kind: JSON errors, wrong types, oversize and
  // unicode-edge strings, unknown fields. Each route gets each of them.
  const BAD: [string, string | unknown][] = [
    ['malformed JSON', '{"email": "a@example.com",'],
    ['not an object', '[1,2,3]'],
    ['wrong types', { email: 42, password: true, name: ['x'], role: 7, slug: {}, code: 123456, display_name: null, new_password: 12 }],
    ['oversize strings', { email: `${'a'.repeat(400)}@example.com`, name: 'n'.repeat(5000), slug: 's'.repeat(500), display_name: 'd'.repeat(5000), code: '1'.repeat(100) }],
    ['unknown fields', { totally_unknown: 1, is_admin: true }],
  ];
  const ROUTES: [string, string][] = [
    ['POST', '/api/v1/auth/login'],
    ['POST', '/api/v1/setup/complete'],
    ['PATCH', '/api/v1/auth/me'],
    ['POST', '/api/v1/auth/change-password'],
    ['POST', '/api/v1/auth/mfa/enroll-complete'],
    ['POST', '/api/v1/auth/mfa/verify'],
    ['POST', '/api/v1/auth/mfa/disable'],
    ['POST', '/api/v1/api-keys'],
    ['POST', '/api/v1/users'],
    ['POST', '/api/v1/users/{user}/password'],
    ['POST', '/api/v1/projects'],
    ['PATCH', '/api/v1/projects/default'],
    ['POST', '/api/v1/projects/default/memberships'],
    ['PATCH', '/api/v1/projects/default/memberships/{membership}'],
    ['POST', '/api/v1/projects/default/invitations'],
    ['POST', '/api/v1/invitations/accept'],
  ];

  for (const [method, path] of ROUTES) {
    test(`${method} ${path}`, async () => {
      const before = await snapshot();
      for (const [kind, body] of BAD) {
        // PATCH of own profile with only unknown fields is a closed schema too.
        const r = await admin.call(method, fill(path), typeof body === 'string' ? { raw: body, headers: { 'content-type': 'application/json' } } : { body });
        expect({ kind, ok: r.status >= 400 && r.status < 500 }).toEqual({ kind, ok: true });
        expect(Object.keys(r.body)).toEqual(expect.arrayContaining(['error', 'message', 'details', 'request_id']));
        expect(r.text).not.toContain('a'.repeat(400));
      }
      expect(await snapshot()).toBe(before);
    });
  }

  test('PATCH /users/{id} ignores unknown fields and an email key (200, address unchanged)', async () => {
    const r = await admin.call('PATCH', `/api/v1/users/${userId}`, { body: { email: 'changed@example.com', totally_unknown: 1 } });
    expect(r.status).toBe(200);
    expect(r.body.email).toBe('bob@example.com');
    // Wrong types there are still refused.
    expect((await admin.call('PATCH', `/api/v1/users/${userId}`, { body: { is_admin: 'yes' } })).status).toBe(422);
  });

  test('unicode edge cases are stored exactly and come back unchanged, or are refused', async () => {
    const names = ['Zoë Ünïcödé', '名前 テスト', 'emoji 🦄✨', 'rtl \u202eevil', 'zero\u200bwidth'];
    for (const name of names) {
      const r = await admin.call('PATCH', '/api/v1/auth/me', { body: { display_name: name } });
      expect(r.status).toBe(200);
      expect(r.body.display_name).toBe(name);
    }
    const nul = await admin.call('PATCH', '/api/v1/auth/me', { body: { display_name: 'nul\u0000byte' } });
    expect(nul.status === 200 ? nul.body.display_name : nul.status).toBe(nul.status === 200 ? 'nul\u0000byte' : 422);
    const lone = await admin.call('PATCH', '/api/v1/auth/me', { raw: '{"display_name":"\\ud800"}', headers: { 'content-type': 'application/json' } });
    expect(lone.status).toBeLessThan(500);
  });

  test('path parameters: malformed ids are 422, unknown ids 404', async () => {
    expect((await admin.call('GET', '/api/v1/users/not-a-uuid')).status).toBe(422);
    expect((await admin.call('GET', '/api/v1/users/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await admin.call('GET', `/api/v1/projects/${'x'.repeat(100)}`)).status).toBe(422);
    expect((await admin.call('GET', '/api/v1/projects/nope')).status).toBe(404);
    expect((await admin.call('GET', '/api/v1/activity?limit=0')).status).toBe(422);
    expect((await admin.call('GET', '/api/v1/activity?limit=201')).status).toBe(422);
    expect((await admin.call('GET', '/api/v1/activity?before_cursor=garbage')).status).toBe(422);
  });
});
