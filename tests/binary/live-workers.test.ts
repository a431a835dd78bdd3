// Live updates across processes against the compiled binary: a tab held by one
// process hears of an upload another process stored. SQLite with `svc serve
// --workers 2` (Unix sockets between the processes); PostgreSQL with two
// separate `svc serve` replicas on one database (LISTEN/NOTIFY, issue 19's
// cross-replica signal), whose listeners reconnect after the server restarts.
// Which process handled what is read from X-SVC-Worker (uploads) and the
// stream's `ready` message (tabs), so both processes are known to take part.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { TEST_ACTOR } from '../helpers/agents.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';
import { LiveTab } from '../helpers/live-tab.ts';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.ts';
import { taskEvent, TestAgent } from '../helpers/test-agent.ts';

setLogLevel('silent');
const ADMIN = { email: 'live@example.com', password: STRONG_PASSWORD };
const running: RunningSvc[] = [];
const contexts: AppContext[] = [];
const tabs: LiveTab[] = [];
let pg: PrivatePostgres | null = null;

afterAll(async () => {
  for (const t of tabs) t.close();
  for (const c of contexts) await c.db.close();
  for (const r of running) await r.stop();
  pg?.destroy();
}, 30_000);

const envFor = (extra: Record<string, string> = {}) =>
  cleanEnv({ ...FAST_IDENTITY_ENV, SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email, SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password, SVC_LOG_LEVEL: 'warn', ...extra });

async function ready(url: string): Promise<void> {
  await eventually(async () => (await fetch(`${url}/api/v1/health/ready`)).status === 200, 20_000, 'readiness');
}

async function login(url: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
  expect(res.status).toBe(200);
  return res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
}

/** An agent minted from this process (straight into the shared database), in the default project. */
async function testAgent(env: Record<string, string>, url: string): Promise<{ agent: TestAgent; projectId: string }> {
  const { loaded } = loadConfigMintingSecrets({ env });
  const ctx = createContext(loaded, openConfiguredDatabase(loaded));
  contexts.push(ctx);
  const [project] = await ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`);
  const minted = await mintAgent(ctx, project!.id, `live-${crypto.randomUUID().slice(0, 6)}`, TEST_ACTOR);
  return { agent: new TestAgent({ baseUrl: url, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId: project!.id }), projectId: project!.id };
}

/** A tab subscribed to the default project's tasks. */
async function tab(url: string, cookie: string): Promise<LiveTab> {
  const t = await LiveTab.open(url, cookie);
  tabs.push(t);
  expect(await t.subscribe('default', ['task'])).toMatchObject({ type: 'subscribed' });
  return t;
}

/** Uploads one task event on a new connection (so the kernel may pick either process); returns who stored it. */
async function uploadOnce(agent: TestAgent, taskId: string): Promise<string> {
  agent.newSession();
  const r = await agent.upload([agent.eventBatch([taskEvent({ task_id: taskId })])], { connection: 'close' });
  expect(r.body).toMatchObject({ accepted: 1 });
  return r.headers.get('x-svc-worker') ?? '0';
}

describe('SQLite, svc serve --workers 2', () => {
  test('a tab held by one process receives the notice of an upload stored by the other', async () => {
    const env = envFor();
    const svc = await startSvc(env, ['--workers', '2', '--host', '127.0.0.1']);
    running.push(svc);
    await ready(svc.url);
    // Both processes answer (the first ready one may answer alone while the other still starts).
    const answered = new Set<string>();
    await eventually(
      async () => {
        const res = await fetch(`${svc.url}/api/v1/health/ready`, { headers: { connection: 'close' } });
        if (res.status === 200) answered.add(res.headers.get('x-svc-worker') ?? '');
        return answered.has('0') && answered.has('1');
      },
      20_000,
      'both processes ready',
    );
    const cookie = await login(svc.url);
    // One tab on each process (new connections until both have one).
    const byWorker = new Map<number, LiveTab>();
    for (let i = 0; i < 40 && byWorker.size < 2; i++) {
      const t = await tab(svc.url, cookie);
      const w = t.messages[0]!.worker as number;
      if (!byWorker.has(w)) byWorker.set(w, t);
      else t.close();
    }
    expect([...byWorker.keys()].sort()).toEqual([0, 1]);
    const { agent } = await testAgent(env, svc.url);
    // Uploads until each process has stored one; each must reach the tab on the other process.
    const storedBy = new Set<string>();
    for (let i = 0; i < 40 && storedBy.size < 2; i++) {
      const id = `xproc-${i}`;
      const sent = performance.now();
      const worker = await uploadOnce(agent, id);
      storedBy.add(worker);
      const other = byWorker.get(worker === '0' ? 1 : 0)!;
      const notice = await other.noticeOf('task', id, 3000);
      expect(notice.project).toBe('default');
      expect(notice.receivedAt - sent).toBeLessThan(1000);
      // And the tab on the storing process too.
      await byWorker.get(Number(worker))!.noticeOf('task', id, 3000);
    }
    expect([...storedBy].sort()).toEqual(['0', '1']);
  }, 60_000);
});

describe.skipIf(!process.env.SVC_TEST_PG_BIN)('PostgreSQL, two svc serve replicas on one database', () => {
  test('a tab on replica A receives the notice of an upload stored by replica B, also after PostgreSQL restarts', async () => {
    pg = startPostgres();
    // One home for both (the same secrets), two listeners on their own ports.
    const env = envFor({ SVC_DATABASE_URL: pg.url, SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '2' });
    const a = await startSvc(env, ['--host', '127.0.0.1']);
    running.push(a);
    await ready(a.url);
    const b = await startSvc(env, ['--host', '127.0.0.1']);
    running.push(b);
    await ready(b.url);
    const cookie = await login(a.url);
    const onA = await tab(a.url, cookie);
    const onB = await tab(b.url, cookie);
    const { agent } = await testAgent(env, b.url);
    const crossing = async (id: string) => {
      const sent = performance.now();
      await uploadOnce(agent, id);
      const n = await onA.noticeOf('task', id, 3000);
      await onB.noticeOf('task', id, 3000);
      return n.receivedAt - sent;
    };
    expect(await crossing('replica-1')).toBeLessThan(1000);

    // The database restarts: the tabs stay open, each replica's listener reconnects by itself.
    pg.stop();
    await eventually(async () => (await fetch(`${b.url}/api/v1/health/ready`)).status === 503, 15_000, 'unready');
    pg.start();
    await ready(a.url);
    await ready(b.url);
    await eventually(
      async () => {
        const id = `replica-after-${crypto.randomUUID().slice(0, 6)}`;
        try {
          agent.newSession();
          const r = await agent.upload([agent.eventBatch([taskEvent({ task_id: id })])]);
          if (r.status !== 200) return false;
          await onA.noticeOf('task', id, 1000);
          return true;
        } catch {
          return false;
        }
      },
      20_000,
      'notices across replicas again',
    );
    expect(a.stdout()).toMatch(/signal listener (lost|reconnected)/);
  }, 90_000);
});
