// The Ctrl-K palette's look-up (GET /api/v1/lookup) on both databases: tasks by their id, exactly and by
// its start, agents and workers by a part of their name, in every project the caller sees (the seventh
// too: the palette used to read five) and in no other.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { pollingAgent, reportInventory, storeTasks } from '../helpers/operator.ts';

let svc: TestService;
let admin: Browser;
let member: Browser;
let outsider: Browser;
const ids: Record<string, string> = {};
let order: string;
let refund: string;

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  admin = await mfaAdmin(svc);
  for (let i = 1; i <= 7; i++) ids[`p${i}`] = (await admin.call('POST', '/api/v1/projects', { body: { slug: `p${i}`, name: `Project ${i}` } })).body.id;
  member = await userBrowser(admin, 'member@example.com');
  outsider = await userBrowser(admin, 'outsider@example.com');
  for (const [who, slug] of [[member, 'p7'], [member, 'p1'], [outsider, 'p1']] as const) {
    expect((await admin.call('POST', `/api/v1/projects/${slug}/memberships`, { body: { user_id: (who as Browser & { id: string }).id, role: 'viewer' } })).status).toBe(201);
  }
  const agent = await pollingAgent(svc, ids.p7!, 'billing-agent-7');
  order = (await storeTasks(svc, ids.p7!, agent, 1, { prefix: 'order4711' }))[0]!;
  refund = (await storeTasks(svc, ids.p7!, agent, 1, { prefix: 'order4712' }))[0]!;
  await reportInventory(svc, ids.p7!, { 'celery@billing-7': 4 }, {});
}, 60_000);
afterAll(() => svc.close());

const find = async (who: Browser, q: string) => {
  const r = await who.call('GET', `/api/v1/lookup?${new URLSearchParams({ q })}`);
  expect(r.status).toBe(200);
  return r.body as { items: { kind: string; project_slug: string; name: string | null; task_id: string | null; id: string; engine: string | null }[]; projects: number };
};

describe(`the palette's look-up on ${testDialect()}`, () => {
  test('a task of the seventh project by its whole id, then by its start; the exact one first', async () => {
    const exact = await find(admin, order);
    expect(exact.projects).toBe(8);
    expect(exact.items).toEqual([expect.objectContaining({ kind: 'task', project_slug: 'p7', project_name: 'Project 7', task_id: order, engine: 'celery', name: 'app.tasks.fail' })]);
    const started = await find(admin, 'order471');
    expect(started.items.filter((i) => i.kind === 'task').map((i) => i.task_id).sort()).toEqual([order, refund].sort());
    // Three characters are no prefix: only an exact id would do.
    expect((await find(admin, 'ord')).items.filter((i) => i.kind === 'task')).toEqual([]);
  });

  test('agents and workers by a part of their name, with the ids their pages take', async () => {
    const r = await find(admin, 'BILLING');
    const [agentRow] = await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM agents WHERE name = 'billing-agent-7'`);
    expect(r.items.map((i) => [i.kind, i.name, i.project_slug])).toEqual([
      ['agent', 'billing-agent-7', 'p7'],
      ['worker', 'celery@billing-7', 'p7'],
    ]);
    expect(r.items[0]!.id).toBe(agentRow!.id);
    expect(r.items[1]).toMatchObject({ engine: 'celery' });
    // LIKE's wildcards are plain characters here.
    expect((await find(admin, '%_')).items).toEqual([]);
  });

  test('only projects the caller belongs to', async () => {
    const mine = await find(member, order);
    expect([mine.projects, mine.items.length]).toEqual([2, 1]);
    const theirs = await find(outsider, order);
    expect([theirs.projects, theirs.items]).toEqual([1, []]);
    expect((await find(outsider, 'billing')).items).toEqual([]);
  });

  test('bad input is refused in the error envelope; no session, no answer', async () => {
    for (const q of ['', 'x', 'y'.repeat(201)]) {
      const r = await admin.call('GET', `/api/v1/lookup?${new URLSearchParams({ q })}`);
      expect([r.status, r.body.error]).toEqual([422, 'validation_failed']);
    }
    expect((await admin.call('GET', '/api/v1/lookup')).status).toBe(422);
    expect((await new Browser(admin.svc).call('GET', '/api/v1/lookup?q=order')).status).toBe(401);
  });
});
