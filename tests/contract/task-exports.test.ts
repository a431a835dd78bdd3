// Task exports on both databases (SVC_TEST_DIALECT), over app.handle() and over
// real HTTP: a query GET /tasks refuses, or a read failing before the first
// rows go out, answers the list's error envelope as JSON, never a download; a
// read failing later ends the download unfinished; one user (API keys
// included) streams at most SVC_TASK_EXPORTS_PER_USER exports at once, and a
// place is freed when a stream ends, fails or its client goes away. Page reads
// are held back or failed by wrapping the database's `all`.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { liveService, TEST_ACTOR, type LiveService } from '../helpers/agents.ts';
import { testDialect } from '../helpers/app.ts';
import { seedTaskEvents } from '../helpers/bulk-events.ts';
import { FAST_IDENTITY_ENV, mfaAdmin, userBrowser, type Browser } from '../helpers/identity.ts';

const P = '/api/v1/projects/default';
/** More than two of the export's 500-row pages. */
const TASKS = 1200;

let svc: LiveService;
/** Exports with a session and with an API key (minting one takes fresh MFA, which the administrator has). */
let user: Browser;
let userKey: string;
/** Another user, a viewer of the project. */
let viewer: Browser & { id: string };

/** What a page read of the export (and of the list) does: go on, wait for `release`, or fail. */
type Step = 'read' | { wait: Promise<void> } | { fail: Error & { code: string } };
/** Steps for the next page reads, in order; a read with none left goes on. */
let steps: Step[] = [];
let pageReads = 0;

const cookieOf = (b: Browser) => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
/** An export through app.handle(), its body not read: the stream stays open until read or cancelled. */
const open = (path: string, headers: Record<string, string>) => svc.app.handle(new Request(`http://localhost${P}${path}`, { headers: { host: 'localhost', ...headers } }));
const asUser = { cookie: '' };
const failure = (code: string) => Object.assign(new Error(`injected failure ${code}`), { code });
/** A page read that waits until the returned function is called. */
function held(): { step: Step; release: () => void } {
  let release = () => {};
  const wait = new Promise<void>((r) => (release = r));
  return { step: { wait }, release };
}

beforeAll(async () => {
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_TASK_EXPORTS_PER_USER: '2' } });
  user = await mfaAdmin(svc);
  viewer = await userBrowser(user, 'viewer@example.com');
  expect((await user.call('POST', `${P}/memberships`, { body: { user_id: viewer.id, role: 'viewer' } })).status).toBe(201);
  const key = await user.call('POST', '/api/v1/api-keys', { body: { name: 'exports', scopes: ['tasks:read'] } });
  expect(key.status).toBe(201);
  userKey = key.body.token;
  asUser.cookie = cookieOf(user);
  const projectId = (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`))[0]!.id;
  const agentId = (await mintAgent(svc.ctx, projectId, 'export-agent', TEST_ACTOR)).agent.id;
  await seedTaskEvents(svc.ctx.db, { projectId, agentId, tasks: TASKS });
  // The task list's page reads (they alone select the keyset's tie-breaker) go through `steps`.
  const all = svc.ctx.db.all.bind(svc.ctx.db);
  svc.ctx.db.all = (async (query: { queryChunks?: { value?: unknown }[] }) => {
    if (JSON.stringify(query.queryChunks?.map((c) => c.value ?? '')).includes('tie_')) {
      pageReads++;
      const step = steps.shift() ?? 'read';
      if (step !== 'read' && 'wait' in step) await step.wait;
      if (step !== 'read' && 'fail' in step) throw step.fail;
    }
    return all(query as never);
  }) as typeof svc.ctx.db.all;
});
afterEach(() => {
  steps = [];
});
afterAll(async () => {
  await svc?.close();
});

describe(`task exports on ${testDialect()}`, () => {
  test('a query the list refuses answers its error envelope as JSON, not a download', async () => {
    for (const query of ['q=%22', 'q=***', 'q=ab*', `q=${Array.from({ length: 17 }, (_, i) => `w${i}`).join('+')}`, 'sort=bogus', 'priority=urgent']) {
      const list = await user.call('GET', `${P}/tasks?${query}`);
      for (const format of ['csv', 'ndjson']) {
        const res = await open(`/tasks/export.${format}?${query}`, asUser);
        const body = await res.json();
        expect([query, res.status, body.error]).toEqual([query, list.status, list.body.error]);
        expect(res.status).toBe(422);
        expect(res.headers.get('content-type')).toStartWith('application/json');
        expect(res.headers.get('content-disposition')).toBeNull();
      }
    }
  });

  test('a read failing before the first rows are sent answers what the list answers (503 or 500), and frees its place', async () => {
    for (const [code, status, error] of [
      ['ECONNREFUSED', 503, 'database_unavailable'],
      ['XX000', 500, 'internal_error'],
    ] as const) {
      steps = [{ fail: failure(code) }];
      const list = await user.call('GET', `${P}/tasks`);
      expect([list.status, list.body.error]).toEqual([status, error]);
      // More failures than the cap has places: each failed export gave its place back.
      for (let i = 0; i < 3; i++) {
        steps = [{ fail: failure(code) }];
        const res = await open('/tasks/export.csv', asUser);
        expect(res.status).toBe(status);
        expect(res.headers.get('content-type')).toStartWith('application/json');
        expect(res.headers.get('content-disposition')).toBeNull();
        expect((await res.json()).error).toBe(error);
      }
    }
    const ok = await open('/tasks/export.csv?fields=task_id', asUser);
    expect(ok.status).toBe(200);
    expect((await ok.text()).trimEnd().split('\r\n')).toHaveLength(1 + TASKS);
  });

  test('a read failing after the first rows ends the download unfinished, and frees its place', async () => {
    for (let i = 0; i < 3; i++) {
      steps = ['read', { fail: failure('XX000') }];
      const res = await fetch(`${svc.baseUrl}${P}/tasks/export.ndjson?fields=task_id`, { headers: { cookie: cookieOf(user) } });
      expect(res.status).toBe(200);
      // The connection is cut without the response's end: the client sees a failed transfer, not a short file.
      const reader = res.body!.getReader();
      const outcome = await (async () => {
        while (!(await reader.read()).done);
        return 'ended';
      })().catch((e) => String(e));
      expect(outcome).toContain('ECONNRESET');
    }
    const ok = await fetch(`${svc.baseUrl}${P}/tasks/export.ndjson?fields=task_id&limit=3`, { headers: { cookie: cookieOf(user) } });
    expect(ok.status).toBe(200);
    expect((await ok.text()).trimEnd().split('\n')).toHaveLength(3);
  });

  test('past SVC_TASK_EXPORTS_PER_USER open exports a user (session or API key) gets 429 with Retry-After; a place frees when a stream ends or is cancelled', async () => {
    const a = await open('/tasks/export.csv', asUser);
    const b = await open('/tasks/export.ndjson', asUser);
    expect([a.status, b.status]).toEqual([200, 200]);
    for (const headers of [asUser, { authorization: `Bearer ${userKey}` }]) {
      const refused = await open('/tasks/export.csv', headers);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toStartWith('application/json');
      expect(refused.headers.get('retry-after')).toBe('10');
      expect(await refused.json()).toMatchObject({ error: 'too_many_exports', details: { limit: 2, retry_after_seconds: 10 } });
    }
    // Another user has places of their own.
    const other = await open('/tasks/export.csv?limit=1', { cookie: cookieOf(viewer) });
    expect(other.status).toBe(200);
    await other.text();
    // Read to its end: its place is free again.
    expect((await a.text()).trimEnd().split('\r\n')).toHaveLength(1 + TASKS);
    const c = await open('/tasks/export.csv', asUser);
    expect(c.status).toBe(200);
    expect((await open('/tasks/export.csv', asUser)).status).toBe(429);
    // Cancelled by the client: free too.
    await b.body!.cancel();
    const d = await open('/tasks/export.ndjson', { authorization: `Bearer ${userKey}` });
    expect(d.status).toBe(200);
    await c.body!.cancel();
    await d.body!.cancel();
  });

  test('over HTTP, two slow downloads hold both places until one client goes away', async () => {
    // Each download's second page waits: the server holds the stream open, as for a slow client or database.
    const first = held();
    const second = held();
    steps = ['read', first.step, 'read', second.step];
    const aborts = [new AbortController(), new AbortController()];
    const downloads = [];
    for (const ac of aborts) {
      const res = await fetch(`${svc.baseUrl}${P}/tasks/export.ndjson`, { headers: { cookie: cookieOf(user) }, signal: ac.signal });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      downloads.push(reader);
    }
    const refused = await fetch(`${svc.baseUrl}${P}/tasks/export.ndjson`, { headers: { authorization: `Bearer ${userKey}` } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10');
    expect((await refused.json()).error).toBe('too_many_exports');
    // The first client goes away while its stream waits for a page: the server cancels the stream.
    aborts[0]!.abort();
    const reads = pageReads;
    let again: Response | null = null;
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      again = await fetch(`${svc.baseUrl}${P}/tasks/export.ndjson?limit=2`, { headers: { cookie: cookieOf(user) } });
      if (again.status === 200) break;
      await again.text();
      await Bun.sleep(20);
    }
    expect(again!.status).toBe(200);
    expect(pageReads).toBeGreaterThan(reads);
    expect((await again!.text()).trimEnd().split('\n')).toHaveLength(2);
    first.release();
    second.release();
    aborts[1]!.abort();
    await downloads[1]!.cancel().catch(() => {});
  });
});
