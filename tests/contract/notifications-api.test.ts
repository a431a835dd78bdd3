// Every notification route of the specification's two tables, called by every
// kind of caller, in one table of (who, request) -> (status, must contain,
// must not contain); then the rules behind them: secrets masked and kept,
// imports and their ownership rules, config and filter refusals, the audit
// rows, the delivery log and its clearing, the inbox. On both databases.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { testDialect, testService, type CallOptions, type TestService } from '../helpers/app.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';
import { Browser, FAST_IDENTITY_ENV, MATRIX_ACTORS as ACTORS, STRONG_PASSWORD, matrixCallers, userBrowser, type MatrixActor as Actor } from '../helpers/identity.ts';

// A port nothing listens on, at the address of a test host in a network namespace (outside the
// blocked ranges, on this machine): configs validate, sends are refused at once, nothing leaves.
let HOOK = '';
const SECRET = 'hmac-secret-never-shown-0123456789';
const BOT_TOKEN = '123456:ABC-never-shown_token';

let svc: TestService;
let admin: Browser;
let browsers: Partial<Record<Actor, Browser & { id?: string }>> = {};
const keys: { with?: string; without?: string } = {};
let counter = 0;
const uniq = () => `${++counter}-${crypto.randomUUID().slice(0, 6)}`;

const noHost = unavailable();
let host: Receiver | undefined;

beforeAll(async () => {
  if (noHost) return;
  host = await startReceiver();
  HOOK = `https://${host.address}:9/hook`;
  svc = await testService({ env: { ...FAST_IDENTITY_ENV, SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '1' } });
  const callers = await matrixCallers(svc, ['notifications:write']);
  ({ admin, browsers } = callers);
  Object.assign(keys, callers.keys);
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await host?.stop();
});

async function call(actor: Actor, method: string, path: string, opts: CallOptions = {}) {
  if (actor === 'anonymous') return svc.call(method, path, opts);
  if (actor === 'key_with_scope' || actor === 'key_without_scope') {
    return svc.call(method, path, { ...opts, headers: { authorization: `Bearer ${actor === 'key_with_scope' ? keys.with : keys.without}`, ...opts.headers } });
  }
  return browsers[actor]!.call(method, path, opts);
}

const P = '/api/v1/projects/default/notifications';
const webhook = (name = `hook-${uniq()}`) => ({ name, type: 'webhook', config: { url: HOOK, headers: { 'x-team': 'ops' }, hmac_secret: SECRET } });
const newProjectChannel = async () => (await admin.call('POST', `${P}/channels`, { body: webhook() })).body.id as string;
/** Removes the project's default for `trigger`, if any (one default per trigger). */
const dropDefault = async (trigger: string) => {
  const existing = (await admin.call('GET', `${P}/defaults`)).body.find((d: any) => d.trigger === trigger);
  if (existing) await admin.call('DELETE', `${P}/defaults/${existing.id}`);
};
const newDefault = async (trigger: string) => {
  await dropDefault(trigger);
  return (await admin.call('POST', `${P}/defaults`, { body: { trigger } })).body.id as string;
};
/** A personal channel of `actor` (the admin's for callers without a session). */
const ownChannel = async (actor: Actor) => {
  const who = browsers[actor] ?? admin;
  return (await who.call('POST', '/api/v1/user/channels', { body: webhook() })).body.id as string;
};

type Expect = Partial<Record<Actor, number>> & { rest: number };
interface Row {
  name: string;
  /** The call; `contains` adds what this call's 2xx answer must hold (the id it named). */
  request: (actor: Actor) => Promise<{ method: string; path: string; opts?: CallOptions; contains?: string[] }>;
  expect: Expect;
  /** Found in every 2xx answer. */
  mustContain?: string[];
}

/** A call naming the resource `id` whose answer must name it too. */
const naming = (id: string, method: string, path: string, opts?: CallOptions) => ({ method, path, opts, contains: [`"id":"${id}"`] });

// Project routes: listing for every member; the rest for project admins. Keys need the scope.
const projectView: Expect = { anonymous: 401, other_project: 404, key_without_scope: 403, rest: 200 };
const projectAdmin = (ok: number): Expect => ({ anonymous: 401, viewer: 403, operator: 403, other_project: 404, key_without_scope: 403, project_admin: ok, global_admin: ok, key_with_scope: ok, rest: 403 });
// Personal routes: any signed-in user (keys with the scope act as their owner, the admin).
const personal = (ok: number): Expect => ({ anonymous: 401, key_without_scope: 403, rest: ok });

const ROWS: Row[] = [
  {
    name: 'GET /channels',
    request: async () => {
      const id = await newProjectChannel();
      return naming(id, 'GET', `${P}/channels`);
    },
    expect: projectView,
    mustContain: ['"type":"webhook"', '"hmac_secret":"••••••••"'],
  },
  {
    name: 'POST /channels',
    request: async () => ({ method: 'POST', path: `${P}/channels`, opts: { body: webhook() } }),
    expect: projectAdmin(201),
    mustContain: ['"id":"', '"name":"hook-', '"type":"webhook"', '"url":"https://', '"hmac_secret":"••••••••"', '"is_active":true'],
  },
  {
    name: 'POST /channels/import_from_user',
    request: async (actor) => ({ method: 'POST', path: `${P}/channels/import_from_user`, opts: { body: { user_channel_id: await ownChannel(actor) } } }),
    expect: projectAdmin(201),
    mustContain: ['"name":"Copy of hook-', '"hmac_secret":"••••••••"'],
  },
  {
    name: 'PATCH /channels/{id}',
    request: async () => {
      const id = await newProjectChannel();
      return naming(id, 'PATCH', `${P}/channels/${id}`, { body: { name: `renamed-${uniq()}` } });
    },
    expect: projectAdmin(200),
    mustContain: ['"name":"renamed-', '"hmac_secret":"••••••••"'],
  },
  { name: 'DELETE /channels/{id}', request: async () => ({ method: 'DELETE', path: `${P}/channels/${await newProjectChannel()}` }), expect: projectAdmin(200), mustContain: ['"success":true'] },
  {
    name: 'POST /channels/{id}/test',
    request: async () => ({ method: 'POST', path: `${P}/channels/${await newProjectChannel()}/test` }),
    expect: projectAdmin(200),
    mustContain: ['"success":false', '"status_code":0', '"error":"'],
  },
  {
    name: 'POST /channels/test',
    request: async () => ({ method: 'POST', path: `${P}/channels/test`, opts: { body: { type: 'webhook', config: { url: HOOK } } } }),
    expect: projectAdmin(200),
    mustContain: ['"success":false', '"status_code":0'],
  },
  { name: 'GET /defaults', request: async () => ({ method: 'GET', path: `${P}/defaults` }), expect: projectAdmin(200), mustContain: ['"trigger":"task.failed"'] },
  {
    name: 'POST /defaults',
    request: async () => {
      await dropDefault('agent.offline');
      return { method: 'POST', path: `${P}/defaults`, opts: { body: { trigger: 'agent.offline' } } };
    },
    expect: projectAdmin(201),
    mustContain: ['"id":"', '"trigger":"agent.offline"', '"in_app":true', '"cooldown_seconds":0'],
  },
  {
    name: 'PATCH /defaults/{id}',
    request: async () => {
      const id = await newDefault('task.retried');
      return naming(id, 'PATCH', `${P}/defaults/${id}`, { body: { in_app: false } });
    },
    expect: projectAdmin(200),
    mustContain: ['"trigger":"task.retried"', '"in_app":false'],
  },
  { name: 'DELETE /defaults/{id}', request: async () => ({ method: 'DELETE', path: `${P}/defaults/${await newDefault('agent.online')}` }), expect: projectAdmin(200), mustContain: ['"success":true'] },
  { name: 'GET /deliveries', request: async () => ({ method: 'GET', path: `${P}/deliveries` }), expect: projectAdmin(200), mustContain: ['"items":[', '"next_cursor":'] },
  { name: 'DELETE /deliveries', request: async () => ({ method: 'DELETE', path: `${P}/deliveries?before=2000-01-01T00:00:00Z` }), expect: projectAdmin(200), mustContain: ['"deleted":0'] },
  // personal
  { name: 'GET /user/channels', request: async () => ({ method: 'GET', path: '/api/v1/user/channels' }), expect: personal(200), mustContain: ['"project_id":null', '"hmac_secret":"••••••••"'] },
  {
    name: 'POST /user/channels',
    request: async () => ({ method: 'POST', path: '/api/v1/user/channels', opts: { body: webhook() } }),
    expect: personal(201),
    mustContain: ['"id":"', '"project_id":null', '"type":"webhook"', '"hmac_secret":"••••••••"'],
  },
  {
    name: 'PATCH /user/channels/{id}',
    request: async (a) => {
      const id = await ownChannel(a);
      return naming(id, 'PATCH', `/api/v1/user/channels/${id}`, { body: { is_active: false } });
    },
    expect: personal(200),
    mustContain: ['"is_active":false'],
  },
  { name: 'DELETE /user/channels/{id}', request: async (a) => ({ method: 'DELETE', path: `/api/v1/user/channels/${await ownChannel(a)}` }), expect: personal(200), mustContain: ['"success":true'] },
  {
    name: 'POST /user/channels/test',
    request: async () => ({ method: 'POST', path: '/api/v1/user/channels/test', opts: { body: { type: 'webhook', config: { url: HOOK } } } }),
    expect: personal(200),
    mustContain: ['"success":false', '"status_code":0'],
  },
  {
    name: 'POST /user/channels/{id}/test',
    request: async (a) => ({ method: 'POST', path: `/api/v1/user/channels/${await ownChannel(a)}/test` }),
    expect: personal(200),
    mustContain: ['"success":false', '"status_code":0'],
  },
  {
    name: 'POST /user/channels/import_from_project',
    request: async () => ({ method: 'POST', path: '/api/v1/user/channels/import_from_project', opts: { body: { project_slug: 'default', channel_id: await newProjectChannel(), name: `imported-${uniq()}` } } }),
    expect: { anonymous: 401, viewer: 403, operator: 403, other_project: 404, key_without_scope: 403, rest: 201 },
    mustContain: ['"name":"imported-', '"project_id":null', '"hmac_secret":"••••••••"'],
  },
  { name: 'GET /user/subscriptions', request: async () => ({ method: 'GET', path: '/api/v1/user/subscriptions' }), expect: personal(200), mustContain: ['"trigger":"'] },
  {
    name: 'POST /user/subscriptions',
    request: async (actor) => {
      // A trigger the caller has no subscription to yet (memberships materialised task.failed).
      const who = browsers[actor] ?? admin;
      for (const s of (await who.call('GET', '/api/v1/user/subscriptions')).body ?? []) if (s.trigger === 'task.succeeded') await who.call('DELETE', `/api/v1/user/subscriptions/${s.id}`);
      return { method: 'POST', path: '/api/v1/user/subscriptions', opts: { body: { project_id: (await admin.call('GET', '/api/v1/projects/default')).body.id, trigger: 'task.succeeded' } } };
    },
    expect: { anonymous: 401, other_project: 404, key_without_scope: 403, rest: 201 },
    mustContain: ['"id":"', '"trigger":"task.succeeded"', '"in_app":true', '"cooldown_seconds":0'],
  },
  {
    name: 'PATCH /user/subscriptions/{id}',
    request: async (actor) => {
      const id = await ownSubscription(actor);
      return naming(id, 'PATCH', `/api/v1/user/subscriptions/${id}`, { body: { cooldown_seconds: 60 } });
    },
    expect: personal(200),
    mustContain: ['"trigger":"schedule.misfired"', '"cooldown_seconds":60'],
  },
  { name: 'DELETE /user/subscriptions/{id}', request: async (a) => ({ method: 'DELETE', path: `/api/v1/user/subscriptions/${await ownSubscription(a)}` }), expect: personal(200), mustContain: ['"success":true'] },
  { name: 'GET /user/deliveries', request: async () => ({ method: 'GET', path: '/api/v1/user/deliveries' }), expect: personal(200), mustContain: ['"items":[', '"next_cursor":'] },
  { name: 'GET /user/notifications', request: async () => ({ method: 'GET', path: '/api/v1/user/notifications' }), expect: personal(200), mustContain: ['"items":[', '"unread":'] },
  { name: 'GET /user/notifications/unread-count', request: async () => ({ method: 'GET', path: '/api/v1/user/notifications/unread-count' }), expect: personal(200), mustContain: ['"unread":'] },
  { name: 'POST /user/notifications/{id}/read', request: async (a) => ({ method: 'POST', path: `/api/v1/user/notifications/${await ownInboxRow(a)}/read` }), expect: personal(200) },
  { name: 'POST /user/notifications/read-all', request: async () => ({ method: 'POST', path: '/api/v1/user/notifications/read-all' }), expect: personal(200), mustContain: ['"updated":'] },
];

/** A subscription of the caller (in a project they belong to). */
async function ownSubscription(actor: Actor): Promise<string> {
  const who = browsers[actor] ?? admin;
  const slug = actor === 'other_project' ? 'elsewhere' : 'default';
  const project = (await admin.call('GET', `/api/v1/projects/${slug}`)).body.id;
  const created = await who.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project, trigger: 'schedule.misfired' } });
  if (created.status === 201) return created.body.id;
  return (await who.call('GET', '/api/v1/user/subscriptions')).body.find((s: any) => s.trigger === 'schedule.misfired').id;
}

/** An inbox row of the caller's (the admin's for anonymous and keys). */
async function ownInboxRow(actor: Actor): Promise<string> {
  const who = browsers[actor] ?? admin;
  const me = (await who.call('GET', '/api/v1/auth/me')).body.id ?? (await admin.call('GET', '/api/v1/auth/me')).body.id;
  const project = (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`))[0]!.id;
  const id = crypto.randomUUID();
  await svc.ctx.db.tx((tx) =>
    tx.run(sql`INSERT INTO user_notifications (id, user_id, project_id, trigger, title, body, data, created_at) VALUES (${id}, ${me}, ${project}, 'task.failed', 't', 'b', '{}', ${new Date().toISOString().replace('Z', '000+00:00')})`),
  );
  return id;
}

if (noHost) console.log(`SKIPPED notification API tests: ${noHost}`);

describe.skipIf(Boolean(noHost))(`notification routes by caller on ${testDialect()}`, () => {
  for (const row of ROWS) {
    test(row.name, async () => {
      const got: Record<string, number> = {};
      const want: Record<string, number> = {};
      for (const actor of ACTORS) {
        const { method, path, opts, contains = [] } = await row.request(actor);
        const res = await call(actor, method, path, opts);
        got[actor] = res.status;
        want[actor] = row.expect[actor] ?? row.expect.rest;
        // No answer ever carries a secret of a channel.
        expect(res.text).not.toContain(SECRET);
        expect(res.text).not.toContain(BOT_TOKEN);
        if (res.status >= 400) expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['error', 'message', 'details']));
        else for (const s of [...(row.mustContain ?? []), ...contains]) expect(res.text).toContain(s);
      }
      expect(got).toEqual(want);
    }, 60_000);
  }
});

/** The filter rules, each refused with 422 and the path (and, for the glob rules, the code) naming it. */
async function expectFilterRefusals(send: (filters: unknown) => Promise<{ status: number; body: any }>): Promise<void> {
  const cases: [unknown, { path: string; message?: string; code?: string }][] = [
    [{ priority: ['urgent'] }, { path: '/filters/priority/0' }],
    [{ task_name: 'x'.repeat(501) }, { path: '/filters/task_name', message: 'must be a string of 1 to 500 characters' }],
    [{ task_name_pattern: 'x'.repeat(201) }, { path: '/filters/task_name_pattern', message: 'must be a string of 1 to 200 characters' }],
    [{ task_name_pattern: 'a*b*c*d*e*f*' }, { path: '/filters/task_name_pattern', code: 'glob_too_many_wildcards' }],
    [{ task_name_pattern: '[a][b][c][d]' }, { path: '/filters/task_name_pattern', code: 'glob_too_many_classes' }],
    [{ queue: 'default' }, { path: '/filters/queue', message: 'unexpected property' }],
  ];
  for (const [filters, rule] of cases) {
    const r = await send(filters);
    expect([r.status, r.body.error]).toEqual([422, 'validation_failed']);
    expect(r.body.details.fields).toContainEqual(expect.objectContaining(rule));
  }
}

const countAudit = async () => Number((await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log`))[0]!.n);

/** The newest audit row of `action`, its metadata parsed. */
async function lastAudit(action: string) {
  const rows = await svc.ctx.db.all<{ target_id: string | null; user_id: string | null; metadata: string | Record<string, unknown> }>(
    sql`SELECT target_id, user_id, metadata FROM audit_log WHERE action = ${action} ORDER BY occurred_at DESC, id DESC LIMIT 1`,
  );
  const row = rows[0]!;
  return { ...row, metadata: typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata };
}

describe.skipIf(Boolean(noHost))(`notification rules on ${testDialect()}`, () => {
  const audit = async (action: string) =>
    svc.ctx.db.all<{ action: string; metadata: string | Record<string, unknown>; user_id: string | null }>(sql`SELECT action, metadata, user_id FROM audit_log WHERE action = ${action} ORDER BY occurred_at`);

  test('secrets are masked in every list and never echoed; a PATCH carrying the mask keeps the stored secret', async () => {
    const created = await admin.call('POST', `${P}/channels`, {
      body: { name: `tg-${uniq()}`, type: 'telegram', config: { bot_token: BOT_TOKEN, chat_id: '-1001234' } },
    });
    expect(created.status).toBe(201);
    expect(created.body.config).toEqual({ bot_token: '••••••••', chat_id: '-1001234' });
    const listed = (await browsers.viewer!.call('GET', `${P}/channels`)).body.find((c: any) => c.id === created.body.id);
    expect(listed.config.bot_token).toBe('••••••••');
    // Renaming while sending the masked value back keeps the real token.
    const patched = await admin.call('PATCH', `${P}/channels/${created.body.id}`, { body: { name: 'telegram-ops', config: { bot_token: '••••••••', chat_id: '-1009' } } });
    expect(patched.status).toBe(200);
    const [stored] = await svc.ctx.db.all<{ config: string | Record<string, unknown> }>(sql`SELECT config FROM notification_channels WHERE id = ${created.body.id}`);
    const config = typeof stored!.config === 'string' ? JSON.parse(stored!.config) : stored!.config;
    expect(config).toEqual({ bot_token: BOT_TOKEN, chat_id: '-1009' });
    // A new value replaces it.
    await admin.call('PATCH', `${P}/channels/${created.body.id}`, { body: { config: { bot_token: '999:NEW-token', chat_id: '-1009' } } });
    const [again] = await svc.ctx.db.all<{ config: string | Record<string, unknown> }>(sql`SELECT config FROM notification_channels WHERE id = ${created.body.id}`);
    expect(JSON.stringify(again!.config)).toContain('999:NEW-token');
    expect((await audit('notifications.channel.update')).length).toBeGreaterThanOrEqual(2);
  });

  test("imports copy secrets server-side; another user's channel and a non-admin's import are refused", async () => {
    const mine = await admin.call('POST', '/api/v1/user/channels', { body: webhook('mine') });
    const imported = await admin.call('POST', `${P}/channels/import_from_user`, { body: { user_channel_id: mine.body.id } });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ name: 'Copy of mine', type: 'webhook', config: { hmac_secret: '••••••••', url: HOOK } });
    const [row] = await svc.ctx.db.all<{ config: string | Record<string, unknown> }>(sql`SELECT config FROM notification_channels WHERE id = ${imported.body.id}`);
    expect(JSON.stringify(row!.config)).toContain(SECRET);
    // The project admin cannot import the global admin's personal channel: not found, nothing stored.
    const before = (await admin.call('GET', `${P}/channels`)).body.length;
    const refused = await browsers.project_admin!.call('POST', `${P}/channels/import_from_user`, { body: { user_channel_id: mine.body.id } });
    expect([refused.status, refused.body.error]).toEqual([404, 'not_found']);
    expect((await admin.call('GET', `${P}/channels`)).body.length).toBe(before);
    // A viewer cannot copy a project channel (and its secret) into their own.
    const copy = await browsers.viewer!.call('POST', '/api/v1/user/channels/import_from_project', { body: { project_slug: 'default', channel_id: imported.body.id } });
    expect([copy.status, copy.body.error]).toEqual([403, 'insufficient_role']);
    expect((await audit('notifications.channel.import_from_user')).length).toBeGreaterThanOrEqual(1);
  });

  test('configs are checked per type before saving; the refusal names the field and stores nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'webhook', config: { url: 'https://127.0.0.1/x' } }, '/config/url'],
      [{ type: 'webhook', config: { url: 'https://169.254.169.254/latest' } }, '/config/url'],
      [{ type: 'webhook', config: { url: HOOK.replace('https:', 'http:') } }, '/config/url'],
      [{ type: 'webhook', config: { url: HOOK, headers: { Authorization: 'x' } } }, '/config/headers'],
      [{ type: 'slack', config: { webhook_url: 'https://hooks.evil.example/services/x' } }, '/config/webhook_url'],
      [{ type: 'telegram', config: { bot_token: 'no-colon', chat_id: '1' } }, '/config/bot_token'],
      [{ type: 'email', config: { smtp_host: host!.address, smtp_port: 2526, smtp_user: '', smtp_pass: '', smtp_tls: true, from_addr: 'a@example.com', to_addrs: ['b@example.com'] } }, '/config/smtp_port'],
      [{ type: 'webhook', config: { url: HOOK, pad: 'x'.repeat(17 * 1024) } }, '/config'],
    ];
    const before = (await admin.call('GET', `${P}/channels`)).body.length;
    for (const [body, path] of cases) {
      const r = await admin.call('POST', `${P}/channels`, { body: { name: `bad-${uniq()}`, ...body } });
      expect([r.status, r.body.error]).toEqual([422, 'validation_failed']);
      expect(r.body.details.fields.some((f: any) => f.path === path || f.path.startsWith(`${path}/`))).toBe(true);
      expect(r.text).not.toContain('hooks.evil.example/services');
    }
    expect((await admin.call('GET', `${P}/channels`)).body.length).toBe(before);
  });

  test('filter rules: priorities from the set, task_name up to 500, globs up to 200 with 5 wildcards and 3 classes', async () => {
    const project = (await admin.call('GET', '/api/v1/projects/default')).body.id;
    const sub = (filters: unknown) => browsers.operator!.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project, trigger: 'task.retried', filters } });
    await expectFilterRefusals(sub);
    const ok = await sub({ priority: ['critical', 'high'], task_name: 'billing', task_name_pattern: 'billing.*[!x]?' });
    expect(ok.status).toBe(201);
    // One subscription per trigger and project.
    expect((await sub({})).body.error).toBe('subscription_exists');
    // Channels named must be the project's / the caller's own.
    const stranger = await admin.call('POST', '/api/v1/user/channels', { body: webhook() });
    const r = await browsers.operator!.call('PATCH', `/api/v1/user/subscriptions/${ok.body.id}`, { body: { user_channel_ids: [stranger.body.id] } });
    expect([r.status, r.body.details.fields[0].path]).toEqual([422, '/user_channel_ids/0']);
    // Muting stores microsecond UTC text.
    const muted = await browsers.operator!.call('PATCH', `/api/v1/user/subscriptions/${ok.body.id}`, { body: { muted_until: '2099-01-01T00:00:00Z' } });
    expect(muted.body.muted_until).toBe('2099-01-01T00:00:00.000000+00:00');
  });

  test('defaults: the same filter rules on POST and PATCH, refused with 422 naming the rule; nothing stored', async () => {
    await dropDefault('task.retried');
    await expectFilterRefusals((filters) => admin.call('POST', `${P}/defaults`, { body: { trigger: 'task.retried', filters } }));
    expect((await admin.call('GET', `${P}/defaults`)).body.some((d: any) => d.trigger === 'task.retried')).toBe(false);
    const id = await newDefault('task.retried');
    await expectFilterRefusals((filters) => admin.call('PATCH', `${P}/defaults/${id}`, { body: { filters } }));
    expect((await admin.call('GET', `${P}/defaults`)).body.find((d: any) => d.id === id).filters).toEqual({});
  });

  test("ids of another project or another user are not found: channels, defaults, saved-channel tests; nothing changes", async () => {
    const E = '/api/v1/projects/elsewhere/notifications';
    const other = browsers.other_project!;
    const channel = (await other.call('POST', `${E}/channels`, { body: webhook() })).body;
    const def = (await other.call('GET', `${E}/defaults`)).body[0];
    const theirs = (await other.call('POST', '/api/v1/user/channels', { body: webhook() })).body;
    const auditRows = await countAudit();
    const calls: [string, string, CallOptions?][] = [
      ['PATCH', `${P}/channels/${channel.id}`, { body: { name: 'taken-over' } }],
      ['DELETE', `${P}/channels/${channel.id}`],
      ['POST', `${P}/channels/${channel.id}/test`],
      ['PATCH', `${P}/defaults/${def.id}`, { body: { in_app: false } }],
      ['DELETE', `${P}/defaults/${def.id}`],
      ['PATCH', `/api/v1/user/channels/${theirs.id}`, { body: { name: 'taken-over' } }],
      ['DELETE', `/api/v1/user/channels/${theirs.id}`],
      ['POST', `/api/v1/user/channels/${theirs.id}/test`],
    ];
    for (const [method, path, opts] of calls) {
      const r = await browsers.project_admin!.call(method, path, opts);
      expect({ call: `${method} ${path}`, status: r.status, error: r.body.error }).toEqual({ call: `${method} ${path}`, status: 404, error: 'not_found' });
    }
    expect((await other.call('GET', `${E}/channels`)).body.find((c: any) => c.id === channel.id).name).toBe(channel.name);
    expect((await other.call('GET', `${E}/defaults`)).body.find((d: any) => d.id === def.id)).toEqual(def);
    expect((await other.call('GET', '/api/v1/user/channels')).body.find((c: any) => c.id === theirs.id).name).toBe(theirs.name);
    // Neither a test's delivery row nor an audit row was written.
    expect(await countAudit()).toBe(auditRows);
    expect(await svc.ctx.db.all(sql`SELECT id FROM notification_deliveries WHERE channel_id = ${channel.id} OR user_channel_id = ${theirs.id}`)).toEqual([]);
  });

  test('a personal channel name is taken once per user: create, rename and import refuse a taken one with 409 name_taken', async () => {
    const viewer = browsers.viewer!;
    const name = `mine-${uniq()}`;
    expect((await viewer.call('POST', '/api/v1/user/channels', { body: webhook(name) })).status).toBe(201);
    const again = await viewer.call('POST', '/api/v1/user/channels', { body: webhook(name) });
    expect([again.status, again.body.error]).toEqual([409, 'name_taken']);
    const second = (await viewer.call('POST', '/api/v1/user/channels', { body: webhook() })).body;
    const rename = await viewer.call('PATCH', `/api/v1/user/channels/${second.id}`, { body: { name } });
    expect([rename.status, rename.body.error]).toEqual([409, 'name_taken']);
    const imported = await browsers.project_admin!.call('POST', '/api/v1/user/channels/import_from_project', { body: { project_slug: 'default', channel_id: await newProjectChannel(), name: 'twice' } });
    expect(imported.status).toBe(201);
    const twice = await browsers.project_admin!.call('POST', '/api/v1/user/channels/import_from_project', { body: { project_slug: 'default', channel_id: await newProjectChannel(), name: 'twice' } });
    expect([twice.status, twice.body.error]).toEqual([409, 'name_taken']);
    // Another user may use the name.
    expect((await browsers.operator!.call('POST', '/api/v1/user/channels', { body: webhook(name) })).status).toBe(201);
    expect((await viewer.call('GET', '/api/v1/user/channels')).body.filter((c: any) => c.name === name)).toHaveLength(1);
  });

  test('saved-channel tests: the project one and the personal one each write a test.dispatch delivery row and an audit row', async () => {
    const me = (await admin.call('GET', '/api/v1/auth/me')).body.id;
    const channel = (await admin.call('POST', `${P}/channels`, { body: webhook() })).body;
    expect((await admin.call('POST', `${P}/channels/${channel.id}/test`)).body).toMatchObject({ success: false, status_code: 0 });
    const projectLog = (await admin.call('GET', `${P}/deliveries`)).body.items;
    expect(projectLog[0]).toMatchObject({ trigger: 'test.dispatch', status: 'failed', channel_id: channel.id, user_channel_id: null, channel_name: channel.name, triggered_by_user_id: me });
    expect(await lastAudit('notifications.channel.test')).toMatchObject({ target_id: channel.id, user_id: me, metadata: { type: 'webhook', saved: true, status_code: null } });

    const own = (await admin.call('POST', '/api/v1/user/channels', { body: webhook() })).body;
    expect((await admin.call('POST', `/api/v1/user/channels/${own.id}/test`)).body).toMatchObject({ success: false, status_code: 0 });
    const userLog = (await admin.call('GET', '/api/v1/user/deliveries')).body.items;
    expect(userLog[0]).toMatchObject({ trigger: 'test.dispatch', status: 'failed', user_channel_id: own.id, channel_id: null, project_id: null, channel_name: own.name, triggered_by_user_id: me });
    expect(await lastAudit('user_notifications.channel.test')).toMatchObject({ target_id: own.id, user_id: me, metadata: { type: 'webhook', saved: true, status_code: null } });
    // A personal channel's test is in its owner's log only, not the project's.
    expect((await admin.call('GET', `${P}/deliveries`)).body.items.map((d: any) => d.user_channel_id)).not.toContain(own.id);
  });

  test("a subscription in a project the caller does not belong to is not found; a user's own routes never show another's", async () => {
    const elsewhere = (await admin.call('GET', '/api/v1/projects/elsewhere')).body.id;
    const r = await browsers.viewer!.call('POST', '/api/v1/user/subscriptions', { body: { project_id: elsewhere, trigger: 'task.failed' } });
    expect([r.status, r.body.error]).toEqual([404, 'not_found']);
    const adminSub = await admin.call('POST', '/api/v1/user/subscriptions', { body: { project_id: elsewhere, trigger: 'agent.online' } });
    expect((await browsers.viewer!.call('PATCH', `/api/v1/user/subscriptions/${adminSub.body.id}`, { body: { in_app: false } })).status).toBe(404);
    expect((await browsers.viewer!.call('DELETE', `/api/v1/user/subscriptions/${adminSub.body.id}`)).status).toBe(404);
    const adminChannel = await admin.call('POST', '/api/v1/user/channels', { body: webhook() });
    expect((await browsers.viewer!.call('PATCH', `/api/v1/user/channels/${adminChannel.body.id}`, { body: { name: 'x' } })).status).toBe(404);
    expect((await browsers.viewer!.call('GET', '/api/v1/user/channels')).body.map((c: any) => c.id)).not.toContain(adminChannel.body.id);
  });

  test('unsaved tests write a test.dispatch delivery row and an audit row; the delivery log is cleared with its audit row in one go', async () => {
    const test1 = await admin.call('POST', `${P}/channels/test`, { body: { type: 'webhook', config: { url: HOOK, hmac_secret: SECRET } } });
    expect(test1.status).toBe(200);
    expect(test1.body).toMatchObject({ success: false, status_code: 0 });
    expect(test1.body.error).not.toContain(host!.address);
    const log = (await admin.call('GET', `${P}/deliveries`)).body;
    expect(log.items[0]).toMatchObject({ trigger: 'test.dispatch', status: 'failed', channel_type: 'webhook', channel_name: '(unsaved)' });
    expect((await audit('notifications.channel.test')).length).toBeGreaterThan(0);
    expect((await admin.call('GET', `${P}/channels`)).body.some((c: any) => c.name === '(unsaved)')).toBe(false);
    // Clearing: count and cutoff in the audit row; the rows are gone.
    const all = log.items.length;
    const cleared = await admin.call('DELETE', `${P}/deliveries`);
    expect(cleared.body.deleted).toBeGreaterThanOrEqual(all);
    expect((await admin.call('GET', `${P}/deliveries`)).body.items).toEqual([]);
    const rows = await audit('notifications.deliveries.clear');
    const last = rows.at(-1)!;
    const meta = typeof last.metadata === 'string' ? JSON.parse(last.metadata) : last.metadata;
    expect(meta).toMatchObject({ count: cleared.body.deleted, cutoff: null });
    expect(last.user_id).toBe((await admin.call('GET', '/api/v1/auth/me')).body.id);
    const bad = await admin.call('DELETE', `${P}/deliveries?before=yesterday`);
    expect(bad.status).toBe(422);
  });

  test('testing an edited form: with channel_id, a masked secret is the saved one (the receiver checks the signature)', async () => {
    svc.ctx.notifications.outbound.ca = host!.goodCert;
    const url = `https://${host!.address}/edited-form`;
    const saved = await admin.call('POST', `${P}/channels`, { body: { name: `signed-${uniq()}`, type: 'webhook', config: { url, hmac_secret: SECRET } } });
    const masked = { url, hmac_secret: '••••••••' };
    const r = await admin.call('POST', `${P}/channels/test`, { body: { type: 'webhook', config: masked, channel_id: saved.body.id } });
    expect(r.body).toMatchObject({ success: true, status_code: 200 });
    const seen = (await host!.log()).filter((x) => x.path === '/edited-form').at(-1)!;
    const ts = String(seen.headers['x-svc-timestamp']);
    expect(seen.headers['x-svc-signature']).toBe(`sha256=${new Bun.CryptoHasher('sha256', SECRET).update(`${ts}.${seen.body}`).digest('hex')}`);
    // Without channel_id the mask is taken literally (too short a secret: refused before sending).
    expect((await admin.call('POST', `${P}/channels/test`, { body: { type: 'webhook', config: masked } })).status).toBe(422);
    // Another project's channel id is not found.
    const foreign = await browsers.other_project!.call('POST', '/api/v1/projects/elsewhere/notifications/channels', { body: { name: 'x', type: 'webhook', config: { url } } });
    expect((await admin.call('POST', `${P}/channels/test`, { body: { type: 'webhook', config: masked, channel_id: foreign.body.id } })).status).toBe(404);
    // The delivery log links the task's engine too (null for tests).
    expect((await admin.call('GET', `${P}/deliveries`)).body.items[0]).toMatchObject({ trigger: 'test.dispatch', status: 'sent', task_engine: null });
  });

  test('the inbox: list newest first with its unread count, mark one read, mark all read', async () => {
    const viewer = browsers.viewer!;
    const ids = [await ownInboxRow('viewer'), await ownInboxRow('viewer')];
    const page = await viewer.call('GET', '/api/v1/user/notifications?limit=1');
    expect(page.body.items).toHaveLength(1);
    expect(page.body.next_cursor).not.toBeNull();
    expect(page.body.unread).toBeGreaterThanOrEqual(2);
    expect((await viewer.call('POST', `/api/v1/user/notifications/${ids[0]}/read`)).status).toBe(200);
    const unread = (await viewer.call('GET', '/api/v1/user/notifications/unread-count')).body.unread;
    expect((await viewer.call('GET', '/api/v1/user/notifications?unread_only=true&limit=200')).body.items.map((i: any) => i.id)).not.toContain(ids[0]);
    // Another user's row is not found for them.
    expect((await browsers.operator!.call('POST', `/api/v1/user/notifications/${ids[1]}/read`)).status).toBe(404);
    expect((await viewer.call('POST', '/api/v1/user/notifications/read-all')).body.updated).toBe(unread);
    expect((await viewer.call('GET', '/api/v1/user/notifications/unread-count')).body.unread).toBe(0);
    expect((await viewer.call('GET', '/api/v1/user/notifications?cursor=nonsense')).status).toBe(422);
  });

  test('defaults: a new project starts with task.failed in the app; members get the defaults when they join', async () => {
    const slug = `fresh-${uniq()}`.toLowerCase();
    await admin.call('POST', '/api/v1/projects', { body: { slug, name: slug } });
    const defaults = (await admin.call('GET', `/api/v1/projects/${slug}/notifications/defaults`)).body;
    expect(defaults.map((d: any) => [d.trigger, d.in_app])).toEqual([['task.failed', true]]);
    expect((await admin.call('POST', `/api/v1/projects/${slug}/notifications/defaults`, { body: { trigger: 'agent.offline', in_app: false } })).status).toBe(201);
    expect((await admin.call('POST', `/api/v1/projects/${slug}/notifications/defaults`, { body: { trigger: 'agent.offline' } })).body.error).toBe('default_exists');
    // Granted membership: both defaults become the member's subscriptions.
    const joiner = await userBrowser(admin, `joiner-${uniq()}@example.com`);
    await admin.call('POST', `/api/v1/projects/${slug}/memberships`, { body: { user_id: joiner.id, role: 'viewer' } });
    const project = (await admin.call('GET', `/api/v1/projects/${slug}`)).body.id;
    const subs = (await joiner.call('GET', `/api/v1/user/subscriptions?project_id=${project}`)).body;
    expect(subs.map((s: any) => [s.trigger, s.in_app]).sort()).toEqual([
      ['agent.offline', false],
      ['task.failed', true],
    ]);
    // An accepted invitation does the same.
    const invite = await admin.call('POST', `/api/v1/projects/${slug}/invitations`, { body: { email: `invited-${uniq()}@example.com` } });
    const anon = new Browser(svc);
    const accepted = await anon.call('POST', '/api/v1/invitations/accept', { body: { token: invite.body.token, password: STRONG_PASSWORD } });
    expect(accepted.status).toBe(201);
    expect((await anon.call('GET', `/api/v1/user/subscriptions?project_id=${project}`)).body).toHaveLength(2);
  });
});
