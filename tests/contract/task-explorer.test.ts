// The task explorer on both databases (SVC_TEST_DIALECT): full-text search
// with highlights, priority and engine filters, keyset paging in every sort
// (stable while tasks arrive), CSV and NDJSON exports (quoting, the formula
// guard), the task tree with its limits, a task's raw events, a worker's
// detail, 422s for bad input, and migration 0010 on a database that already
// holds tasks. Events go in through the function the agent transports call.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { readEvents, storeEventBatches } from '../../src/ingest/service.ts';
import { nowIso, nowMicros } from '../../src/lib/clock.ts';
import { listTasks } from '../../src/tasks/explorer.ts';
import { forgetSortChoices } from '../../src/tasks/explorer-store.ts';
import { projectAdapterHealth } from '../../src/tasks/service.ts';
import { toPlainObject } from '../../src/transport/json-convert.ts';
import { parseJson, type JsonObject } from '../../src/transport/json.ts';
import { insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';

let svc: TestService;
let viewer: Browser;
let projectId: string;
let agentId: string;
let other: { id: string; slug: string };
let otherAgent: string;

const P = '/api/v1/projects/default';
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace('Z', '000+00:00');
let clock = -600_000;
/** An event a little later than the previous one (occurred_at orders a task's events). */
const ev = (kind: string, taskId: string, data: Record<string, unknown> = {}, engine = 'celery') => ({
  id: crypto.randomUUID(),
  kind,
  engine,
  task_id: taskId,
  occurred_at: iso((clock += 10)),
  data: { task_name: 'app.tasks.work', queue: 'default', worker: 'w1@host', ...data },
});

/** Stores one batch of events the way the transports do (one event_batch frame). */
async function ingest(events: unknown[], project = projectId, agent = agentId): Promise<void> {
  const payload = toPlainObject(parseJson(JSON.stringify({ events })) as JsonObject);
  const frameId = `ev_${crypto.randomUUID().slice(0, 12)}`;
  const { records } = readEvents(payload, { projectId: project, agentId: agent, frameId, nowMicros: nowMicros() });
  await svc.ctx.db.tx((tx) => storeEventBatches(tx, { projectId: project, agentId: agent }, [{ frameId, records }], nowIso()));
}

const get = async (path: string) => {
  const res = await viewer.call('GET', `${P}${path}`);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body;
};
const ids = (page: any) => page.items.map((t: any) => t.task_id);
const q = (s: string) => encodeURIComponent(s);

const UUID_TASK = '3f2a1b9c-5d4e-4f00-8abc-0123456789ab';

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  const admin = await mfaAdmin(svc);
  viewer = await userBrowser(admin, 'viewer@example.com');
  await admin.call('POST', `${P}/memberships`, { body: { user_id: (viewer as Browser & { id: string }).id, role: 'viewer' } });
  projectId = (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`))[0]!.id;
  agentId = (await mintAgent(svc.ctx, projectId, 'explorer-agent', TEST_ACTOR)).agent.id;
  other = await insertProject(svc.ctx.db, 'elsewhere-explorer');
  otherAgent = (await mintAgent(svc.ctx, other.id, 'other-agent', TEST_ACTOR)).agent.id;

  await ingest([
    ev('task.received', 'invoice-1001', { task_name: 'billing.charge_card', queue: 'billing', priority: 'high', args: ['order-1234', { sku: 'ABC-9' }], kwargs: { user: 'alice@example.com' } }),
    ev('task.started', 'invoice-1001', { task_name: 'billing.charge_card', queue: 'billing' }),
  ]);
  await ingest([ev('task.succeeded', 'invoice-1001', { task_name: 'billing.charge_card', queue: 'billing', result: { total: 42, currency: 'EUR' }, runtime_ms: 120 })]);
  await ingest([
    ev('task.received', 'invoice-1002', { task_name: 'billing.charge_card', queue: 'billing', priority: 'critical', args: ['order-5678'] }),
    ev('task.failed', 'invoice-1002', { task_name: 'billing.charge_card', queue: 'billing', exception: 'ConnectionError: timed out talking to db-7', traceback: 'Traceback...', runtime_ms: 3000 }),
  ]);
  await ingest([
    ev('task.received', UUID_TASK, { task_name: 'mail.send_email', args: ['=HYPERLINK("http://x.invalid")', 'say "hi", ok'], kwargs: { note: 'line1\nline2' } }),
    ev('task.succeeded', UUID_TASK, { task_name: 'mail.send_email', result: 'sent', runtime_ms: 15 }),
  ]);
  await ingest([ev('task.failed', 'formula-1', { task_name: '=SUM(A1:A9)', exception: '-2+3 went wrong' })]);
  await ingest([ev('task.succeeded', 'rq-job-1', { task_name: 'reports.build', priority: 'low', runtime_ms: 7 }, 'rq')]);
  // The same words in another project: never found from this one.
  await ingest([ev('task.received', 'invoice-9999', { task_name: 'billing.charge_card', args: ['order-1234'] })], other.id, otherAgent);
});
afterAll(() => svc.close());

describe(`task search on ${testDialect()}`, () => {
  test('words found whole or by prefix in args, kwargs, result, exception, name and id; this project only; matches highlighted as text with offsets', async () => {
    const order = await get(`/tasks?q=${q('order-1234')}`);
    expect(ids(order)).toEqual(['invoice-1001']);
    const h = order.items[0].highlights.find((x: any) => x.field === 'args');
    expect(h.ranges.map(([s, e]: number[]) => h.text.slice(s, e))).toEqual(['order-1234']);

    expect(ids(await get(`/tasks?q=alice`))).toEqual(['invoice-1001']);
    expect(ids(await get(`/tasks?q=EUR`))).toEqual(['invoice-1001']);
    expect(ids(await get(`/tasks?q=${q('timed out')}`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=${q('"timed out"')}`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=${q('"out timed"')}`))).toEqual([]);
    expect(ids(await get(`/tasks?q=ConnectionErr`))).toEqual([]);
    expect(ids(await get(`/tasks?q=connectionerror`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=${q('ConnectionErr*')}`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=${q('"out talk"*')}`))).toEqual(['invoice-1002']);
    const exc = (await get(`/tasks?q=${q('ConnectionErr*')}`)).items[0].highlights;
    expect(exc).toEqual([{ field: 'exception', text: 'ConnectionError: timed out talking to db-7', ranges: [[0, 15]] }]);
    expect(ids(await get(`/tasks?q=charge_card`)).sort()).toEqual(['invoice-1001', 'invoice-1002']);
    expect(ids(await get(`/tasks?q=${q('charge_card order-5678')}`))).toEqual(['invoice-1002']);
    // Ids: exactly (leading the page), by prefix, and by a piece of a UUID.
    const exact = await get(`/tasks?q=${UUID_TASK}`);
    expect(ids(exact)[0]).toBe(UUID_TASK);
    expect(exact.items[0].highlights).toContainEqual({ field: 'task_id', text: UUID_TASK, ranges: [[0, UUID_TASK.length]] });
    expect(ids(await get(`/tasks?q=3f2a1b`))).toEqual([UUID_TASK]);
    expect(ids(await get(`/tasks?q=${q('3f2a1b*')}`))).toEqual([UUID_TASK]);
    // Ids are matched as a whole or by their start, never by a piece in the middle.
    expect(ids(await get(`/tasks?q=${q('0123456789ab')}`))).toEqual([]);
    expect(ids(await get(`/tasks?q=${q('3f2a')}`))).toEqual([UUID_TASK]);
    expect(ids(await get(`/tasks?q=${q('3f2')}`))).toEqual([]);
    expect(ids(await get(`/tasks?q=invoice-100`)).sort()).toEqual(['invoice-1001', 'invoice-1002']);
    expect(ids(await get(`/tasks?q=invoice-1001`))).toEqual(['invoice-1001']);
    // Filters and search together; nothing of the other project.
    expect(ids(await get(`/tasks?q=charge_card&state=failure`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=invoice`)).sort()).toEqual(['invoice-1001', 'invoice-1002']);
    // Operator characters of FTS5 and tsquery are punctuation like any other.
    expect(ids(await get(`/tasks?q=${q('ConnectionError(*timed:^ & | !out)')}`))).toEqual(['invoice-1002']);
    expect(ids(await get(`/tasks?q=${q("NEAR(order 1234) OR AND NOT '")}`))).toEqual([]);
  });

  test('malformed q, bad cursors, unknown sorts and priorities answer the 422 envelope', async () => {
    for (const bad of ['"*(:^', '***', '  ', '"unbalanced', '()', 'ab*', '"x y"*', 'x'.repeat(201), Array.from({ length: 17 }, (_, i) => `w${i}`).join(' ')]) {
      const res = await viewer.call('GET', `${P}/tasks?q=${q(bad)}`);
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('validation_failed');
    }
    const page = await get('/tasks?limit=1&sort=runtime_ms');
    for (const path of [
      '/tasks?cursor=garbage!',
      `/tasks?cursor=${Buffer.from('{"v":1}').toString('base64url')}`,
      `/tasks?cursor=${Buffer.from('not json').toString('base64url')}`,
      `/tasks?cursor=${page.next_cursor}`, // another sort's
      `/tasks?sort=runtime_ms&order=asc&cursor=${page.next_cursor}`,
      `/tasks?sort=runtime_ms&cursor=${Buffer.from('{"v":1,"s":"runtime_ms","o":"d","k":["x"],"i":"a"}').toString('base64url')}`,
      '/tasks?sort=bogus',
      '/tasks?order=sideways',
      '/tasks?priority=urgent',
      '/tasks?priority=high,',
      '/tasks/export.csv?q=%22',
      '/tasks/export.ndjson?fields=id,password_hash',
      '/tasks/celery/invoice-1001/events?cursor=nope',
      '/tasks/celery/invoice-1001/tree?max_depth=0',
      '/workers/w1@host?window_seconds=5',
    ]) {
      const res = await viewer.call('GET', `${P}${path}`);
      expect([path, res.status, res.body.error]).toEqual([path, 422, 'validation_failed']);
    }
  });
});

describe(`unusual q on ${testDialect()}`, () => {
  test('digits and letters of other scripts, lone surrogates, NUL, quotes and backslashes: an answer or a 422, never a failure', async () => {
    const texts = ['½', 'a ½', '²', '٣', '𝟘', 'ǅx', 'x\u0000y', 'İstanbul', 'ß*', 'straße*', '"a\u0301b"', 'ä'.repeat(100), "it's", 'a\\b', "'", 'a:*', '1e5', '-1', '0x1f'];
    // Bytes that are no UTF-8 (a lone surrogate's, a stray continuation byte), as a client may send them.
    for (const encoded of [...texts.map(q), '%ED%A0%80abc', 'abc%FF', '%C0%AF']) {
      const res = await viewer.call('GET', `${P}/tasks?q=${encoded}`);
      expect([encoded, [200, 422].includes(res.status)]).toEqual([encoded, true]);
    }
  });
});

describe(`task list filters, sorts and paging on ${testDialect()}`, () => {
  test('priority (one or several) and engine filters', async () => {
    expect(ids(await get('/tasks?priority=critical'))).toEqual(['invoice-1002']);
    expect(ids(await get('/tasks?priority=critical,high')).sort()).toEqual(['invoice-1001', 'invoice-1002']);
    expect(ids(await get('/tasks?engine=rq'))).toEqual(['rq-job-1']);
    expect(ids(await get('/tasks?engine=rq&priority=low'))).toEqual(['rq-job-1']);
  });

  test('every sort, both orders: the rows in that order, those without the value last, paged without gaps or repeats', async () => {
    // A set of its own: runtimes with ties and gaps, some never finished; in this project (among
    // enough others that SQLite walks the sort's index) and in the other (few: it sorts its rows).
    const runtimes = [50, 10, null, 30, 10, null, 70, 20, 30, null, 90, 40];
    for (let i = 0; i < 80; i++) await ingest([ev('task.succeeded', `filler-${i}`, { task_name: 'filler.job', runtime_ms: i % 7 })]);
    for (const [project, agent] of [[projectId, agentId], [other.id, otherAgent]] as const) {
      for (const [i, runtime] of runtimes.entries()) {
        const id = `sort-${String(i).padStart(2, '0')}`;
        const name = `sortset.task_${String.fromCharCode(97 + ((i * 7) % 12))}`;
        await ingest(runtime === null ? [ev('task.received', id, { task_name: name })] : [ev('task.received', id, { task_name: name }), ev('task.succeeded', id, { task_name: name, runtime_ms: runtime })], project, agent);
      }
    }
    // Both ways of reading a sort are chosen afresh for the projects as they are now (PostgreSQL
    // judges by the planner's row count, which ANALYZE sets).
    if (testDialect() === 'postgres') await svc.ctx.db.run(sql`ANALYZE tasks`);
    forgetSortChoices();
    const all = (await get('/tasks?name=sortset&limit=500')).items;
    expect(all).toHaveLength(runtimes.length);
    const elsewhere = (await listTasks(svc.ctx.db, other.id, { name: 'sortset', limit: 500 })).items;
    for (const sort of ['created_at', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'name', 'state'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        const key = (t: any): (string | number | null)[] => (sort === 'state' ? [t.state, t.created_at] : [t[sort]]);
        const cmp = (a: any, b: any) => {
          const [ka, kb] = [key(a), key(b)];
          for (let i = 0; i < ka.length; i++) {
            if (ka[i] === kb[i]) continue;
            if (ka[i] === null) return 1; // empty last, either order
            if (kb[i] === null) return -1;
            const c = ka[i]! < kb[i]! ? -1 : 1;
            return order === 'asc' ? c : -c;
          }
          return (a.id < b.id ? -1 : 1) * (order === 'asc' ? 1 : -1);
        };
        // Byte order on both databases for these ASCII values.
        const expected = [...all].sort(cmp).map((t) => t.task_id);
        const got: string[] = [];
        let cursor: string | null = null;
        do {
          const page: any = await get(`/tasks?name=sortset&sort=${sort}&order=${order}&limit=5${cursor ? `&cursor=${cursor}` : ''}`);
          got.push(...ids(page));
          cursor = page.next_cursor;
        } while (cursor);
        expect([sort, order, got]).toEqual([sort, order, expected]);
        const theirs: string[] = [];
        cursor = null;
        do {
          const page = await listTasks(svc.ctx.db, other.id, { name: 'sortset', sort, order, limit: 5, ...(cursor ? { cursor } : {}) });
          theirs.push(...ids(page));
          cursor = page.next_cursor;
        } while (cursor);
        expect([sort, order, theirs]).toEqual([sort, order, [...elsewhere].sort(cmp).map((t) => t.task_id)]);
      }
    }
  });

  test('paging is stable while tasks arrive: no row twice, none skipped, in any sort', async () => {
    for (let i = 0; i < 30; i++) await ingest([ev('task.succeeded', `stable-${i}`, { task_name: 'stable.job', runtime_ms: (i * 37) % 11 })]);
    for (const sort of ['created_at', 'runtime_ms', 'finished_at'] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let n = 0;
      do {
        const page: any = await get(`/tasks?name=stable.job&sort=${sort}&limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...ids(page));
        cursor = page.next_cursor;
        // New tasks arrive between pages, some sorting before the cursor, some after.
        await ingest([ev('task.succeeded', `stable-${sort}-late-${n++}`, { task_name: 'stable.job', runtime_ms: n % 12 })]);
      } while (cursor);
      const originals = seen.filter((id) => !id.includes('late'));
      expect(new Set(seen).size).toBe(seen.length);
      expect(originals.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `stable-${i}`).sort());
    }
  });

  test('search pages follow next_cursor to the end, each match once', async () => {
    for (let i = 0; i < 25; i++) await ingest([ev('task.received', `needle-${i}`, { task_name: 'haystack.job', args: [`needle straw ${i}`] })]);
    // Every other one has its result later, which says needle too: on SQLite the task then has a
    // second search entry that matches (src/tasks/store.ts indexForSearch), and is still found once.
    for (let i = 0; i < 25; i += 2) await ingest([ev('task.succeeded', `needle-${i}`, { task_name: 'haystack.job', result: `needle threaded ${i}`, runtime_ms: i })]);
    if (svc.ctx.db.dialect === 'sqlite') {
      const [entries] = await svc.ctx.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM tasks_fts WHERE tasks_fts MATCH 'needle'`);
      expect(entries!.n).toBe(25 + 13);
    }
    expect(ids(await get('/tasks?q=threaded&limit=50')).sort()).toEqual(Array.from({ length: 13 }, (_, i) => `needle-${2 * i}`).sort());
    expect(ids(await get(`/tasks?q=${q('straw threaded')}&limit=50`)).length).toBe(13);
    // q is the start of their ids too: the first page leads with ten of them by id, the rest follow.
    expect(ids(await get('/tasks?q=needle&limit=12')).slice(0, 10)).toEqual(['needle-0', 'needle-1', 'needle-10', 'needle-11', 'needle-12', 'needle-13', 'needle-14', 'needle-15', 'needle-16', 'needle-17']);
    for (const [sort, order] of [['created_at', 'desc'], ['created_at', 'asc'], ['runtime_ms', 'desc']] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await get(`/tasks?q=needle&sort=${sort}&order=${order}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.items.every((t: any) => t.highlights.length > 0)).toBe(true);
        seen.push(...ids(page));
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen.sort(), `${sort} ${order}`).toEqual(Array.from({ length: 25 }, (_, i) => `needle-${i}`).sort());
    }
  });
});

describe(`exports on ${testDialect()}`, () => {
  /** An export as the viewer's browser fetches it (the text as sent: NDJSON is no JSON document). */
  const fetchExport = async (path: string) => {
    const cookie = [...viewer.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await svc.app.handle(new Request(`http://localhost${P}${path}`, { headers: { host: 'localhost', cookie } }));
    const text = await res.text();
    expect([res.status, res.status === 200 ? '' : text]).toEqual([200, '']);
    return { headers: res.headers, text };
  };

  test('CSV: a header, every text cell quoted with quotes doubled, line breaks kept inside quotes, formulas defused', async () => {
    const res = await fetchExport(`/tasks/export.csv?engine=celery&fields=task_id,name,args,kwargs,runtime_ms,exception&sort=created_at&order=asc&name=${q('send_email')}`);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="tasks-default-.*\.csv"$/);
    expect(res.text).toBe(
      `"task_id","name","args","kwargs","runtime_ms","exception"\r\n` +
        `"${UUID_TASK}","mail.send_email","[""=HYPERLINK(\\""http://x.invalid\\"")"",""say \\""hi\\"", ok""]","{""note"":""line1\\nline2""}",15,\r\n`,
    );
    const formula = await fetchExport(`/tasks/export.csv?fields=task_id,name,exception,priority&q=${q('went wrong')}`);
    expect(formula.text).toBe(`"task_id","name","exception","priority"\r\n"formula-1","'=SUM(A1:A9)","'-2+3 went wrong",\r\n`);
  });

  test('NDJSON: one task per line in the list order, the filter and search applied, limit and fields honoured', async () => {
    const res = await fetchExport('/tasks/export.ndjson?q=straw&order=asc');
    expect(res.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    const lines = res.text.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((t) => t.task_id)).toEqual(Array.from({ length: 25 }, (_, i) => `needle-${i}`));
    expect(lines[0]).toMatchObject({ name: 'haystack.job', args: ['needle straw 0'], state: 'success', result: 'needle threaded 0' });
    const two = (await fetchExport('/tasks/export.ndjson?name=stable.job&limit=2&fields=task_id,state')).text.trimEnd().split('\n');
    expect(two.map((l) => Object.keys(JSON.parse(l)))).toEqual([['task_id', 'state'], ['task_id', 'state']]);
    // A filter of several pages (the export reads 500 rows a page) comes out whole.
    const many = (await fetchExport('/tasks/export.ndjson?fields=task_id')).text.trimEnd().split('\n');
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await get(`/tasks?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      listed.push(...ids(page));
      cursor = page.next_cursor;
    } while (cursor);
    expect(many.map((l) => JSON.parse(l).task_id)).toEqual(listed);
  });
});

describe(`the task tree on ${testDialect()}`, () => {
  beforeAll(async () => {
    // root -> a -> b -> c -> d (a chain) and root -> g1..g4 (a group); root ids reported on some only.
    const chain = ['root', 'a', 'b', 'c', 'd'];
    for (const [i, id] of chain.entries()) {
      await ingest([ev('task.succeeded', `tree-${id}`, { task_name: 'canvas.step', ...(i > 0 ? { parent_task_id: `tree-${chain[i - 1]}`, root_task_id: i % 2 ? 'tree-root' : null } : {}) })]);
    }
    for (let g = 1; g <= 4; g++) await ingest([ev('task.succeeded', `tree-g${g}`, { task_name: 'canvas.member', parent_task_id: 'tree-root' })]);
  });

  test('from any member: the whole tree from its root, breadth first', async () => {
    for (const from of ['tree-root', 'tree-c', 'tree-g3', 'tree-d']) {
      const tree = await get(`/tasks/celery/${from}/tree`);
      expect(tree).toMatchObject({ engine: 'celery', root_task_id: 'tree-root', node_count: 9, truncated: false });
      expect(tree.nodes.map((n: any) => [n.task_id, n.depth])).toEqual([
        ['tree-root', 0],
        ['tree-a', 1],
        ['tree-g1', 1],
        ['tree-g2', 1],
        ['tree-g3', 1],
        ['tree-g4', 1],
        ['tree-b', 2],
        ['tree-c', 3],
        ['tree-d', 4],
      ]);
      expect(tree.nodes[6]).toMatchObject({ name: 'canvas.step', state: 'success', parent_task_id: 'tree-a' });
    }
  });

  test('limits of depth, width and size cut the tree and say so', async () => {
    const shallow = await get('/tasks/celery/tree-root/tree?max_depth=2');
    expect(shallow.truncated).toBe(true);
    expect(shallow.nodes.map((n: any) => n.task_id)).toEqual(['tree-root', 'tree-a', 'tree-g1', 'tree-g2', 'tree-g3', 'tree-g4', 'tree-b']);
    const narrow = await get('/tasks/celery/tree-root/tree?max_width=2');
    expect(narrow).toMatchObject({ truncated: true, node_count: 6, limits: { max_depth: 20, max_width: 2, max_nodes: 1000 } });
    expect(narrow.nodes.map((n: any) => n.task_id)).toEqual(['tree-root', 'tree-a', 'tree-g1', 'tree-b', 'tree-c', 'tree-d']);
    const small = await get('/tasks/celery/tree-root/tree?max_nodes=3');
    expect(small).toMatchObject({ truncated: true, node_count: 3 });
    const exact = await get('/tasks/celery/tree-root/tree?max_depth=4&max_width=5&max_nodes=9');
    expect(exact).toMatchObject({ truncated: false, node_count: 9 });
    // A standalone task is a tree of one; an unknown one is 404.
    expect(await get('/tasks/rq/rq-job-1/tree')).toMatchObject({ root_task_id: 'rq-job-1', node_count: 1, truncated: false });
    expect((await viewer.call('GET', `${P}/tasks/celery/no-such-task/tree`)).status).toBe(404);
  });
});

describe(`the task tree with missing links and wide levels on ${testDialect()}`, () => {
  const shape = (tree: any) => tree.nodes.map((n: any) => [n.task_id, n.depth, n.detached]);

  test('a task whose parent svc never stored is in its own tree, with its siblings and children, detached under the root', async () => {
    // lost-root <- (lost-mid: never stored) <- lost-x, lost-y; lost-x <- lost-x1.
    await ingest([ev('task.succeeded', 'lost-root', { task_name: 'canvas.step' })]);
    await ingest([
      ev('task.succeeded', 'lost-x', { task_name: 'canvas.step', parent_task_id: 'lost-mid', root_task_id: 'lost-root' }),
      ev('task.succeeded', 'lost-y', { task_name: 'canvas.step', parent_task_id: 'lost-mid', root_task_id: 'lost-root' }),
    ]);
    await ingest([ev('task.succeeded', 'lost-x1', { task_name: 'canvas.step', parent_task_id: 'lost-x', root_task_id: 'lost-root' })]);
    // From any of them, the root included (its tasks by root id: migration 0021).
    for (const from of ['lost-x', 'lost-x1', 'lost-root']) {
      const tree = await get(`/tasks/celery/${from}/tree`);
      expect(tree).toMatchObject({ root_task_id: 'lost-root', node_count: 4, truncated: false });
      expect(shape(tree)).toEqual([
        ['lost-root', 0, false],
        ['lost-x', 1, true],
        ['lost-y', 1, true],
        ['lost-x1', 2, true],
      ]);
      expect(tree.nodes[1].parent_task_id).toBe('lost-mid');
    }
    // Within the limits: the task asked for, with what leads to it, even when max_nodes is spent.
    const small = await get('/tasks/celery/lost-x1/tree?max_nodes=1');
    expect([small.truncated, shape(small)]).toEqual([true, [['lost-root', 0, false], ['lost-x', 1, true], ['lost-x1', 2, true]]]);
    // From the root, the limits cut the detached branches too, and say so.
    const rootSmall = await get('/tasks/celery/lost-root/tree?max_nodes=2');
    expect([rootSmall.truncated, shape(rootSmall)]).toEqual([true, [['lost-root', 0, false], ['lost-x', 1, true]]]);
  });

  test('a task the limits cut from its tree is still in it, with its parents up to the tree', async () => {
    // tree-c reports its root: the tree stops at depth 2 (tree-b), and tree-c hangs under tree-b.
    const deep = await get('/tasks/celery/tree-c/tree?max_depth=2');
    expect(deep).toMatchObject({ root_task_id: 'tree-root', truncated: true });
    expect(shape(deep).slice(-2)).toEqual([
      ['tree-b', 2, false],
      ['tree-c', 3, false],
    ]);
    expect(deep.nodes.map((n: any) => n.task_id)).toEqual(['tree-root', 'tree-a', 'tree-g1', 'tree-g2', 'tree-g3', 'tree-g4', 'tree-b', 'tree-c']);
    const narrow = await get('/tasks/celery/tree-g4/tree?max_width=2');
    expect(narrow.truncated).toBe(true);
    expect(narrow.nodes.map((n: any) => n.task_id)).toEqual(['tree-root', 'tree-a', 'tree-g1', 'tree-b', 'tree-c', 'tree-d', 'tree-g4']);
    // Under a root svc never stored: linked to it all the same, not detached.
    await ingest(['ghost-a', 'ghost-b'].map((id) => ev('task.succeeded', id, { task_name: 'canvas.member', parent_task_id: 'ghost-root', root_task_id: 'ghost-root' })));
    const ghost = await get('/tasks/celery/ghost-b/tree?max_width=1');
    expect([ghost.root_task_id, ghost.truncated, shape(ghost)]).toEqual(['ghost-root', true, [['ghost-a', 1, false], ['ghost-b', 1, false]]]);
  });

  test('max_width is per parent: a parent with many children leaves room for its siblings\' children', async () => {
    // wide-r -> wide-a (10 children), wide-b (2 children).
    await ingest([ev('task.succeeded', 'wide-r', { task_name: 'canvas.step' })]);
    await ingest(['wide-a', 'wide-b'].map((id) => ev('task.succeeded', id, { task_name: 'canvas.step', parent_task_id: 'wide-r', root_task_id: 'wide-r' })));
    for (let i = 0; i < 10; i++) await ingest([ev('task.succeeded', `wide-a${i}`, { task_name: 'canvas.member', parent_task_id: 'wide-a', root_task_id: 'wide-r' })]);
    for (let i = 0; i < 2; i++) await ingest([ev('task.succeeded', `wide-b${i}`, { task_name: 'canvas.member', parent_task_id: 'wide-b', root_task_id: 'wide-r' })]);
    const tree = await get('/tasks/celery/wide-r/tree?max_width=3');
    expect(tree).toMatchObject({ truncated: true, node_count: 8 });
    expect(tree.nodes.map((n: any) => [n.task_id, n.depth])).toEqual([
      ['wide-r', 0],
      ['wide-a', 1],
      ['wide-b', 1],
      ['wide-a0', 2],
      ['wide-a1', 2],
      ['wide-a2', 2],
      ['wide-b0', 2],
      ['wide-b1', 2],
    ]);
    // Wide enough: all of it, nothing said to be missing.
    expect(await get('/tasks/celery/wide-r/tree?max_width=10')).toMatchObject({ truncated: false, node_count: 15 });
    // max_nodes cuts a level a rank at a time: each parent's first child before any parent's second.
    const few = await get('/tasks/celery/wide-r/tree?max_nodes=5');
    expect([few.truncated, few.nodes.map((n: any) => n.task_id)]).toEqual([true, ['wide-r', 'wide-a', 'wide-b', 'wide-a0', 'wide-b0']]);
  });
});

describe(`a task's raw events on ${testDialect()}`, () => {
  test("a task's detail carries its first 200 events and says there are more; the events route pages through all", async () => {
    // 205 retries a second apart (a task retried for days), then its start.
    const from = Date.now() - 900_000;
    const at = (i: number) => new Date(from + i * 1000).toISOString().replace('Z', '000+00:00');
    const events = Array.from({ length: 205 }, (_, i) => ({ ...ev('task.retried', 'retried-often'), occurred_at: at(i) }));
    for (let i = 0; i < events.length; i += 100) await ingest(events.slice(i, i + 100));
    const detail = await get('/tasks/celery/retried-often');
    expect([detail.events.length, detail.events_truncated]).toEqual([200, true]);
    expect(detail.events[0].occurred_at).toBe(at(0));
    let all = 0;
    let cursor: string | null = null;
    do {
      const page: any = await get(`/tasks/celery/retried-often/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      all += page.items.length;
      cursor = page.next_cursor;
    } while (cursor);
    expect(all).toBe(205);
    expect((await get('/tasks/celery/invoice-1001')).events_truncated).toBe(false);
  });

  test('oldest or newest first, keyset-paged, payloads as reported', async () => {
    const asc = await get('/tasks/celery/invoice-1001/events');
    expect(asc.items.map((e: any) => e.kind)).toEqual(['task.received', 'task.started', 'task.succeeded']);
    expect(asc.items[0].payload).toMatchObject({ args: ['order-1234', { sku: 'ABC-9' }] });
    expect(asc.next_cursor).toBeNull();
    const kinds: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await get(`/tasks/celery/invoice-1001/events?order=desc&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      kinds.push(...page.items.map((e: any) => e.kind));
      cursor = page.next_cursor;
    } while (cursor);
    expect(kinds).toEqual(['task.succeeded', 'task.started', 'task.received']);
    const first = await get('/tasks/celery/invoice-1001/events?limit=1');
    expect((await viewer.call('GET', `${P}/tasks/celery/invoice-1001/events?order=desc&cursor=${first.next_cursor}`)).status).toBe(422);
    expect((await viewer.call('GET', `${P}/tasks/celery/nope/events`)).status).toBe(404);
  });
});

describe(`worker detail on ${testDialect()}`, () => {
  test('by name or id: inspect data, its queues with depth, its tasks by state over the window', async () => {
    // A heartbeat's adapter_health, as the transports project it.
    const health = {
      'celery.worker_details': JSON.stringify({ 'w1@host': { stats: { pid: 4242, pool: { 'max-concurrency': 8 } }, active_queues: [{ name: 'billing' }, { name: 'default' }], active: [{}, {}], registered: ['a', 'b'] } }),
      'celery.queue_depths': JSON.stringify({ billing: 17, default: 3, unrelated: 9 }),
    };
    await svc.ctx.db.tx((tx) => projectAdapterHealth(tx, projectId, health, nowIso()));
    const byName = await get(`/workers/${q('w1@host')}`);
    expect(byName).toMatchObject({ name: 'w1@host', engine: 'celery', pid: 4242, concurrency: 8, active_tasks: 2, queues: ['billing', 'default'], metadata: { stats: { pid: 4242 } } });
    expect(byName.queue_details.map((x: any) => [x.name, x.pending_count])).toEqual([['billing', 17], ['default', 3]]);
    expect(byName.task_counts).toMatchObject({ window_seconds: 3600, complete: true });
    const counts = byName.task_counts.by_state;
    expect(counts.failure).toBe(2); // invoice-1002, formula-1
    expect(counts.success).toBeGreaterThan(5);
    expect(byName.task_counts.total).toBe(Object.values(counts).reduce((a: number, b: any) => a + b, 0));
    const byId = await get(`/workers/${byName.id}?window_seconds=604800`);
    expect(byId.name).toBe('w1@host');
    expect((await viewer.call('GET', `${P}/workers/nobody`)).status).toBe(404);
    // Two engines with a worker of the same name: which one must be said.
    await ingest([{ ...ev('worker.online', '', { hostname: 'w1@host' }), engine: 'rq', task_id: '' }]);
    const ambiguous = await viewer.call('GET', `${P}/workers/${q('w1@host')}`);
    expect([ambiguous.status, ambiguous.body.error]).toEqual([409, 'ambiguous_worker']);
    const rq = await get(`/workers/${q('w1@host')}?engine=rq`);
    expect(rq.engine).toBe('rq');
    // Its tasks are the rq worker's (rq-job-1), not those of the celery worker of the same name.
    expect(rq.task_counts).toMatchObject({ total: 1, by_state: { success: 1 } });
  });
});

describe(`migrations 0010 and 0020 on ${testDialect()}`, () => {
  test('index the tasks stored before them; the triggers keep the index in step after', async () => {
    const old = await testService({ migrate: false });
    try {
      const db = old.ctx.db;
      await upgrade(db, '0009');
      const p = await insertProject(db, 'before-0010');
      const at = '2026-11-01T00:00:00.000000+00:00';
      await db.tx(async (tx) => {
        for (let i = 0; i < 300; i++) {
          const args = JSON.stringify([`customer-${i}`, { region: i % 2 ? 'north' : 'south' }]);
          await tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, name, state, state_tier, state_at, args, exception, tags, created_at, updated_at)
            VALUES (${`row-${String(i).padStart(4, '0')}`}, ${p.id}, 'celery', ${`old-${i}`}, 'legacy.job', 'failure', 1, ${at}, ${args}, ${i === 7 ? 'KeyError: flux capacitor' : null}, '[]', ${at}, ${at})`);
        }
      });
      expect(await upgrade(db, '0010')).toEqual(['0010']);
      // Up to the last migration (0020 makes SQLite's index again, keyed as ingest now writes it).
      await upgrade(db);
      const search = (text: string) => listTasks(db, p.id, { q: text, limit: 500 }).then((page) => page.items.map((t) => t.task_id));
      expect(await search('customer-42')).toEqual(['old-42']);
      expect(await search('flux')).toEqual(['old-7']);
      expect((await search('north')).length).toBe(150);
      // What ingest writes to an old task, and deletes, reach the index.
      const agent = (await mintAgent(old.ctx, p.id, 'late', TEST_ACTOR)).agent.id;
      const late = async (events: unknown[]) => {
        const payload = toPlainObject(parseJson(JSON.stringify({ events })) as JsonObject);
        const { records } = readEvents(payload, { projectId: p.id, agentId: agent, frameId: 'ev_late', nowMicros: nowMicros() });
        await db.tx((tx) => storeEventBatches(tx, { projectId: p.id, agentId: agent }, [{ frameId: 'ev_late', records }], nowIso()));
      };
      await late([{ ...ev('task.failed', 'old-8', { task_name: 'legacy.job', exception: 'TimeoutError: gremlins' }) }]);
      expect(await search('gremlins')).toEqual(['old-8']);
      expect(await search('customer-8')).toEqual(['old-8']);
      await late([{ ...ev('task.retried', 'old-8', { task_name: 'legacy.job' }) }]);
      expect(await search('gremlins')).toEqual(['old-8']);
      await db.tx((tx) => tx.run(sql`DELETE FROM tasks WHERE task_id IN ('old-7', 'old-8')`));
      expect(await search('flux')).toEqual([]);
      expect(await search('gremlins')).toEqual([]);
      expect(await search('customer-8')).toEqual([]);
      if (db.dialect === 'sqlite') {
        // The index agrees with itself (its tombstones included).
        await db.tx((tx) => tx.run(sql`INSERT INTO tasks_fts (tasks_fts, rank) VALUES ('integrity-check', 0)`));
      } else {
        // PostgreSQL's triggers (migration 0020) serve rows written other than by ingest: one inserted
        // without a vector gets it, a change of its searched text a new one, other changes keep it.
        await db.tx((tx) => tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, name, state, state_tier, state_at, exception, tags, created_at, updated_at)
          VALUES ('row-raw', ${p.id}, 'celery', 'raw-1', 'legacy.job', 'failure', 1, ${at}, 'OctopusError: ink', '[]', ${at}, ${at})`));
        expect(await search('octopuserror ink')).toEqual(['raw-1']);
        await db.tx((tx) => tx.run(sql`UPDATE tasks SET exception = 'SquidError: beak' WHERE task_id = 'raw-1'`));
        expect([await search('squiderror'), await search('octopuserror')]).toEqual([['raw-1'], []]);
        await db.tx((tx) => tx.run(sql`UPDATE tasks SET state = 'success', state_tier = 2 WHERE task_id = 'raw-1'`));
        expect(await search('beak legacy')).toEqual(['raw-1']);
      }
    } finally {
      await old.close();
    }
  });
});

describe(`a task reported again and again on ${testDialect()}`, () => {
  test('later reports keep what earlier ones made searchable and add what they bring; a placeholder name never replaces the known one', async () => {
    const words = async (text: string) => ids(await get(`/tasks?q=${q(text)}`));
    await ingest([ev('task.received', 'lifecycle-1', { task_name: 'crm.sync_contact', args: ['zebra-77'], kwargs: { region: 'okapi' } })]);
    expect(await words('zebra')).toEqual(['lifecycle-1']);
    // The name and arguments again, unchanged, then a placeholder name: the entry stays as it was.
    await ingest([ev('task.started', 'lifecycle-1', { task_name: 'crm.sync_contact', args: ['zebra-77'], worker: 'w2@host' })]);
    await ingest([ev('task.retried', 'lifecycle-1', { task_name: '<unknown>' })]);
    expect(await words('sync_contact okapi')).toEqual(['lifecycle-1']);
    expect(await words('unknown')).toEqual([]);
    // The result arrives: found by it and by everything before.
    await ingest([ev('task.succeeded', 'lifecycle-1', { task_name: 'crm.sync_contact', result: { status: 'quokka' }, runtime_ms: 42, worker: 'w2@host' })]);
    expect(await words('quokka zebra okapi')).toEqual(['lifecycle-1']);
    const task = await get('/tasks/celery/lifecycle-1');
    expect([task.name, task.args, task.kwargs, task.result, task.state, task.worker_name, task.runtime_ms]).toEqual([
      'crm.sync_contact', ['zebra-77'], { region: 'okapi' }, { status: 'quokka' }, 'success', 'w2@host', 42,
    ]);
    expect(task.started_at).not.toBeNull();
    // Sorted by runtime, it is where its runtime puts it.
    const byRuntime = await get('/tasks?sort=runtime_ms&order=asc&limit=500');
    const runtimes = byRuntime.items.filter((t: any) => t.runtime_ms !== null).map((t: any) => t.runtime_ms);
    expect(runtimes).toEqual([...runtimes].sort((a, b) => a - b));
    expect(runtimes).toContain(42);
    // A value replaced by a later report: found by the new one only (the old entry was removed with
    // the words it was made from, so none of them is left behind).
    await ingest([ev('task.failed', 'lifecycle-2', { task_name: 'crm.sync_contact', exception: 'WalrusError: tusk' })]);
    await ingest([ev('task.retried', 'lifecycle-2', { task_name: 'crm.sync_contact' })]);
    expect(await words('walruserror tusk')).toEqual(['lifecycle-2']);
    clock += 5_000; // a later second: the same kind in the same second is the same event (content-derived ids)
    await ingest([ev('task.failed', 'lifecycle-2', { task_name: 'crm.sync_contact', exception: 'NarwhalError: horn' })]);
    expect(await words('narwhalerror horn')).toEqual(['lifecycle-2']);
    expect(await words('walruserror')).toEqual([]);
    expect(await words('tusk')).toEqual([]);
    expect(await words('sync_contact')).toEqual(['lifecycle-2', 'lifecycle-1']);
  });
});

describe(`a search sorted by a column, in a project among larger ones, on ${testDialect()}`, () => {
  test('finds the project\'s matches however many newer ones other projects hold, and says when the sort left matches out', async () => {
    const big = await insertProject(svc.ctx.db, 'search-scope-big');
    const bigAgent = (await mintAgent(svc.ctx, big.id, 'big-agent', TEST_ACTOR)).agent.id;
    const run = (id: string, runtime: number) => [ev('task.received', id, { task_name: 'scope.job', args: ['quagga'] }), ev('task.succeeded', id, { task_name: 'scope.job', runtime_ms: runtime })];
    for (let i = 0; i < 3; i++) await ingest(run(`scope-${i}`, 10 * i));
    // 5,100 newer matches in another project: more than SQLite sorts (5,000).
    for (let b = 0; b < 51; b++) await ingest(Array.from({ length: 100 }, (_, i) => run(`scope-big-${b}-${i}`, i)).flat(), big.id, bigAgent);
    for (const sort of ['runtime_ms', 'finished_at', 'name', 'created_at']) {
      const page = await get(`/tasks?q=quagga&sort=${sort}&limit=10`);
      expect([sort, ids(page).sort(), page.next_cursor]).toEqual([sort, ['scope-0', 'scope-1', 'scope-2'], null]);
      expect(page.search_truncated).toBe(false);
    }
    expect(ids(await get('/tasks?q=quagga&sort=runtime_ms&order=asc'))).toEqual(['scope-0', 'scope-1', 'scope-2']);
    // In the large project the sort holds its 5,000 newest matches on SQLite, and the answer says so;
    // PostgreSQL sorts them all.
    const sorted = await listTasks(svc.ctx.db, big.id, { q: 'quagga', sort: 'runtime_ms', limit: 5 });
    expect([sorted.items.length, sorted.search_truncated]).toEqual([5, testDialect() === 'sqlite']);
    expect((await listTasks(svc.ctx.db, big.id, { q: 'quagga', limit: 5 })).search_truncated).toBe(false);
    // The answer's field is in the OpenAPI document.
    const doc = (await viewer.call('GET', '/api/v1/openapi.json')).body;
    expect(doc.components.schemas.TaskPage.required).toContain('search_truncated');
    expect(doc.components.schemas.TaskTreeNode.required).toContain('detached');
  });
});

describe(`filters the sort's index does not serve, past a page's budget of tasks, on ${testDialect()}`, () => {
  // Last in the file: 2,503 more tasks in the default project.
  test('a page reads at most 2,000 tasks: a short or empty page says scan_limited and its cursor reads on; every match comes once', async () => {
    await ingest([0, 1, 2].map((i) => ev('task.received', `rare-${i}`, { task_name: 'app.scan.rare' })));
    for (let lo = 0; lo < 2500; lo += 500) {
      await ingest(Array.from({ length: 500 }, (_, k) => ev('task.received', `plain-${lo + k}`, { task_name: 'app.scan.plain', queue: (lo + k) % 25 === 0 ? 'sparse' : 'default' })));
    }
    // The newest 2,000 tasks hold no rare one: an empty page that says so, and a cursor.
    const first = await get('/tasks?name=app.scan.rare&limit=50');
    expect([first.items, first.scan_limited, typeof first.next_cursor]).toEqual([[], true, 'string']);
    const second = await get(`/tasks?name=app.scan.rare&limit=50&cursor=${q(first.next_cursor)}`);
    expect(second).toMatchObject({ scan_limited: false, next_cursor: null });
    expect(ids(second)).toEqual(['rare-2', 'rare-1', 'rare-0']);

    // A sort by a column none of them holds (all in the "not set" part), paged to the end: each of the
    // 100 matches once, short pages in between (80 in each 2,000 tasks read).
    const seen: string[] = [];
    let cursor: string | null = null;
    let short = 0;
    for (let pages = 0; pages < 20; pages++) {
      const page: any = await get(`/tasks?queue=sparse&sort=started_at&order=asc&limit=100${cursor ? `&cursor=${q(cursor)}` : ''}`);
      seen.push(...ids(page));
      if (page.scan_limited) short++;
      expect(page.scan_limited).toBe(page.items.length < 100 && page.next_cursor !== null);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(cursor).toBeNull();
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual(Array.from({ length: 100 }, (_, i) => `plain-${i * 25}`).sort());
    expect(short).toBeGreaterThan(0);

    // A filter the index serves (a state in first-seen order) reads on to a full page.
    const received = await get('/tasks?state=received&name=app.scan&limit=50');
    expect(received.items).toHaveLength(50);
    expect(received.scan_limited).toBe(false);
  });

  test("in a sort whose index holds every project's tasks (runtime), other projects' entries count towards the walk: short pages, every match once", async () => {
    // 4,000 tasks of another project, their runtimes among this project's.
    const crowd = await insertProject(svc.ctx.db, 'crowd-explorer');
    const pg = svc.ctx.db.dialect === 'postgres';
    const numbers = pg ? sql`SELECT i FROM generate_series(1, 4000) AS g(i)` : sql`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 4000) SELECT i FROM g`;
    const at = nowIso();
    await svc.ctx.db.tx((tx) =>
      tx.run(sql`INSERT INTO tasks (id, project_id, engine, task_id, name, queue, state, state_tier, state_at, finished_at, runtime_ms, tags, created_at, updated_at)
        SELECT ${pg ? sql`gen_random_uuid()::text` : sql`lower(hex(randomblob(16)))`}, ${crowd.id}, 'celery', 'crowd-' || i, 'app.crowd', 'tiny', 'success', 1, ${at}, ${at}, i, '[]', ${at}, ${at} FROM (${numbers}) AS g`),
    );
    await ingest([10, 1000, 2000, 3000, 3990].map((ms, i) => ev('task.succeeded', `tiny-${i}`, { task_name: 'app.tiny', queue: 'tiny', runtime_ms: ms })));
    forgetSortChoices();
    const seen: string[] = [];
    let cursor: string | null = null;
    let short = 0;
    for (let pages = 0; pages < 20; pages++) {
      const page: any = await get(`/tasks?queue=tiny&sort=runtime_ms&limit=50${cursor ? `&cursor=${q(cursor)}` : ''}`);
      seen.push(...ids(page));
      if (page.scan_limited) short++;
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual(['tiny-4', 'tiny-3', 'tiny-2', 'tiny-1', 'tiny-0']);
    expect(short).toBeGreaterThan(0);
  });

  test('a match deleted between the walk and the read of its row (retention, a bulk delete) shortens the page, never ends the list', async () => {
    // The walk reads the tasks' keys, then the rows that match: a delete lands between the two statements.
    const db = svc.ctx.db;
    const all = db.all.bind(db);
    let between: ((walked: Record<string, unknown>[]) => Promise<void>) | null = null;
    db.all = (async (query: Parameters<typeof db.all>[0]) => {
      const rows = await all(query);
      const hook = between;
      if (hook && JSON.stringify(query).includes('hit_')) {
        between = null;
        await hook(rows as Record<string, unknown>[]);
      }
      return rows;
    }) as typeof db.all;
    try {
      const sparse = (await svc.ctx.db.all<{ task_id: string }>(sql`SELECT task_id FROM tasks WHERE project_id = ${projectId} AND queue = 'sparse'`)).map((r) => r.task_id);
      let gone = '';
      between = async (walked) => {
        const hit = walked.filter((r) => Number(r.hit_) === 1)[2]!;
        const [row] = await all<{ task_id: string }>(sql`SELECT task_id FROM tasks WHERE ${sql.raw(typeof hit.tie_ === 'number' ? 'rowid' : 'id')} = ${hit.tie_}`);
        gone = row!.task_id;
        await svc.ctx.db.tx((tx) => tx.run(sql`DELETE FROM tasks WHERE project_id = ${projectId} AND task_id = ${gone}`));
      };
      const first = await listTasks(db, projectId, { queue: 'sparse', limit: 10 });
      expect(gone).not.toBe('');
      expect(first.next_cursor).not.toBeNull();
      const seen = first.items.map((t) => t.task_id);
      for (let cursor = first.next_cursor; cursor; ) {
        const page = await listTasks(db, projectId, { queue: 'sparse', limit: 10, cursor });
        seen.push(...page.items.map((t) => t.task_id));
        cursor = page.next_cursor;
      }
      expect(seen.sort()).toEqual(sparse.filter((t) => t !== gone).sort());
    } finally {
      db.all = all;
    }
  });

  test('a phrase matching few tasks far apart: each once, in order (PostgreSQL gathers them through the search index past the walk, or reads on)', async () => {
    // Oldest to newest: two matches, 2,100 tasks holding one word of it, a match, 100 more, a match.
    const zebra = (id: string, args: unknown[]) => ev('task.received', id, { task_name: 'app.zoo', args });
    const decoys = async (from: number, n: number) => {
      for (let lo = from; lo < from + n; lo += 500) await ingest(Array.from({ length: Math.min(500, from + n - lo) }, (_, k) => zebra(`decoy-${lo + k}`, ['zebra', 'y'])));
    };
    await ingest([zebra('zebra-old-0', ['zebra-42']), zebra('zebra-old-1', [{ tag: 'Zebra 42' }])]);
    await decoys(0, 2100);
    await ingest([zebra('zebra-mid', ['zebra_42'])]);
    await decoys(2100, 100);
    await ingest([zebra('zebra-new', ['ZEBRA-42'])]);
    const db = svc.ctx.db;
    const pg = db.dialect === 'postgres';
    if (pg) await db.run(sql`ANALYZE tasks`);
    const statements: string[] = [];
    // `planned`: what EXPLAIN answers (null: the planner's own plan).
    let planned: unknown = null;
    const all = db.all.bind(db);
    db.all = (async (query: Parameters<typeof db.all>[0]) => {
      const text = JSON.stringify(query);
      statements.push(text);
      if (planned && text.includes('EXPLAIN')) return [{ 'QUERY PLAN': [{ Plan: planned }] }];
      return all(query);
    }) as typeof db.all;
    try {
      const pages = async (query: string) => {
        const out: string[][] = [];
        let limited = 0;
        for (let cursor: string | null = null; out.length < 10; ) {
          const page: any = await get(`/tasks?${query}${cursor ? `&cursor=${q(cursor)}` : ''}`);
          if (page.scan_limited) limited++;
          out.push(ids(page));
          cursor = page.next_cursor;
          if (!cursor) break;
        }
        return { out, limited };
      };
      const order = ['zebra-new', 'zebra-mid', 'zebra-old-1', 'zebra-old-0'];
      const oldest = [...order].reverse();
      const complete = { limited: 0 };
      expect(await pages('q=zebra-42&limit=2')).toEqual({ out: [order.slice(0, 2), order.slice(2)], ...complete });
      expect(await pages('q=zebra-42&limit=3')).toEqual({ out: [order.slice(0, 3), order.slice(3)], ...complete });
      expect(await pages('q=%22zebra%2042%22&state=received&limit=50')).toEqual({ out: [order], ...complete });
      expect(await pages('q=zebra-42&order=asc&limit=3')).toEqual({ out: [oldest.slice(0, 3), oldest.slice(3)], ...complete });
      // Sorted by a column whose index holds every project's tasks: the same matches.
      expect((await pages('q=zebra-42&sort=received_at&limit=50')).out.flat().sort()).toEqual([...order].sort());
      if (!pg) return;
      // PostgreSQL walked a page's budget, asked the planner, and read the rest through the search index
      // (after zebra-mid, 2,100 tasks hold none); where the walk met matches, the planner's walk read on.
      expect([statements.some((t) => t.includes('row_number() OVER ()')), statements.some((t) => t.includes('EXPLAIN'))]).toEqual([true, true]);
      // Where the planner would not read them through the search index, pages end where the walk did and
      // say so; the cursor reads on, and every match still comes once, in order.
      planned = { 'Node Type': 'Seq Scan' };
      const walked = await pages('q=zebra-42&limit=2');
      expect(walked.out.flat()).toEqual(order);
      expect(walked.limited).toBeGreaterThan(0);
      const asc = await pages('q=zebra-42&order=asc&state=received&limit=2');
      expect(asc.out.flat()).toEqual(oldest);
      expect(asc.limited).toBeGreaterThan(0);
    } finally {
      db.all = all;
    }
  });
});
