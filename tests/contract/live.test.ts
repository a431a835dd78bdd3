// The live update stream (GET /api/v1/live) on both databases: real WebSockets
// over loopback to a listening test service, events uploaded by a test agent,
// commands issued and answered, access taken away, bursts coalesced. And the
// signal bus's transports: two buses on one PostgreSQL (reconnecting after its
// connection is killed), two on Unix sockets.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { timeOutCommands } from '../../src/commands/service.ts';
import { liveOf } from '../../src/live/index.ts';
import { offlineSweep } from '../../src/transport/jobs.ts';
import { MAX_NOTICE_IDS } from '../../src/live/protocol.ts';
import { SignalBus } from '../../src/signals/bus.ts';
import { PostgresSignals } from '../../src/signals/postgres.ts';
import { UnixSignals } from '../../src/signals/unix.ts';
import { sql } from 'drizzle-orm';
import { issueTestCommand, liveService, mintTestAgent, until, type LiveService } from '../helpers/agents.ts';
import { testDialect } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { cookieOf, handshakeStatus, LiveTab } from '../helpers/live-tab.ts';
import { freshDatabase } from '../helpers/postgres.ts';
import { taskEvent, type TestAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let admin: Browser;
let member: Browser & { id: string };
let outsider: Browser & { id: string };
let agent: TestAgent;
let projectId: string;
const tabs: LiveTab[] = [];

const open = async (b: Browser, origin?: string | null) => {
  const tab = await LiveTab.open(svc.baseUrl, cookieOf(b.cookies), origin === undefined ? svc.baseUrl : origin);
  tabs.push(tab);
  return tab;
};

async function upload(taskIds: string[]): Promise<void> {
  const r = await agent.upload([agent.eventBatch(taskIds.map((task_id) => taskEvent({ task_id })))]);
  expect(r.body).toMatchObject({ accepted: 1, rejected: 0 });
}

beforeAll(async () => {
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_LIVE_MAX_CONNECTIONS_PER_USER: '3' } });
  admin = await mfaAdmin(svc);
  member = await userBrowser(admin, 'member@example.com');
  outsider = await userBrowser(admin, 'outsider@example.com');
  projectId = (await admin.call('GET', '/api/v1/projects/default')).body.id;
  expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: member.id, role: 'operator' } })).status).toBe(201);
  agent = await mintTestAgent(svc, projectId, svc.baseUrl);
  expect((await agent.probe()).status).toBe(200);
});
afterEach(async () => {
  // Each test's tabs close (the per-user cap is 3 here).
  for (const t of tabs.splice(0)) t.close();
  await until(() => liveOf(svc.ctx).hub.size === 0, 3000, 'tabs closed');
});
afterAll(() => svc?.close());

describe(`live updates on ${testDialect()}`, () => {
  test('a subscribed member gets a task notice for an uploaded event; an outsider is refused and gets nothing', async () => {
    const tab = await open(member);
    expect(tab.messages[0]).toMatchObject({ type: 'ready', worker: 0, idle_timeout_seconds: 90 });
    expect(await tab.subscribe('default', ['task'])).toEqual({ type: 'subscribed', project: 'default', project_id: projectId, types: ['task'], receivedAt: expect.any(Number) });
    const stranger = await open(outsider);
    expect(await stranger.subscribe('default')).toMatchObject({ type: 'error', code: 'not_found', project: 'default' });
    // An unknown project answers the same (existence is not confirmed).
    expect(await stranger.subscribe('no-such-project')).toMatchObject({ type: 'error', code: 'not_found' });
    expect(await stranger.subscribe('*')).toMatchObject({ type: 'subscribed', project: '*', project_id: null });

    const sent = performance.now();
    await upload(['live-1']);
    const notice = await tab.noticeOf('task', 'live-1', 2000);
    expect(notice).toMatchObject({ type: 'task', project: 'default', project_id: projectId, ids: ['live-1'] });
    expect(notice.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    expect(notice.receivedAt - sent).toBeLessThan(1000);
    await Bun.sleep(300);
    expect(stranger.notices()).toEqual([]);
    // Only the subscribed types arrive (no agent or activity notices on this tab).
    expect(new Set(tab.notices().map((n) => n.type))).toEqual(new Set(['task']));
  });

  test('refusals before the upgrade: no session 401, another site 403, an API key 403; same origin and no Origin accepted', async () => {
    const cookie = cookieOf(member.cookies);
    const host = new URL(svc.baseUrl).host;
    expect(await handshakeStatus(svc.baseUrl, {})).toBe(401);
    expect(await handshakeStatus(svc.baseUrl, { cookie: 'svc_session=not-a-session' })).toBe(401);
    expect(await handshakeStatus(svc.baseUrl, { cookie, origin: 'http://evil.example' })).toBe(403);
    expect(await handshakeStatus(svc.baseUrl, { cookie, origin: `http://localhost:1` })).toBe(403);
    expect(await handshakeStatus(svc.baseUrl, { cookie, origin: 'null' })).toBe(403);
    expect(await handshakeStatus(svc.baseUrl, { cookie, origin: `https://${host}` })).toBe(403); // scheme differs
    const key = await admin.call('POST', '/api/v1/api-keys', { body: { name: 'live', scopes: ['tasks:read'] } });
    expect(await handshakeStatus(svc.baseUrl, { authorization: `Bearer ${key.body.token}` })).toBe(403);
    expect(await handshakeStatus(svc.baseUrl, { cookie, origin: svc.baseUrl })).toBe(101);
    expect(await handshakeStatus(svc.baseUrl, { cookie })).toBe(101);
    // A plain GET (no upgrade) says what the endpoint speaks.
    const plain = await member.call('GET', '/api/v1/live');
    expect(plain.status).toBe(426);
    expect(plain.body.error).toBe('upgrade_required');
    await until(() => liveOf(svc.ctx).hub.countOf(member.id) <= 1, 3000, 'handshake sockets gone');
  });

  test('the per-user cap refuses the connection past SVC_LIVE_MAX_CONNECTIONS_PER_USER with 429; a closed tab frees its place', async () => {
    const user = await userBrowser(admin, 'many-tabs@example.com');
    const mine = [await open(user), await open(user), await open(user)];
    expect(await handshakeStatus(svc.baseUrl, { cookie: cookieOf(user.cookies) })).toBe(429);
    const refused = await user.call('GET', '/api/v1/live', { headers: { upgrade: 'websocket' } });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'too_many_connections', details: { limit: 3 } });
    mine[0]!.close();
    await mine[0]!.closed;
    await until(() => liveOf(svc.ctx).hub.countOf(user.id) === 2, 3000, 'the place freed');
    mine.push(await open(user));
    for (const t of mine) t.close();
  });

  test('commands: issuing, the agent taking and answering one each reach the command subscribers', async () => {
    const tab = await open(member);
    await tab.subscribe('default', ['command']);
    await upload(['live-cmd']);
    const { id } = await issueTestCommand(svc.ctx, projectId, agent.agentId, { targetId: 'celery:live-cmd', payload: { engine: 'celery', task_id: 'live-cmd' } });
    await tab.noticeOf('command', id);
    const from = tab.messages.length;
    const polled = await agent.poll({ wait: 0 });
    expect(agent.verifyAll(polled.body.frames).map((f) => f.id)).toEqual([id]);
    await tab.next((m) => m.type === 'command' && m.ids.includes(id), 2000, from);
    const from2 = tab.messages.length;
    expect((await agent.upload([agent.result(id, 'success', { ok: true })])).status).toBe(200);
    await tab.next((m) => m.type === 'command' && m.ids.includes(id), 2000, from2);
  });

  test('activity and agents: audit rows reach `*` and project subscribers; service-wide rows only administrators', async () => {
    const adminTab = await open(admin);
    await adminTab.subscribe('*', ['activity', 'agent']);
    const memberTab = await open(member);
    await memberTab.subscribe('*', ['activity']);
    const minted = await admin.call('POST', '/api/v1/users', { body: { email: 'someone@example.com', password: 'Correct-Horse-Battery-9' } });
    expect(minted.status).toBe(201);
    const row = await adminTab.next((m) => m.type === 'activity' && m.project === null);
    expect(row.project_id).toBeNull();
    const renamed = await admin.call('PATCH', '/api/v1/projects/default', { body: { description: 'live' } });
    expect(renamed.status).toBe(200);
    await memberTab.next((m) => m.type === 'activity' && m.project === 'default');
    await Bun.sleep(200);
    expect(memberTab.notices().filter((n) => n.project === null)).toEqual([]);
    // A new agent: its audit row is an agent notice as well.
    const second = await mintTestAgent(svc, projectId, svc.baseUrl, 'live-agent-2');
    await adminTab.noticeOf('agent', second.agentId);
  });

  test('an agent the offline sweep marks offline, and back online at its next heartbeat: agent notices', async () => {
    const tab = await open(admin);
    await tab.subscribe('default', ['agent']);
    const other = await mintTestAgent(svc, projectId, svc.baseUrl, 'live-sweep');
    expect((await other.probe()).status).toBe(200);
    // Liveness comes with a signed frame (a heartbeat).
    expect((await other.upload([other.heartbeat()])).status).toBe(200);
    const state = async () => (await svc.ctx.db.all<{ state: string }>(sql`SELECT state FROM agents WHERE id = ${other.agentId}`))[0]!.state;
    await until(async () => (await state()) === 'online', 3000, 'online');
    await tab.noticeOf('agent', other.agentId);
    // The mint's and the first heartbeat's notices may share a coalescing window: let it pass.
    await Bun.sleep(300);
    // Silent past the offline timeout: the sweep (its leader's job) marks it offline.
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET last_seen_at = '2000-01-01T00:00:00.000000+00:00' WHERE id = ${other.agentId}`));
    let from = tab.messages.length;
    expect(await offlineSweep(svc.ctx)).toContain(other.agentId);
    await tab.next((m) => m.type === 'agent' && m.ids.includes(other.agentId), 2000, from);
    expect(await state()).toBe('offline');
    // Liveness is written at most once a second per agent (a real agent is 30 s silent before the sweep).
    await Bun.sleep(1100);
    from = tab.messages.length;
    expect((await other.upload([other.heartbeat()])).status).toBe(200);
    await tab.next((m) => m.type === 'agent' && m.ids.includes(other.agentId), 2000, from);
    expect(await state()).toBe('online');
  });

  test("a command the timeout sweep ends reaches the project's command subscribers (the sweep knows ids only)", async () => {
    const tab = await open(member);
    await tab.subscribe('default', ['command']);
    const { id } = await issueTestCommand(svc.ctx, projectId, agent.agentId, { targetId: 'celery:live-timeout', payload: { engine: 'celery', task_id: 'live-timeout' } });
    await tab.noticeOf('command', id);
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE commands SET timeout_at = '2000-01-01T00:00:00.000000+00:00' WHERE id = ${id}`));
    const from = tab.messages.length;
    // What the command-timeouts job does each tick (src/transport/jobs.ts).
    const ended = await timeOutCommands(svc.ctx.db);
    expect(ended).toContain(id);
    svc.ctx.reactions.commandsChanged?.(null, ended);
    expect(await tab.next((m) => m.type === 'command' && m.ids.includes(id), 2000, from)).toMatchObject({ project: 'default', project_id: projectId });
  });

  test('archiving a project drops its subscriptions (access_lost)', async () => {
    expect((await admin.call('POST', '/api/v1/projects', { body: { slug: 'live-archive', name: 'Live archive' } })).status).toBe(201);
    const tab = await open(admin);
    expect(await tab.subscribe('live-archive')).toMatchObject({ type: 'subscribed' });
    expect((await admin.call('DELETE', '/api/v1/projects/live-archive')).status).toBeLessThan(300);
    expect(await tab.next((m) => m.type === 'unsubscribed', 3000)).toMatchObject({ project: 'live-archive', reason: 'access_lost' });
  });

  test('losing the membership drops the subscription (access_lost); deactivating the user closes the socket (4401)', async () => {
    const user = await userBrowser(admin, 'leaver@example.com');
    const granted = await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: user.id, role: 'viewer' } });
    expect(granted.status).toBe(201);
    const tab = await open(user);
    expect(await tab.subscribe('default')).toMatchObject({ type: 'subscribed' });
    expect((await admin.call('DELETE', `/api/v1/projects/default/memberships/${granted.body.id}`)).status).toBe(200);
    expect(await tab.next((m) => m.type === 'unsubscribed', 3000)).toMatchObject({ project: 'default', reason: 'access_lost' });
    await upload(['live-after-leave']);
    await Bun.sleep(300);
    expect(tab.notices('task')).toEqual([]);

    const second = await open(member);
    expect((await admin.call('PATCH', `/api/v1/users/${member.id}`, { body: { is_active: false } })).status).toBe(200);
    expect((await Promise.race([second.closed, Bun.sleep(3000).then(() => null)]))?.code).toBe(4401);
    expect(await handshakeStatus(svc.baseUrl, { cookie: cookieOf(member.cookies) })).toBe(401);
  });

  test('logging out closes that session\'s streams', async () => {
    const user = await userBrowser(admin, 'logout@example.com');
    const tab = await open(user);
    expect((await user.call('POST', '/api/v1/auth/logout')).status).toBe(204);
    expect((await Promise.race([tab.closed, Bun.sleep(3000).then(() => null)]))?.code).toBe(4401);
  });

  test('ping answers pong; a bad message closes 4400; a silent connection is closed 4408 by the idle sweep', async () => {
    const user = await userBrowser(admin, 'pinger@example.com');
    const tab = await open(user);
    tab.send({ type: 'ping' });
    await tab.next((m) => m.type === 'pong');
    const bad = await open(user);
    bad.ws.send('not json');
    expect((await bad.closed).code).toBe(4400);
    const hub = liveOf(svc.ctx).hub as any;
    for (const conn of hub.connections) if (conn.userId === user.id) conn.lastInbound -= 91_000;
    hub.sweepIdle();
    expect((await tab.closed).code).toBe(4408);
  });

  test('a burst is coalesced: at most one notice per project and type per 100 ms window, carrying every id', async () => {
    const user = await userBrowser(admin, 'burst@example.com');
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: user.id, role: 'viewer' } })).status).toBe(201);
    const tab = await open(user);
    await tab.subscribe('default', ['task']);
    const from = tab.messages.length;
    const ids: string[] = [];
    const started = performance.now();
    // 40 uploads of 25 events each, one after the other as fast as they go (one session's frames are
    // admitted in order).
    for (let n = 0; n < 40; n++) {
      const batch = Array.from({ length: 25 }, (_, k) => `burst-${n}-${k}`);
      ids.push(...batch);
      await upload(batch);
    }
    const took = performance.now() - started;
    await Bun.sleep(400);
    const notices = tab.messages.slice(from).filter((m) => m.type === 'task');
    const seen = new Set(notices.flatMap((n) => n.ids as string[]));
    // Every id arrives unless a notice overflowed (then `more` says refetch everything).
    if (!notices.some((n) => n.more)) for (const id of ids) expect(seen.has(id)).toBe(true);
    for (const n of notices) expect(n.ids.length).toBeLessThanOrEqual(MAX_NOTICE_IDS);
    // Leading edge + one per window: the burst time over 100 ms, plus the two edges.
    expect(notices.length).toBeLessThanOrEqual(Math.ceil(took / 100) + 2);
    expect(notices.length).toBeLessThan(40);
    // Spaced by the window when they were sent (their `at`; this process is the server too, so arrival
    // times bunch up behind the uploads).
    const sentAt = notices.map((n) => Date.parse(n.at));
    for (let i = 1; i < sentAt.length; i++) expect(sentAt[i]! - sentAt[i - 1]!).toBeGreaterThanOrEqual(95);
  });
});

describe('signal bus transports', () => {
  test.skipIf(!process.env.SVC_TEST_PG_URL)('two buses on one PostgreSQL hear each other and reconnect after the listener is killed', async () => {
    const pg = await freshDatabase();
    const make = () => {
      const bus = new SignalBus();
      const got: unknown[] = [];
      bus.subscribe('t', (d) => got.push(d));
      const transport = new PostgresSignals({ url: pg.url, connectTimeoutSeconds: 5, onMessage: (text) => bus.receive(text) });
      bus.attach(transport);
      return { bus, got, transport };
    };
    const a = make();
    const b = make();
    try {
      await Promise.all([a.transport.ready(), b.transport.ready()]);
      a.bus.publish('t', { n: 1 });
      await until(() => b.got.length === 1, 3000, 'b hears a');
      expect(a.got).toEqual([{ n: 1 }]); // its own, once (locally, not again from NOTIFY)
      const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
      // The listeners' connections (in this test's database only: the server is shared).
      const killed = await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND (query ILIKE 'LISTEN%' OR query ILIKE '%pg_notify%' OR query = 'SELECT 1')`;
      await admin.end();
      expect(killed.length).toBe(2);
      // Both notice (possibly already reconnected by the time this looks: then the next publish proves it).
      await until(() => !a.transport.connected() || !b.transport.connected(), 1000, 'a listener noticed').catch(() => {});
      await until(() => a.transport.connected() && b.transport.connected(), 10_000, 'both listening again');
      await until(
        async () => {
          a.bus.publish('t', { n: 2 });
          await Bun.sleep(50);
          return b.got.some((d) => (d as { n: number }).n === 2);
        },
        5000,
        'b hears a again',
      );
      // Too large for a NOTIFY: dropped, counted, never sent.
      a.bus.publish('t', { big: 'x'.repeat(9000) });
      expect(a.bus.dropped).toBe(1);
    } finally {
      await a.bus.close();
      await b.bus.close();
      await pg.drop();
    }
  });

  test('Unix sockets: peers in one run directory hear each other; a new peer is found; a stale socket file is removed', async () => {
    const runDir = mkdtempSync(join(tmpdir(), 'svc-signals-'));
    const make = (tag: string) => {
      const bus = new SignalBus();
      const got: unknown[] = [];
      bus.subscribe('t', (d) => got.push(d));
      const transport = new UnixSignals({ runDir, tag, onMessage: (text) => bus.receive(text) });
      transport.start();
      bus.attach(transport);
      return { bus, got, transport };
    };
    // A socket file of a process that no longer exists.
    await Bun.write(join(runDir, 'signals-999999.sock'), '');
    const a = make('a');
    const b = make('b');
    // Sends until heard (a peer that just started is found by the watch or the next look, not instantly).
    const heard = (from: { bus: SignalBus }, to: { got: unknown[] }, value: number, what: string) =>
      until(
        async () => {
          from.bus.publish('t', value);
          await Bun.sleep(20);
          return to.got.includes(value);
        },
        3000,
        what,
      );
    try {
      await heard(a, b, 1, 'b hears a');
      await heard(b, a, 2, 'a hears b');
      const c = make('c');
      await heard(a, c, 3, 'c found by a');
      const before = b.got.length;
      for (let i = 0; i < 2000; i++) a.bus.publish('t', { i, pad: 'y'.repeat(200) });
      await until(() => b.got.length >= before + 2000, 5000, 'a burst in order');
      expect((b.got.slice(before) as { i: number }[]).map((d) => d.i)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
      expect(await Bun.file(join(runDir, 'signals-999999.sock')).exists()).toBe(false);
      await c.bus.close();
    } finally {
      await a.bus.close();
      await b.bus.close();
    }
  });
});
