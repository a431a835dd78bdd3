// Bulk jobs and bulk delete over the task list's full-text search (`q`) and its
// priority filter, on both databases: a job's items are exactly the tasks the
// list finds for the same q (a word only in an exception or in the arguments,
// in the name, a task id's start; never another project's), oldest first;
// priority narrows; the bulk filter's own fields (task ids, failure group,
// state) narrow a search too; the matches are read past the search's pages
// (more than a page of 500) and the cap says truncated; a q the list refuses
// gets the list's 422 envelope and changes nothing; a delete over q deletes
// the matches and nothing else.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { EventRecord } from '../../src/ingest/events.ts';
import { storeEvents } from '../../src/ingest/service.ts';
import { isoMicros, nowMicros } from '../../src/lib/clock.ts';
import { countRows, insertProject } from '../helpers/agents.ts';
import { testDialect, testService, type TestResponse, type TestService } from '../helpers/app.ts';
import { FAST_IDENTITY_ENV, matrixCallers, type Browser } from '../helpers/identity.ts';
import { pollingAgent, projectIdOf } from '../helpers/operator.ts';

let svc: TestService;
let viewer: Browser;
let operator: Browser;
let padmin: Browser;
let projectId: string;
let agent: string;
let other: { id: string; slug: string };
let otherAgent: string;

const P = '/api/v1/projects/default';
const jobs = `${P}/bulk-jobs`;
const bulkDelete = `${P}/tasks/bulk-delete`;

/** Each task is first heard of a millisecond after the one before (oldest first is the order stored). */
let clock = nowMicros() - 3_600_000_000;

interface Seed {
  id: string;
  name?: string;
  kind?: string;
  exception?: string;
  args?: unknown[];
  priority?: string;
}

/** Stores tasks through the ingest path, each as its own upload (so each is first heard of at its own
 * time, in order): task.received with its arguments and priority, then its end. */
async function seed(tasks: Seed[], project = projectId, by = agent): Promise<void> {
  for (const t of tasks) {
    clock += 1000;
    const data: Record<string, unknown> = { task_name: t.name ?? 'app.tasks.work', queue: 'celery', worker: 'celery@w1' };
    if (t.priority) data.priority = t.priority;
    const event = (kind: string, at: number, more: Record<string, unknown>): EventRecord => ({
      id: crypto.randomUUID(),
      engine: 'celery',
      kind,
      taskId: t.id,
      occurredAt: isoMicros(at),
      occurredMicros: at,
      data: { ...data, ...more },
    });
    const records = [
      event('task.received', clock, { args: t.args ?? [], kwargs: {} }),
      event(t.kind ?? 'task.failed', clock + 1, t.exception ? { exception: t.exception } : {}),
    ];
    await svc.ctx.db.tx((tx) => storeEvents(tx, { projectId: project, agentId: by, frameId: null }, records, isoMicros(clock)));
  }
}

/** Every task id the task list finds for a query, page after page. */
async function listed(query: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const params: URLSearchParams = new URLSearchParams({ ...query, limit: '500', ...(cursor ? { cursor } : {}) });
    const res: TestResponse = await viewer.call('GET', `${P}/tasks?${params}`);
    expect(res.status).toBe(200);
    out.push(...res.body.items.map((t: { task_id: string }) => t.task_id));
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

/** Starts a retry job over `filter` and answers its task ids in item order, then aborts it (no agent answers here). */
async function jobOver(filter: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ body: any; taskIds: string[] }> {
  const created = await operator.call('POST', jobs, { body: { kind: 'retry', filter, agent_id: agent, ...extra } });
  if (created.status !== 201) throw new Error(`${JSON.stringify(filter)}: ${created.status} ${created.text}`);
  const taskIds: string[] = [];
  let cursor: string | null = null;
  do {
    const page: TestResponse = await viewer.call('GET', `${jobs}/${created.body.id}/items?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
    taskIds.push(...page.body.items.map((i: { task_id: string }) => i.task_id));
    cursor = page.body.next_cursor;
  } while (cursor);
  expect((await operator.call('POST', `${jobs}/${created.body.id}/abort`)).status).toBe(200);
  return { body: created.body, taskIds };
}

const sorted = (xs: string[]) => [...xs].sort();

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  const callers = await matrixCallers(svc, ['commands:write']);
  viewer = callers.browsers.viewer!;
  operator = callers.browsers.operator!;
  padmin = callers.browsers.project_admin!;
  projectId = await projectIdOf(svc);
  agent = await pollingAgent(svc, projectId, 'bulk-search');
  other = await insertProject(svc.ctx.db, 'bulk-search-other');
  otherAgent = await pollingAgent(svc, other.id, 'bulk-search-other');

  await seed([
    // Oldest first: found by a word of its exception only.
    { id: 'exc-1', name: 'app.billing.charge', exception: 'TimeoutError: gateway zanzibar did not answer', priority: 'high' },
    // By its arguments only.
    { id: 'args-1', name: 'app.mail.send', args: ['zanzibar-42', { to: 'ops@example.com' }], exception: 'SMTPError: 554', priority: 'low' },
    // By its name.
    { id: 'name-1', name: 'app.sync.zanzibar_inventory', kind: 'task.succeeded', priority: 'critical' },
    // Not a match: the word is nowhere in what is searched.
    { id: 'plain-1', name: 'app.billing.charge', exception: 'TimeoutError: gateway kalahari did not answer', priority: 'high' },
    { id: 'plain-2', name: 'app.mail.send', args: ['zanzibarish'], priority: 'low' },
    // In the same failure group as args-1.
    { id: 'plain-3', name: 'app.mail.send', args: ['ops'], exception: 'SMTPError: 554' },
    // By its id's start (a q without spaces is looked up as a task id too), nothing else.
    { id: 'zanzibar-7f3a', name: 'app.tasks.other', priority: 'normal' },
  ]);
  // The same word in another project: never a match here.
  await seed([{ id: 'exc-elsewhere', exception: 'TimeoutError: gateway zanzibar did not answer' }], other.id, otherAgent);
});
afterAll(() => svc.close());

describe(`bulk jobs over a search and a priority on ${testDialect()}`, () => {
  test("a retry job over q takes exactly the tasks the list's search finds, oldest first", async () => {
    const expected = ['exc-1', 'args-1', 'name-1', 'zanzibar-7f3a'];
    expect(sorted(await listed({ q: 'zanzibar' }))).toEqual(sorted(expected));
    const job = await jobOver({ q: 'zanzibar' });
    expect(job.body).toMatchObject({ filter: { q: 'zanzibar' }, truncated: false, progress: { total: 4 } });
    expect(job.taskIds).toEqual(expected);
    // A phrase, and a prefix: the same tasks as the list again.
    for (const q of ['"gateway zanzibar"', 'zanzib*', 'TimeoutError zanzibar']) {
      const list = await listed({ q });
      expect(list.length).toBeGreaterThan(0);
      expect([q, sorted((await jobOver({ q })).taskIds)]).toEqual([q, sorted(list)]);
    }
    // Tasks stored after the job was created never join it (its items were frozen).
    const frozen = await operator.call('POST', jobs, { body: { kind: 'retry', filter: { q: 'zanzibar' }, agent_id: agent } });
    await seed([{ id: 'late-1', exception: 'TimeoutError: gateway zanzibar did not answer' }]);
    expect((await viewer.call('GET', `${jobs}/${frozen.body.id}`)).body.progress.total).toBe(4);
    await operator.call('POST', `${jobs}/${frozen.body.id}/abort`);
    await padmin.call('POST', bulkDelete, { body: { filter: { task_ids: ['late-1'] } } });
  });

  test('priority narrows a search, and works alone, as in the task list', async () => {
    expect((await jobOver({ q: 'zanzibar', priority: 'high' })).taskIds).toEqual(['exc-1']);
    expect((await jobOver({ q: 'zanzibar', priority: 'critical,high' })).taskIds).toEqual(['exc-1', 'name-1']);
    expect(sorted((await jobOver({ q: 'zanzibar', priority: 'critical,high' })).taskIds)).toEqual(sorted(await listed({ q: 'zanzibar', priority: 'critical,high' })));
    expect((await jobOver({ priority: 'high' })).taskIds).toEqual(['exc-1', 'plain-1']);
    expect((await jobOver({ priority: 'low', name: 'mail' })).taskIds).toEqual(['args-1', 'plain-2']);
    const none = await operator.call('POST', jobs, { body: { kind: 'retry', filter: { q: 'zanzibar', priority: 'normal', state: 'success' }, agent_id: agent } });
    expect([none.status, none.body.error]).toEqual([409, 'no_match']);
    for (const priority of ['urgent', 'high,', 'HIGH', '']) {
      const res = await operator.call('POST', jobs, { body: { kind: 'retry', filter: { q: 'zanzibar', priority }, agent_id: agent } });
      expect([priority, res.status]).toEqual([priority, 422]);
    }
  });

  test("the bulk filter's own fields and the list's other fields narrow a search", async () => {
    expect((await jobOver({ q: 'zanzibar', state: 'failure' })).taskIds).toEqual(['exc-1', 'args-1', 'zanzibar-7f3a']);
    expect((await jobOver({ q: 'zanzibar', task_ids: ['args-1', 'plain-2', 'zanzibar-7f3a'] })).taskIds).toEqual(['args-1', 'zanzibar-7f3a']);
    expect((await jobOver({ q: 'zanzibar', task_name: 'app.mail.send' })).taskIds).toEqual(['args-1']);
    expect((await jobOver({ q: 'zanzibar', name: 'billing', engine: 'celery' })).taskIds).toEqual(['exc-1']);
    const groups = (await viewer.call('GET', `${P}/failure-groups?window=24h&task_name=app.mail.send`)).body.groups;
    const smtp = groups.find((g: { exception_type: string }) => g.exception_type === 'SMTPError');
    expect((await jobOver({ failure_group: smtp.group_key })).taskIds).toEqual(['args-1', 'plain-3']);
    expect((await jobOver({ q: 'zanzibar', failure_group: smtp.group_key })).taskIds).toEqual(['args-1']);
  });

  test('a q the task list refuses gets the same 422 envelope, on /filter/q, and starts nothing', async () => {
    const before = await countRows(svc.ctx.db, 'bulk_jobs');
    for (const q of ['"unbalanced', 'ab*', '!!! ???', 'x'.repeat(201), '']) {
      const list = await viewer.call('GET', `${P}/tasks?q=${encodeURIComponent(q)}`);
      const job = await operator.call('POST', jobs, { body: { kind: 'retry', filter: { q }, agent_id: agent } });
      const del = await padmin.call('POST', bulkDelete, { body: { filter: { q } } });
      for (const res of [job, del]) {
        expect([q, res.status, res.body.error]).toEqual([q, list.status, list.body.error]);
        expect(res.status).toBe(422);
        const field = res.body.details.fields.find((f: { path: string }) => f.path === '/filter/q');
        expect([q, field?.location]).toEqual([q, 'body']);
        const listField = list.body.details.fields.find((f: { path: string }) => f.path === '/q');
        // The search's own refusals say the same words; the schema's (length) are the schema's.
        if (q !== '' && q.length <= 200) expect(field.message).toBe(listField.message);
      }
    }
    expect(await countRows(svc.ctx.db, 'bulk_jobs')).toBe(before);
    expect(await countRows(svc.ctx.db, 'tasks', sql`project_id = ${projectId}`)).toBe(7);
  });

  test('more matches than a page of the search: all of them, oldest first; the cap takes the oldest and says truncated', async () => {
    // Another project's matches first: never taken, never in the way.
    await seed(Array.from({ length: 150 }, (_, i) => ({ id: `far-${i}`, exception: 'RuntimeError: quagga shard stalled' })), other.id, otherAgent);
    const many = Array.from({ length: 600 }, (_, i) => ({ id: `many-${String(i).padStart(4, '0')}`, exception: `RuntimeError: quagga shard ${i} stalled`, args: [i] }));
    await seed(many);
    const all = await jobOver({ q: 'quagga' });
    expect(all.body).toMatchObject({ truncated: false, progress: { total: 600 } });
    expect(all.taskIds).toEqual(many.map((t) => t.id));
    const capped = await jobOver({ q: 'quagga stalled' }, { max_tasks: 100 });
    expect(capped.body).toMatchObject({ truncated: true, progress: { total: 100 } });
    expect(capped.taskIds).toEqual(many.slice(0, 100).map((t) => t.id));
    const byId = await jobOver({ q: 'many-0599' });
    expect(byId.body).toMatchObject({ truncated: false, progress: { total: 1 } });
    expect(byId.taskIds).toEqual(['many-0599']);
    // An id match leads the list whatever its age; the cap still takes the oldest of all the matches.
    const oldest = await jobOver({ q: 'zanzibar' }, { max_tasks: 3 });
    expect(oldest.body).toMatchObject({ truncated: true, progress: { total: 3 } });
    expect(oldest.taskIds).toEqual(['exc-1', 'args-1', 'name-1']);
    const removed = await padmin.call('POST', bulkDelete, { body: { filter: { q: 'quagga' } } });
    expect(removed.body).toMatchObject({ deleted_count: 600, truncated: false });
  }, 60_000);
});

describe(`bulk delete over a search on ${testDialect()}`, () => {
  test('deletes the tasks the search matches (with their events) and leaves every other task', async () => {
    await seed([
      { id: 'del-exc', exception: 'KeyError: wombat missing' },
      { id: 'del-args', name: 'app.tasks.load', args: ['wombat'], priority: 'low' },
      { id: 'del-keep', exception: 'KeyError: koala missing' },
      { id: 'del-low', name: 'app.tasks.load', args: ['wombat', 'second'], priority: 'low' },
    ]);
    await seed([{ id: 'del-elsewhere', exception: 'KeyError: wombat missing' }], other.id, otherAgent);
    const kept = async () => sorted((await svc.ctx.db.all<{ task_id: string }>(sql`SELECT task_id FROM tasks WHERE task_id LIKE 'del-%'`)).map((r) => r.task_id));
    expect((await operator.call('POST', bulkDelete, { body: { filter: { q: 'wombat' } } })).status).toBe(403);
    // Priority narrows the delete too.
    const low = await padmin.call('POST', bulkDelete, { body: { filter: { q: 'wombat second', priority: 'low' } } });
    expect(low.body).toEqual({ deleted_count: 1, events_deleted: 2, truncated: false });
    expect(await kept()).toEqual(['del-args', 'del-elsewhere', 'del-exc', 'del-keep']);
    const matched = sorted(await listed({ q: 'wombat' }));
    expect(matched).toEqual(['del-args', 'del-exc']);
    const res = await padmin.call('POST', bulkDelete, { body: { filter: { q: 'wombat' } } });
    expect([res.status, res.body]).toEqual([200, { deleted_count: 2, events_deleted: 4, truncated: false }]);
    expect(await kept()).toEqual(['del-elsewhere', 'del-keep']);
    expect(await listed({ q: 'wombat' })).toEqual([]);
    expect(await countRows(svc.ctx.db, 'events', sql`task_ref IS NOT NULL AND task_ref NOT IN (SELECT id FROM tasks)`)).toBe(0);
    const [audit] = await svc.ctx.db.all<{ metadata: unknown }>(sql`SELECT metadata FROM audit_log WHERE action = 'tasks.bulk_delete' ORDER BY occurred_at DESC LIMIT 1`);
    const meta = typeof audit!.metadata === 'string' ? JSON.parse(audit!.metadata) : audit!.metadata;
    expect(meta).toMatchObject({ filter: { q: 'wombat' }, deleted_count: 2 });
    // The search matches nothing now: a delete over it deletes nothing.
    expect((await padmin.call('POST', bulkDelete, { body: { filter: { q: 'wombat' } } })).body).toEqual({ deleted_count: 0, events_deleted: 0, truncated: false });
  });
});
