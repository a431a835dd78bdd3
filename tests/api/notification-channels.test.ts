// The seven notification channel types against real receivers: an https/http
// receiver and an SMTP server (aiosmtpd) in a network namespace on a public
// address (tests/helpers/outbound-netns.ts, outbound-smtp.ts), so every
// delivery passes the real outbound policy. Only DNS is stood in for: the
// provider hosts (hooks.slack.com, api.telegram.org, ...) resolve to the
// receiver, whose certificate names them. Validation needs no receiver and
// runs everywhere.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import type { NotificationPayload, SendOptions, SendResult } from '../../src/notifications/channels/base.ts';
import { channelType, channelTypes, checkConfig } from '../../src/notifications/channels/index.ts';
import type { Resolver } from '../../src/outbound/resolve.ts';
import { startReceiver, unavailable, type Receiver, type Seen } from '../helpers/outbound-netns.ts';
import { smtpUnavailable, startSmtp, type SmtpServer } from '../helpers/outbound-smtp.ts';

const skip = unavailable();
if (skip) console.warn(`SKIPPED notification channel deliveries: ${skip} (run as root with iproute2 installed)`);
const smtpSkip = skip ?? smtpUnavailable();
if (smtpSkip && !skip) console.warn(`SKIPPED e-mail channel deliveries: ${smtpSkip}`);

const WEBHOOK_HOST = 'hooks.svc-test.example';
const SMTP_HOST = 'smtp.svc-test.example';
const TEAMS_HOST = 'acme.webhook.office.com';
const PUBLIC_NAMES = [WEBHOOK_HOST, SMTP_HOST, TEAMS_HOST, 'hooks.slack.com', 'discord.com', 'api.telegram.org', 'events.pagerduty.com'];

const HMAC_SECRET = 'whsec-0123456789abcdef-notification';
const BOT_TOKEN = '123456789:AAH-test_token-0123456789abcdefXYZ';
const PD_KEY = 'R0UTINGkey_0123456789abcdef';
const SMTP_USER = 'mailer';
const SMTP_PASS = 'smtp-pass-0123456789';
const SLACK_URL = 'https://hooks.slack.com/services/T0001/B0002/slackSecretToken0123456789';
const DISCORD_URL = 'https://discord.com/api/webhooks/112233445566/discordSecretToken0123456789';
const TEAMS_URL = `https://${TEAMS_HOST}/webhookb2/0a1b2c3d-teams-secret-0123456789/IncomingWebhook/abc/def`;

const PROJECT_ID = '7d0c1f5e-2b3a-4c5d-8e9f-0a1b2c3d4e5f';
const TASK_ID = '3f1c2a9e-5b6d-4e1f-9a7b-0c8d2e4f6a1b';
const LINK = `https://svc.example.com/projects/billing/tasks/celery/${TASK_ID}`;
const EXCEPTION = "CardError: card <4242> declined & can't `retry`";
const TRACEBACK = `Traceback (most recent call last):\n  File "billing/tasks.py", line 42, in charge_card\n${EXCEPTION}`;

// As the dispatcher builds it: the body starts with the exception.
const payload: NotificationPayload = {
  trigger: 'task.failed',
  project_id: PROJECT_ID,
  project_slug: 'billing',
  title: 'Task failed: billing.charge_card',
  body: EXCEPTION,
  link: LINK,
  task_id: TASK_ID,
  task_name: 'billing.charge_card',
  engine: 'celery',
  queue: 'payments',
  priority: 'high',
  state: 'failure',
  exception: EXCEPTION,
  traceback: TRACEBACK,
  agent_id: null,
  agent_name: null,
  schedule_id: null,
  schedule_name: null,
  timestamp: '2026-11-22T05:31:24.123456+00:00',
};

/** The facts every format lists for `payload`, in order. */
const FACTS: [string, string][] = [
  ['Trigger', 'task.failed'],
  ['Project', 'billing'],
  ['Task', 'billing.charge_card'],
  ['Task ID', TASK_ID],
  ['State', 'failure'],
  ['Priority', 'high'],
  ['Queue', 'payments'],
];
// A fence cannot be closed early: every backtick inside is followed by a zero-width space.
const FENCED_EXCEPTION = "```\nCardError: card <4242> declined & can't `\u200bretry`\u200b\n```";

const configs = {
  webhook: { url: `https://${WEBHOOK_HOST}/hooks/svc?channel=ops`, headers: { 'X-Team': 'payments' }, hmac_secret: HMAC_SECRET },
  slack: { webhook_url: SLACK_URL },
  discord: { webhook_url: DISCORD_URL },
  teams: { webhook_url: TEAMS_URL },
  telegram: { bot_token: BOT_TOKEN, chat_id: -1001234567890 },
  pagerduty: { integration_key: PD_KEY, severity_default: 'warning' },
  email: {
    smtp_host: SMTP_HOST,
    smtp_port: 587,
    smtp_user: SMTP_USER,
    smtp_pass: SMTP_PASS,
    smtp_tls: true,
    from_addr: 'alerts@svc-test.example',
    to_addrs: ['ops@svc-test.example', 'oncall@svc-test.example'],
  },
} satisfies Record<string, Record<string, unknown>>;
type HttpType = 'webhook' | 'slack' | 'discord' | 'teams' | 'telegram' | 'pagerduty';

/** Per HTTP type: the path it posts to (query included), what its provider answers on success, the
 * statuses it takes as delivered, and its credential (what a failing receiver echoes in the tests). */
const HTTP_TARGETS: Record<HttpType, { path: string; ok: number; expected: string; secret: string }> = {
  webhook: { path: '/hooks/svc?channel=ops', ok: 200, expected: '2xx', secret: HMAC_SECRET },
  slack: { path: '/services/T0001/B0002/slackSecretToken0123456789', ok: 200, expected: '200', secret: 'slackSecretToken0123456789' },
  discord: { path: '/api/webhooks/112233445566/discordSecretToken0123456789/slack', ok: 204, expected: '200 or 204', secret: 'discordSecretToken0123456789' },
  teams: { path: '/webhookb2/0a1b2c3d-teams-secret-0123456789/IncomingWebhook/abc/def', ok: 202, expected: '2xx', secret: '0a1b2c3d-teams-secret-0123456789' },
  telegram: { path: `/bot${BOT_TOKEN}/sendMessage`, ok: 200, expected: '200', secret: BOT_TOKEN },
  pagerduty: { path: '/v2/enqueue', ok: 202, expected: '202', secret: PD_KEY },
};
const HTTP_TYPES = Object.keys(HTTP_TARGETS) as HttpType[];

/** What no result, error or message may contain: secrets, tokens, URL paths. */
const SECRETS = [HMAC_SECRET, BOT_TOKEN, PD_KEY, SMTP_PASS, 'slackSecretToken', 'discordSecretToken', 'teams-secret', '/services/T0001'];

const notFound = (host: string) => Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
/** DNS as a test wants it: the listed names to `address`, `internal.svc-test.example` to loopback. */
const resolverTo =
  (address: string): Resolver =>
  async (host) => {
    if (PUBLIC_NAMES.includes(host)) return [address];
    if (host === 'internal.svc-test.example') return ['127.0.0.1'];
    throw notFound(host);
  };

// Validation resolves names but never connects: any public-looking address will do.
const checkOptions: SendOptions = { allowHttp: false, timeoutMs: 5000, resolver: resolverTo('203.0.113.10') };

const check = (type: string, config: unknown, options: SendOptions = checkOptions) => checkConfig(channelType(type)!, config, options);

async function refusal(type: string, config: unknown, options?: SendOptions): Promise<{ path: string; code?: string; message: string }[]> {
  const r = await check(type, config, options);
  if (r.ok) throw new Error(`expected ${type} config to be refused`);
  return r.fields;
}

function expectClean(value: unknown, extra: string[] = []): void {
  const text = JSON.stringify(value);
  for (const s of [...SECRETS, ...extra]) expect(text).not.toContain(s);
}

describe('channel registry', () => {
  test('seven types in the spec order; the spec-masked config keys are their secrets', () => {
    expect(channelTypes.map((t) => t.type)).toEqual(['webhook', 'email', 'slack', 'telegram', 'pagerduty', 'discord', 'teams']);
    expect(Object.fromEntries(channelTypes.map((t) => [t.type, t.secretKeys]))).toEqual({
      webhook: ['hmac_secret'],
      email: ['smtp_pass'],
      slack: [],
      telegram: ['bot_token'],
      pagerduty: ['integration_key'],
      discord: [],
      teams: [],
    });
    expect(channelType('sms')).toBeNull();
    expect(channelType('constructor')).toBeNull();
  });

  test('every valid config passes as it is', async () => {
    for (const [type, config] of Object.entries(configs)) {
      expect(await check(type, config)).toEqual({ ok: true, config });
    }
  });
});

describe('config validation', () => {
  test('the whole config is at most 16 KiB, closed, and typed', async () => {
    expect(await refusal('webhook', { url: 'https://hooks.svc-test.example/', headers: { 'X-Big': 'v'.repeat(17 * 1024) } })).toEqual([
      { path: '/config', message: 'must be at most 16384 bytes as JSON', code: 'too_large' },
    ]);
    expect((await refusal('slack', { webhook_url: SLACK_URL, extra: 1 }))[0]!.path).toBe('/config/extra');
    expect((await refusal('email', { ...configs.email, smtp_port: '587' }))[0]!.path).toBe('/config/smtp_port');
    expect((await refusal('telegram', { chat_id: 1 }))[0]!.path).toBe('/config/bot_token');
  });

  test('webhook headers: count, names, forbidden names, CR/LF; values are never echoed', async () => {
    const url = 'https://hooks.svc-test.example/h';
    const codes = async (headers: Record<string, string>) =>
      (await refusal('webhook', { url, headers })).map((f) => [f.path, f.code]);
    for (const name of ['Host', 'authorization', 'Cookie', 'Proxy-Authorization', 'X-Forwarded-For', 'x-forwarded-host', 'X-Real-IP', 'Content-Length', 'Transfer-Encoding', 'Connection', 'Upgrade', 'TE']) {
      expect(await codes({ [name]: 'v' })).toEqual([[`/config/headers/${name}`, 'header_forbidden']]);
    }
    const injected = 'ok\r\nX-Injected: stolen-value';
    const fields = await refusal('webhook', { url, headers: { 'X-A': injected, 'X-B': 'line\nbreak', 'X C': 'v', 'X-D': 'x'.repeat(1025) } });
    expect(fields.map((f) => [f.path, f.code])).toEqual([
      ['/config/headers/X-A', 'header_value'],
      ['/config/headers/X-B', 'header_value'],
      ['/config/headers/X C', 'header_name'],
      ['/config/headers/X-D', 'header_value'],
    ]);
    expect(JSON.stringify(fields)).not.toContain('stolen-value');
    expect(await codes({ [`X-${'n'.repeat(100)}`]: 'v' })).toEqual([[`/config/headers/X-${'n'.repeat(100)}`, 'header_name']]);
    expect(await codes({ 'X-Dup': '1', 'x-dup': '2' })).toEqual([['/config/headers/x-dup', 'header_duplicate']]);
    expect(await codes(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])))).toEqual([['/config/headers', 'too_many_headers']]);
    expect(await check('webhook', { url, headers: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, 'v\tw'])) })).toMatchObject({ ok: true });
    expect((await refusal('webhook', { url, hmac_secret: 'short' }))[0]).toMatchObject({ path: '/config/hmac_secret' });
  });

  test('http:// only with allowHttp, and only for the generic webhook', async () => {
    expect(await refusal('webhook', { url: 'http://hooks.svc-test.example/h' })).toEqual([
      { path: '/config/url', message: 'destination scheme must be https://', code: 'scheme' },
    ]);
    const allowHttp = { ...checkOptions, allowHttp: true };
    expect(await check('webhook', { url: 'http://hooks.svc-test.example/h' }, allowHttp)).toMatchObject({ ok: true });
    expect(await refusal('slack', { webhook_url: SLACK_URL.replace('https:', 'http:') }, allowHttp)).toEqual([
      { path: '/config/webhook_url', message: 'must be an https:// URL', code: 'scheme' },
    ]);
    expect((await refusal('webhook', { url: 'not a url' }))[0]).toMatchObject({ path: '/config/url', code: 'invalid_url' });
    expect((await refusal('webhook', { url: 'https://user:pw@hooks.svc-test.example/h' }))[0]).toMatchObject({ code: 'userinfo' });
  });

  test('provider hosts: Slack, Discord and Teams accept their own hosts only, on the default port', async () => {
    const cases: [string, string, boolean][] = [
      ['slack', SLACK_URL, true],
      ['slack', 'https://hooks.slack.com.evil.example/services/T/B/x', false],
      ['slack', 'https://evil.example/services/T/B/x?hooks.slack.com', false],
      ['slack', 'https://api.slack.com/services/T/B/x', false],
      ['slack', 'https://hooks.slack.com:8443/services/T/B/x', false],
      ['discord', DISCORD_URL, true],
      ['discord', 'https://discordapp.com/api/webhooks/1/x', true],
      ['discord', 'https://canary.discord.com/api/webhooks/1/x', true],
      ['discord', 'https://ptb.discord.com/api/webhooks/1/x', true],
      ['discord', 'https://discord.gg/api/webhooks/1/x', false],
      ['discord', 'https://evil.discord.com/api/webhooks/1/x', false],
      ['teams', TEAMS_URL, true],
      ['teams', 'https://outlook.office.com/webhook/x', true],
      ['teams', 'https://prod-12.westus.logic.azure.com/workflows/x', true],
      ['teams', 'https://webhook.office.com/x', false],
      ['teams', 'https://outlook.office.com.evil.example/x', false],
      ['teams', 'https://evil.example/webhook.office.com', false],
    ];
    const options = { ...checkOptions, resolver: async () => ['203.0.113.10'] };
    for (const [type, url, ok] of cases) {
      const r = await check(type, { webhook_url: url }, options);
      expect([type, url, r.ok]).toEqual([type, url, ok]);
      if (!r.ok) expect(r.fields).toMatchObject([{ path: '/config/webhook_url', code: 'provider_host' }]);
    }
  });

  // Every URL and the SMTP host: the address literals of each blocked range, and a name resolving into one.
  const BLOCKED: [string, string, string][] = [
    ['127.0.0.1', '127.0.0.1', 'loopback'],
    ['[::1]', '::1', 'loopback'],
    ['10.1.2.3', '10.1.2.3', 'private'],
    ['172.16.5.4', '172.16.5.4', 'private'],
    ['192.168.1.1', '192.168.1.1', 'private'],
    ['[fd00::1]', 'fd00::1', 'private'],
    ['169.254.169.254', '169.254.169.254', 'link local (metadata)'],
    ['[fe80::1]', 'fe80::1', 'link_local'],
    ['100.64.0.1', '100.64.0.1', 'cgnat'],
    ['198.18.0.1', '198.18.0.1', 'benchmark'],
    ['[::ffff:127.0.0.1]', '::ffff:127.0.0.1', 'ipv4_mapped'],
    ['[::ffff:203.0.113.10]', '::ffff:203.0.113.10', 'ipv4_mapped'],
    ['[2002:7f00:1::]', '2002:7f00:1::', '6to4'],
    ['[64:ff9b::7f00:1]', '64:ff9b::7f00:1', 'nat64'],
    ['0.0.0.0', '0.0.0.0', 'unspecified'],
    ['2130706433', '2130706433', 'loopback (decimal)'],
    ['internal.svc-test.example', 'internal.svc-test.example', 'name resolving to loopback'],
  ];

  test('webhook URL: blocked ranges and names resolving into them are refused, naming neither', async () => {
    for (const [urlHost, , what] of BLOCKED) {
      const fields = await refusal('webhook', { url: `https://${urlHost}/hook?token=tok-secret-q` });
      expect([what, fields.length, fields[0]!.path, fields[0]!.code]).toEqual([what, 1, '/config/url', 'blocked_address']);
      expect(fields[0]!.message).toMatch(/not allowed \(/);
      expectClean(fields, ['tok-secret-q', '127.0.0.1', 'internal.svc-test']);
    }
  });

  test('SMTP host: the same ranges, and only ports 25, 465, 587, 2525', async () => {
    for (const [, host, what] of BLOCKED) {
      const fields = await refusal('email', { ...configs.email, smtp_host: host });
      expect([what, fields]).toEqual([what, [expect.objectContaining({ path: '/config/smtp_host', code: 'blocked_address' })]]);
    }
    for (const port of [25, 465, 587, 2525]) expect(await check('email', { ...configs.email, smtp_port: port })).toMatchObject({ ok: true });
    for (const port of [22, 80, 443, 2526, 8025]) {
      expect(await refusal('email', { ...configs.email, smtp_port: port })).toEqual([
        { path: '/config/smtp_port', message: 'must be one of 25, 465, 587, 2525', code: 'port_not_allowed' },
      ]);
    }
    for (const host of ['smtp.example.com/x', 'user@smtp.example.com', 'smtp.example.com:25', 'a b', 'smtp.example.com?x']) {
      expect(await refusal('email', { ...configs.email, smtp_host: host })).toEqual([
        { path: '/config/smtp_host', message: 'must be a hostname or an IP address', code: 'hostname' },
      ]);
    }
  });

  test('a provider host that resolves into a blocked range is refused too', async () => {
    const poisoned = { ...checkOptions, resolver: async () => ['10.0.0.7'] };
    for (const type of ['slack', 'discord', 'teams'] as const) {
      expect(await refusal(type, configs[type], poisoned)).toEqual([
        { path: '/config/webhook_url', message: 'destination hostname resolves to an address that is not allowed (private)', code: 'blocked_address' },
      ]);
    }
    expect(await refusal('webhook', configs.webhook, poisoned)).toMatchObject([{ code: 'blocked_address' }]);
    expect(await refusal('email', configs.email, poisoned)).toMatchObject([{ path: '/config/smtp_host', code: 'blocked_address' }]);
  });

  test('telegram: bot token and chat id formats; the token is never echoed', async () => {
    for (const bot_token of ['123456789', 'abc:def', '123:abc def', '123:abc/../x', ':abc', '123:']) {
      const fields = await refusal('telegram', { bot_token, chat_id: 1 });
      expect(fields).toMatchObject([{ path: '/config/bot_token', code: 'bot_token' }]);
      expect(JSON.stringify(fields)).not.toContain(bot_token);
    }
    for (const chat_id of [-1001234567890, 42, '12345', '-100123', '@svc_alerts']) {
      expect(await check('telegram', { bot_token: BOT_TOKEN, chat_id })).toMatchObject({ ok: true });
    }
    for (const chat_id of ['chat', '@ab', '12.5', '@svc alerts', '']) {
      expect(await refusal('telegram', { bot_token: BOT_TOKEN, chat_id })).toMatchObject([{ path: '/config/chat_id' }]);
    }
  });

  test('pagerduty: key format, severities, the map of trigger keys', async () => {
    for (const integration_key of ['short', 'has spaces 0123', 'x'.repeat(65), 'key/with/slash']) {
      expect(await refusal('pagerduty', { integration_key })).toMatchObject([{ path: '/config/integration_key' }]);
    }
    expect(await refusal('pagerduty', { integration_key: PD_KEY, severity_default: 'fatal' })).toMatchObject([{ path: '/config/severity_default', code: 'severity' }]);
    expect(await refusal('pagerduty', { integration_key: PD_KEY, severity_map: { 'task.bogus': 'error', 'task.failed': 'fatal' } })).toEqual([
      { path: '/config/severity_map/task.bogus', message: 'keys are trigger keys (task.failed, agent.offline, ...) or test.dispatch', code: 'trigger' },
      { path: '/config/severity_map/task.failed', message: 'must be one of critical, error, warning, info', code: 'severity' },
    ]);
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'info']));
    expect((await refusal('pagerduty', { integration_key: PD_KEY, severity_map: many }))[0]).toMatchObject({ path: '/config/severity_map', code: 'severity_map' });
    expect(await check('pagerduty', { integration_key: PD_KEY, severity_map: { 'test.dispatch': 'info', 'schedule.misfired': 'critical' } })).toMatchObject({ ok: true });
  });

  test('email: addresses (no CR/LF), sender, credentials only over TLS', async () => {
    const fields = await refusal('email', { ...configs.email, to_addrs: ['ops@svc-test.example', 'ops@svc-test.example\r\nBcc: spy@evil.example'] });
    expect(fields).toEqual([{ path: '/config/to_addrs/1', message: 'must be an e-mail address', code: 'address' }]);
    expect(JSON.stringify(fields)).not.toContain('evil');
    expect(await refusal('email', { ...configs.email, from_addr: 'svc\n@example.com' })).toMatchObject([{ path: '/config/from_addr', code: 'address' }]);
    const { from_addr: _, ...noFrom } = configs.email;
    expect(await refusal('email', noFrom)).toMatchObject([{ path: '/config/from_addr', code: 'address' }]);
    expect(await check('email', { ...noFrom, smtp_user: 'mailer@svc-test.example' })).toMatchObject({ ok: true });
    expect(await refusal('email', { ...configs.email, smtp_tls: false })).toEqual([
      { path: '/config/smtp_tls', message: 'must be true to log in (or use port 465)', code: 'credentials_need_tls' },
    ]);
    expect(await check('email', { ...configs.email, smtp_tls: false, smtp_port: 465 })).toMatchObject({ ok: true });
    const { smtp_user: __, smtp_pass: ___, ...anonymous } = configs.email;
    expect(await check('email', { ...anonymous, smtp_tls: false, smtp_port: 25 })).toMatchObject({ ok: true });
    expect((await refusal('email', { ...configs.email, to_addrs: [] }))[0]!.path).toBe('/config/to_addrs');
    expect((await refusal('email', { ...configs.email, to_addrs: Array(51).fill('a@svc-test.example') }))[0]!.path).toBe('/config/to_addrs');
  });
});

let rx: Receiver;
let options: SendOptions;
let smtp: SmtpServer | null = null;

beforeAll(async () => {
  if (skip) return;
  rx = await startReceiver({ names: PUBLIC_NAMES });
  options = { allowHttp: false, timeoutMs: 5000, resolver: resolverTo(rx.address), ca: rx.goodCert };
  if (!smtpSkip) smtp = await startSmtp(rx, SMTP_USER, SMTP_PASS);
}, 30_000);

afterAll(async () => {
  await rx?.stop();
});

const send = (type: string, config: Record<string, unknown>, p: NotificationPayload = payload, o: SendOptions = options): Promise<SendResult> =>
  channelType(type)!.send(config, p, o);

/** Requests the receiver saw on `path` (query included). */
const seenAt = async (path: string): Promise<Seen[]> => (await rx.log()).filter((s) => s.path === path);

/** Sends and returns the one request the receiver got for it. */
async function deliver(type: HttpType, config: Record<string, unknown> = configs[type], p: NotificationPayload = payload): Promise<Seen> {
  const { path, ok } = HTTP_TARGETS[type];
  await rx.respond(path.split('?')[0]!, { status: ok, body: '{"ok":true}' });
  const before = (await seenAt(path)).length;
  try {
    expect(await send(type, config, p)).toEqual({ success: true, status_code: ok, error: null, response_body: null });
  } finally {
    await rx.respond(path.split('?')[0]!, null);
  }
  const seen = (await seenAt(path)).slice(before);
  expect(seen).toHaveLength(1);
  const s = seen[0]!;
  // Pinned: Host and SNI name the configured host while the connection went to the checked address.
  expect(s).toMatchObject({ port: 443, method: 'POST', sni: s.host });
  expect(s.remote?.replace(/^::ffff:/, '')).toBe(rx.hostSide);
  expect(s.headers['content-type']).toBe('application/json');
  expect(s.headers['user-agent']).toBe(`svc/notification-${type}`);
  return s;
}

describe.skipIf(skip !== null)('HTTP channel deliveries', () => {
  test('webhook: the payload as JSON, owner headers, signature verifiable from the raw body', async () => {
    const s = await deliver('webhook');
    expect(s.host).toBe(WEBHOOK_HOST);
    expect(s.body).toBe(JSON.stringify(payload));
    expect(s.headers['x-team']).toBe('payments');
    const ts = String(s.headers['x-svc-timestamp']);
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(30);
    // Spec, Authentication rule 5, computed by the test from the bytes received.
    expect(s.headers['x-svc-signature']).toBe(`sha256=${createHmac('sha256', HMAC_SECRET).update(`${ts}.${s.body}`).digest('hex')}`);
    expect(JSON.parse(s.body)).toEqual(payload);
  });

  test("webhook: without a secret nothing is signed; svc's Content-Type and User-Agent win over the owner's", async () => {
    const s = await deliver('webhook', { url: configs.webhook.url, headers: { 'Content-Type': 'text/plain', 'User-Agent': 'spoof' } });
    // deliver() checked that content-type and user-agent are svc's.
    expect(Object.keys(s.headers).filter((h) => h.startsWith('x-svc-'))).toEqual([]);
    expect(s.body).toBe(JSON.stringify(payload));
  });

  test('webhook: http:// delivered over plain http only when allowHttp', async () => {
    const config = { url: `http://${WEBHOOK_HOST}/hooks/plain` };
    expect(await send('webhook', config)).toMatchObject({ success: false, status_code: null, error: 'destination scheme must be https://' });
    expect(await seenAt('/hooks/plain')).toEqual([]);
    expect(await send('webhook', config, payload, { ...options, allowHttp: true })).toMatchObject({ success: true, status_code: 200 });
    expect(await seenAt('/hooks/plain')).toMatchObject([{ port: 80, host: WEBHOOK_HOST, sni: null, body: JSON.stringify(payload) }]);
  });

  test('slack: Block Kit with header, facts, escaped exception in a code block, link', async () => {
    const s = await deliver('slack');
    expect(s.host).toBe('hooks.slack.com');
    const esc = FENCED_EXCEPTION.replace('&', '&amp;').replace('<4242>', '&lt;4242&gt;');
    expect(JSON.parse(s.body)).toEqual({
      text: 'Task failed: billing.charge_card',
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: '🟠 Task failed: billing.charge_card', emoji: true } },
        { type: 'section', fields: FACTS.map(([k, v]) => ({ type: 'mrkdwn', text: `*${k}*\n${v}` })) },
        { type: 'section', text: { type: 'mrkdwn', text: esc } },
        { type: 'context', elements: [{ type: 'mrkdwn', text: `<${LINK}|Open in svc>` }] },
      ],
    });
  });

  test('discord: {text, username} to <webhook>/slack, markdown escaped, mentions broken', async () => {
    const s = await deliver('discord', configs.discord, { ...payload, task_name: 'billing.charge_card @everyone' });
    expect(s.host).toBe('discord.com');
    const facts = FACTS.map(([k, v]) => `**${k}:** ${(k === 'Task' ? `${v} @\u200beveryone` : v).replaceAll('_', '\\_')}`);
    expect(JSON.parse(s.body)).toEqual({
      text: ['**Task failed: billing.charge\\_card**', ...facts, FENCED_EXCEPTION, LINK].join('\n'),
      username: 'svc',
    });
    // A query (thread_id) stays, after the /slack endpoint.
    expect(await send('discord', { webhook_url: `${DISCORD_URL}?thread_id=42` })).toMatchObject({ success: true, status_code: 200 });
    expect(await seenAt(`${HTTP_TARGETS.discord.path}?thread_id=42`)).toHaveLength(1);
  });

  test('teams: an Adaptive Card 1.4 message with title, facts, exception, link', async () => {
    const s = await deliver('teams', configs.teams, { ...payload, priority: 'critical' });
    expect(s.host).toBe(TEAMS_HOST);
    expect(JSON.parse(s.body)).toEqual({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.4',
            body: [
              {
                type: 'Container',
                style: 'attention',
                items: [
                  { type: 'TextBlock', text: 'Task failed: billing.charge_card', weight: 'Bolder', size: 'Medium', wrap: true },
                  { type: 'FactSet', facts: FACTS.map(([title, value]) => ({ title, value: title === 'Priority' ? 'critical' : value })) },
                  { type: 'TextBlock', text: EXCEPTION, fontType: 'Monospace', wrap: true },
                ],
              },
            ],
            actions: [{ type: 'Action.OpenUrl', title: 'Open in svc', url: LINK }],
          },
        },
      ],
    });
  });

  test('telegram: sendMessage under /bot<token>/ with escaped Markdown', async () => {
    const s = await deliver('telegram');
    expect(s.host).toBe('api.telegram.org');
    expect(JSON.parse(s.body)).toEqual({
      chat_id: -1001234567890,
      text: [
        'Task failed: billing.charge\\_card',
        ...FACTS.map(([k, v]) => `${k}: ${v.replaceAll('_', '\\_')}`),
        FENCED_EXCEPTION,
        `[Open in svc](${LINK})`,
      ].join('\n'),
      parse_mode: 'Markdown',
    });
  });

  test('pagerduty: an Events v2 trigger with dedup key, summary, severity and the payload as details', async () => {
    const s = await deliver('pagerduty');
    expect(s.host).toBe('events.pagerduty.com');
    expect(JSON.parse(s.body)).toEqual({
      routing_key: PD_KEY,
      event_action: 'trigger',
      dedup_key: `${PROJECT_ID}/task.failed/${TASK_ID}`,
      payload: {
        summary: 'Task failed: billing.charge_card (billing)',
        source: 'svc/billing',
        severity: 'error',
        timestamp: payload.timestamp,
        component: 'billing.charge_card',
        group: 'task.failed',
        class: 'svc.notification',
        custom_details: payload,
      },
      links: [{ href: LINK, text: 'Open in svc' }],
    });
  });

  test('pagerduty: severity from the map, else the built-in default for the trigger, else severity_default', async () => {
    const agent = { ...payload, task_id: null, task_name: null, priority: null, exception: null, traceback: null, agent_id: 'a-1', agent_name: 'worker-1' };
    const cases: [Record<string, unknown>, NotificationPayload, string][] = [
      [{ severity_map: { 'task.failed': 'critical' } }, payload, 'critical'],
      [{}, { ...agent, trigger: 'agent.offline' }, 'critical'],
      [{}, { ...agent, trigger: 'agent.online' }, 'info'],
      [{}, { ...payload, trigger: 'task.retried' }, 'warning'],
      [{}, { ...payload, trigger: 'task.succeeded' }, 'info'],
      [{}, { ...payload, trigger: 'schedule.misfired', task_id: null, schedule_id: 's-1' }, 'error'],
      [{ severity_default: 'info' }, { ...payload, trigger: 'test.dispatch' }, 'info'],
      [{}, { ...payload, trigger: 'test.dispatch' }, 'warning'],
      [{}, { ...payload, trigger: 'constructor' }, 'warning'],
    ];
    for (const [extra, p, severity] of cases) {
      const body = JSON.parse((await deliver('pagerduty', { integration_key: PD_KEY, ...extra }, p)).body);
      expect([p.trigger, body.payload.severity]).toEqual([p.trigger, severity]);
    }
    const offline = JSON.parse((await deliver('pagerduty', { integration_key: PD_KEY }, { ...agent, trigger: 'agent.offline' })).body);
    expect(offline).toMatchObject({ dedup_key: `${PROJECT_ID}/agent.offline/a-1`, payload: { component: 'worker-1' } });
  });

  test.each(HTTP_TYPES)('%s: a failing receiver gives its status, a sanitised error and at most 2 KiB of its answer', async (type) => {
    const { path, expected, secret } = HTTP_TARGETS[type];
    const route = path.split('?')[0]!;
    // The answer echoes the channel's credential: it is cut out before the answer is shortened.
    await rx.respond(route, { status: 500, body: `upstream exploded for ${secret} ${'x'.repeat(3000)}` });
    try {
      const r = await send(type, configs[type]);
      expect(r).toMatchObject({ success: false, status_code: 500, error: `receiver answered HTTP 500 (expected ${expected})` });
      expect(r.response_body!.startsWith('upstream exploded for [redacted] xxx')).toBe(true);
      expect(new TextEncoder().encode(r.response_body!).byteLength).toBe(2048);
      expectClean(r, [rx.address]);
    } finally {
      await rx.respond(route, null);
    }
  });

  test('a redirect is a failure and is not followed', async () => {
    const r = await send('webhook', { url: `https://${WEBHOOK_HOST}/redirect` });
    expect(r).toMatchObject({ success: false, status_code: 302, error: 'receiver answered HTTP 302 (expected 2xx; redirects are not followed)', response_body: 'moved' });
    expect((await rx.log()).filter((s) => s.path.includes('followed'))).toEqual([]);
  });

  test.each(HTTP_TYPES)('%s: a receiver that never answers ends at the timeout', async (type) => {
    const route = HTTP_TARGETS[type].path.split('?')[0]!;
    await rx.respond(route, { hang: true });
    try {
      const started = Date.now();
      const r = await send(type, configs[type], payload, { ...options, timeoutMs: 600 });
      expect(r).toEqual({ success: false, status_code: null, error: 'request timed out after 600 ms', response_body: null });
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await rx.respond(route, null);
    }
  });

  test.each(HTTP_TYPES)('%s: checked at validation, refused at send once DNS points somewhere blocked', async (type) => {
    expect(await check(type, configs[type], options)).toMatchObject({ ok: true });
    const before = (await rx.log()).length;
    const rebound: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['169.254.169.254', 'link_local'],
      ['100.64.1.1', 'cgnat'],
      ['::ffff:10.0.0.1', 'ipv4_mapped, embedding private'],
      ['2002:a00:1::1', '6to4'],
      ['64:ff9b::a00:1', 'nat64'],
    ];
    for (const [address, range] of rebound) {
      const r = await send(type, configs[type], payload, { ...options, resolver: async () => [address] });
      expect(r).toEqual({
        success: false,
        status_code: null,
        error: `destination hostname resolves to an address that is not allowed (${range})`,
        response_body: null,
      });
      expectClean(r, [address]);
    }
    expect((await rx.log()).length).toBe(before);
  });
});

/** Header lines and the decoded text body of a message as the server received it. */
function parseMail(raw: string): { headers: Record<string, string>; body: string } {
  const text = raw.replace(/\r\n/g, '\n');
  const cut = text.indexOf('\n\n');
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, cut).replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(cut + 2);
  if (headers['content-transfer-encoding'] === 'quoted-printable') {
    const bytes = body.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    body = Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return { headers, body };
}

const MAIL_TEXT = `Task failed: billing.charge_card

Trigger:  task.failed
Project:  billing
Task:     billing.charge_card
Task ID:  ${TASK_ID}
State:    failure
Priority: high
Queue:    payments
Time:     2026-11-22T05:31:24.123456+00:00

Exception:
${EXCEPTION}

Traceback:
${TRACEBACK}

Open in svc: ${LINK}
`;

describe.skipIf(smtpSkip !== null)('e-mail deliveries to a real SMTP server', () => {
  const mails = () => smtp!.messages();

  test('STARTTLS on 587: logs in, pinned address, SNI and certificate by hostname, the message as built', async () => {
    const before = mails().length;
    expect(await send('email', configs.email)).toEqual({ success: true, status_code: 250, error: null, response_body: null });
    const got = mails().slice(before);
    expect(got).toHaveLength(1);
    const m = got[0]!;
    expect(m).toMatchObject({
      port: 587,
      peer: rx.hostSide,
      sni: SMTP_HOST,
      login: SMTP_USER,
      mail_from: 'alerts@svc-test.example',
      rcpt_tos: ['ops@svc-test.example', 'oncall@svc-test.example'],
    });
    expect(m.tls).toMatch(/^TLSv1\.[23]$/);
    const { headers, body } = parseMail(m.data);
    expect(headers.subject).toBe('[HIGH] [svc] Task failed: billing.charge_card');
    expect(headers.from).toBe('svc <alerts@svc-test.example>');
    expect(headers.to).toBe('ops@svc-test.example, oncall@svc-test.example');
    expect(headers['content-type']).toStartWith('text/plain');
    expect(body).toBe(MAIL_TEXT);
  });

  test('implicit TLS on 465, whatever smtp_tls says', async () => {
    const before = mails().length;
    const r = await send('email', { ...configs.email, smtp_port: 465, smtp_tls: false }, { ...payload, priority: 'normal', title: 'Agent\r\nBcc: spy@evil.example' });
    expect(r).toEqual({ success: true, status_code: 250, error: null, response_body: null });
    const [m] = mails().slice(before);
    expect(m).toMatchObject({ port: 465, sni: SMTP_HOST, login: SMTP_USER, rcpt_tos: ['ops@svc-test.example', 'oncall@svc-test.example'] });
    expect(m!.tls).not.toBeNull();
    // A title from an agent cannot add a header: line breaks become spaces, normal priority has no prefix.
    const { headers } = parseMail(m!.data);
    expect(headers.subject).toBe('[svc] Agent Bcc: spy@evil.example');
    expect(headers.bcc).toBeUndefined();
  });

  test('plain SMTP without credentials when smtp_tls is false', async () => {
    const before = mails().length;
    const config = { smtp_host: SMTP_HOST, smtp_port: 2525, smtp_tls: false, from_addr: 'alerts@svc-test.example', to_addrs: ['ops@svc-test.example'] };
    expect(await check('email', config, options)).toMatchObject({ ok: true });
    expect(await send('email', config)).toMatchObject({ success: true, status_code: 250 });
    expect(mails().slice(before)).toMatchObject([{ port: 2525, tls: null, login: null, rcpt_tos: ['ops@svc-test.example'] }]);
  });

  test('smtp_tls refuses a server that cannot STARTTLS; nothing is sent in clear', async () => {
    const before = mails().length;
    const r = await send('email', { ...configs.email, smtp_port: 2525 });
    expect(r).toMatchObject({ success: false, status_code: 454, error: 'SMTP server did not start TLS (STARTTLS is required)' });
    expect(r.response_body).toContain('TLS not available');
    expect(mails().length).toBe(before);
    expectClean(r, [rx.address]);
  });

  test('the certificate is checked against the hostname, not the pinned address', async () => {
    // :25 offers STARTTLS with a certificate naming the receiver's IP and another hostname; trusted, it still fails.
    const r = await send('email', { ...configs.email, smtp_port: 25 }, payload, { ...options, ca: rx.noHostCert });
    expect(r).toEqual({ success: false, status_code: null, error: 'TLS verification or handshake failed (ERR_TLS_CERT_ALTNAME_INVALID)', response_body: null });
    // An untrusted certificate fails as well: verification cannot be skipped.
    const untrusted = await send('email', configs.email, payload, { ...options, ca: undefined });
    expect(untrusted).toMatchObject({ success: false, status_code: null });
    expect(untrusted.error).toStartWith('TLS verification or handshake failed (');
  });

  test('a refused recipient or login: the reply code, a sanitised error, the server reply', async () => {
    const rejected = await send('email', { ...configs.email, to_addrs: ['reject@svc-test.example'] });
    expect(rejected).toEqual({
      success: false,
      status_code: 550,
      error: 'SMTP server refused the sender or the recipients',
      response_body: '550 5.1.1 <reject@svc-test.example> mailbox unavailable (test rejection)',
    });
    const badLogin = await send('email', { ...configs.email, smtp_pass: 'wrong-pass-0123456789' });
    expect(badLogin).toMatchObject({ success: false, status_code: 535, error: 'SMTP server refused the login' });
    expectClean([rejected, badLogin], ['wrong-pass-0123456789', rx.address]);
  });

  test('a server that stops answering ends at the timeout', async () => {
    const started = Date.now();
    const r = await send('email', { ...configs.email, to_addrs: ['hang@svc-test.example'] }, payload, { ...options, timeoutMs: 800 });
    expect(r).toEqual({ success: false, status_code: null, error: 'SMTP delivery timed out after 800 ms', response_body: null });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test('checked at validation, refused at send once DNS points somewhere blocked', async () => {
    expect(await check('email', configs.email, options)).toMatchObject({ ok: true });
    const before = mails().length;
    const rebound: [string, string][] = [['127.0.0.1', 'loopback'], ['100.64.1.1', 'cgnat'], ['64:ff9b::a00:1', 'nat64']];
    for (const [address, range] of rebound) {
      const r = await send('email', configs.email, payload, { ...options, resolver: async () => [address] });
      expect(r).toEqual({ success: false, status_code: null, error: `destination hostname resolves to an address that is not allowed (${range})`, response_body: null });
    }
    expect(mails().length).toBe(before);
  });
});
