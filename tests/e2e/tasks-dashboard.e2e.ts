// The task dashboard in a real browser against the compiled dist/svc: the overview's key figures and charts, the
// home across projects, search with highlighted matches (rendered as text, never HTML), sortable columns and a
// saved view (kept by svc: it shows in a fresh browser context of the same user), CSV export of the filter, row selection and a bulk retry with its progress, bulk delete,
// a search and priority retried and deleted as a whole (every match, by the server), failure
// groups and "retry this group", the task tree and raw events, the Ctrl-K palette, worker actions, a queue purge
// with its confirm token, dead letters, and a viewer who sees no action. Its own installation: first boot and MFA
// enrolment go through the API; a long-poll test agent uploads the tasks, a WebSocket test agent (its hello
// advertises celery's actions) answers every command the dashboard causes.
import { expect, test, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { csrfHeaders, firstAdmin, nav, screenshot, signIn, totpOf } from './browser.ts';
import { taskEvent, TestAgent, type WsAgent } from './node-agent.ts';
import { startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };
const VIEWER = { email: 'viewer@example.com', password: 'Quiet-Meadow-Lantern-31', display_name: 'Vera Viewer' };

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let context: BrowserContext;
let page: Page;
let projectId = '';
let totpSecret = '';
let lp: TestAgent; // uploads the tasks and heartbeats
let ws: WsAgent; // answers the commands
const answered: { action: string; payload: Record<string, unknown>; params: Record<string, unknown> }[] = [];
/** The task ids the agent was asked to retry, in order. */
const retried = () => answered.filter((a) => a.action === 'retry_task').map((a) => String(a.params.task_id));
let serving = true;

const table = (name: string, p: Page = page): Locator => p.getByRole('region', { name, exact: true }).getByRole('table');
const bodyRows = (t: Locator): Locator => t.locator('tbody tr');

const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '+00:00');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A task's life as z4j-celery reports it, `minutesAgo` before now, one event per kind a millisecond apart. */
function life(taskId: string, name: string, minutesAgo: number, steps: [string, Record<string, unknown>][], extra: Record<string, unknown> = {}) {
  const start = Date.now() - minutesAgo * 60_000;
  return steps.map(([kind, data], n) =>
    taskEvent({
      task_id: taskId,
      kind,
      occurred_at: iso(start + n),
      data: { task_name: name, queue: 'default', worker: 'w1@host', ...extra, ...data } as never,
    }),
  );
}

const ok = (args: unknown[], runtime: number, kwargs: Record<string, unknown> = {}): [string, Record<string, unknown>][] => [
  ['task.received', { args, kwargs }],
  ['task.started', {}],
  ['task.succeeded', { result: 'ok', runtime_ms: runtime }],
];
const fail = (args: unknown[], exception: string, runtime = 40): [string, Record<string, unknown>][] => [
  ['task.received', { args, kwargs: {} }],
  ['task.started', {}],
  ['task.failed', { exception, traceback: `Traceback (most recent call last):\n  File "app/tasks.py", line 7\n${exception}`, runtime_ms: runtime }],
];

const EVENTS = [
  // Twelve additions over the last 50 minutes, two of them high priority.
  ...Array.from({ length: 12 }, (_, n) => life(`add-${n}`, 'app.tasks.add', 50 - n * 4, ok([n, 2], 10 + n * 5), n < 2 ? { priority: 'high' } : {})).flat(),
  ...life('slow-1', 'app.tasks.slow', 30, ok([], 9000)),
  ...life('report-1', 'app.reports.build', 20, ok(['2026-Q1'], 300, { region: 'zebracorn-north' })),
  // Text that would be markup if it were ever parsed as HTML: it must show as text.
  ...life('echo-1', 'app.tasks.echo', 18, ok(['<img src=x onerror=alert(1)> zebracorn'], 5)),
  // Two failure groups: the connection errors differ only in their numbers.
  ...[3, 5, 7, 9].flatMap((attempts, n) =>
    life(`charge-${n}`, 'app.billing.charge', 40 - n * 7, fail([`INV-${100 + n}`], `ConnectionError: could not reach db-7:5432 after ${attempts} attempts`, 2000 + n)),
  ),
  ...[0, 1].flatMap((n) => life(`refund-${n}`, 'app.billing.refund', 25 - n * 5, fail([n], "KeyError: 'customer'"))),
  // A chain: process -> charge -> ship, and process -> email.
  ...life('order-root', 'app.orders.process', 15, ok([1], 50)),
  ...life('order-charge', 'app.orders.charge', 14, ok([1], 60), { parent_task_id: 'order-root', root_task_id: 'order-root' }),
  ...life('order-ship', 'app.orders.ship', 13, ok([1], 70), { parent_task_id: 'order-charge', root_task_id: 'order-root' }),
  ...life('order-email', 'app.orders.email', 12, ok([1], 80), { parent_task_id: 'order-root', root_task_id: 'order-root' }),
  ...life('running-1', 'app.tasks.long', 2, [['task.received', { args: [] }], ['task.started', {}]]),
];
const TASK_COUNT = 12 + 1 + 1 + 1 + 4 + 2 + 4 + 1;

const ADAPTER_HEALTH = {
  'celery.worker_details': JSON.stringify({
    'w1@host': { stats: { pid: 4242, pool: { 'max-concurrency': 4 } }, active_queues: [{ name: 'default' }, { name: 'emails' }], active: [{}] },
  }),
  'celery.queue_depths': JSON.stringify({ default: 3, emails: 0 }),
};

/** Answers every command the WebSocket agent is sent, after `delay` ms: a retry with a new task id, dead letters
 * with two entries, anything else with success. Heartbeats keep it online meanwhile. */
async function serve(delay = 250) {
  let beat = Date.now();
  while (serving) {
    if (Date.now() - beat > 10_000) {
      ws.send('heartbeat', { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} });
      beat = Date.now();
    }
    let frame;
    try {
      frame = await ws.nextSigned(1000);
    } catch {
      continue;
    }
    if (frame.type !== 'command' || !frame.id) continue;
    const action = String(frame.payload.action);
    const params = (frame.payload.parameters ?? frame.payload.params ?? {}) as Record<string, unknown>;
    answered.push({ action, payload: frame.payload as Record<string, unknown>, params });
    ws.send('command_ack', { delivery_claim_token: null }, frame.id);
    await sleep(delay);
    const result =
      action === 'retry_task'
        ? { new_task_id: `${String(params.task_id ?? 'task')}-retry` }
        : action === 'dlq.list'
          ? {
              engine: 'celery',
              total: 2,
              next_cursor: null,
              entries: [
                { task_id: 'dead-1', task_name: 'app.billing.charge', queue: 'default', failed_at: iso(Date.now() - 600_000), error_excerpt: 'ConnectionError: gave up', attempts: 5 },
                { task_id: 'dead-2', task_name: 'app.mail.send', queue: 'emails', failed_at: iso(Date.now() - 300_000), error_excerpt: 'SMTP 554', attempts: 3 },
              ],
            }
          : { ok: true };
    ws.send('command_result', { status: 'success', result, error: null, delivery_claim_token: null }, frame.id);
  }
}

async function mintAgent(name: string, project = 'default') {
  const minted = await page.request.post(`/api/v1/projects/${project}/agents`, { data: { name }, headers: await csrfHeaders(context) });
  expect(minted.status()).toBe(201);
  const m = await minted.json();
  return new TestAgent({ baseUrl: svc.url, token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId: m.agent.project_id });
}

test.beforeAll(async ({ browser }) => {
  // Statistics kept a week: the 30-day window reaches back further than that, and says so.
  svc = await startSvc({ SVC_STATS_RETENTION_DAYS: '7' });
  context = await browser.newContext({ baseURL: svc.url, acceptDownloads: true });
  page = await context.newPage();
  totpSecret = await firstAdmin(page, svc.setupUrl, ADMIN);
  projectId = (await (await page.request.get('/api/v1/projects/default')).json()).id;

  lp = await mintAgent('uploader');
  expect((await lp.probe()).status).toBe(200);
  const up = await lp.upload([lp.eventBatch(EVENTS), lp.heartbeat({ adapter_health: ADAPTER_HEALTH })]);
  expect(up.body).toMatchObject({ accepted: 2, rejected: 0 });

  const answering = await mintAgent('answerer');
  ws = await answering.connect({
    hello: {
      capabilities: {
        celery: [
          'add_consumer',
          'bulk_retry',
          'cancel_consumer',
          'cancel_task',
          'list_dead_letters',
          'pool_grow',
          'pool_shrink',
          'purge_queue',
          'rate_limit',
          'requeue_dead_letter',
          'restart_worker',
          'retry_by_reference_v1',
          'retry_task',
        ],
      },
    },
  });
  expect(ws.helloAck?.type).toBe('hello_ack');
  void serve();
  expect(projectId).toMatch(/^[0-9a-f-]{36}$/);
});

test.afterAll(async () => {
  serving = false;
  ws?.close();
  await context?.close();
  await svc?.stop();
});

test('the overview shows key figures, attention, the failing tasks and the charts over the picked window', async () => {
  await page.goto('/projects/default');
  const glance = page.getByRole('region', { name: 'At a glance' });
  // Every task but the long one has finished; six of them failed.
  await expect(glance.getByTestId('kpi-finished')).toContainText(String(TASK_COUNT - 1));
  await expect(glance.getByTestId('kpi-failure-rate')).toContainText(`6 failed of ${TASK_COUNT - 1}`);
  await expect(glance.getByTestId('kpi-failure-rate')).toContainText('24 %');
  await expect(glance.getByTestId('kpi-agents')).toContainText('of 2');
  await expect(glance.getByTestId('kpi-workers')).toContainText('1 of 1');
  await expect(page.getByRole('region', { name: 'Failing tasks' }).getByRole('row', { name: /app\.billing\.charge/ })).toContainText('100 %');
  await expect(page.getByRole('list', { name: 'Needs attention' })).toContainText('app.billing.charge');
  // The latest ten tasks, each linking to its page; state changes named as what they count.
  const recent = page.getByRole('region', { name: 'Recent tasks' }).getByTestId('recent-tasks');
  await expect(recent.getByRole('row')).toHaveCount(1 + 10);
  await expect(recent.getByRole('link').first()).toHaveAttribute('href', /\/projects\/default\/tasks\//);
  await expect(page.getByRole('region', { name: 'State changes in the last 24 hours' })).toContainText('failed');
  const trends = page.getByRole('region', { name: 'Trends' });
  for (const chart of ['chart-throughput', 'chart-failure-rate', 'chart-runtime']) {
    await expect(trends.getByTestId(chart).getByRole('img')).toBeVisible();
  }
  await expect(trends.getByTestId('chart-throughput').getByRole('img')).toHaveAttribute('aria-label', /Tasks finished a minute, 96 buckets/);
  // Another window: one-minute buckets over the last hour, in the address.
  await glance.getByText('1h', { exact: true }).click();
  await expect(page).toHaveURL(/window=1h/);
  await expect(trends.getByTestId('chart-throughput').getByRole('img')).toHaveAttribute('aria-label', /60 buckets/);
  await expect(glance.getByTestId('kpi-finished')).toContainText(String(TASK_COUNT - 1));
  // The pointer reads a bucket out.
  const svg = trends.getByTestId('chart-runtime').getByRole('img');
  const box = (await svg.boundingBox())!;
  await svg.hover({ position: { x: box.width * 0.6, y: box.height / 2 } });
  await expect(trends.getByTestId('chart-runtime').locator('.chart-readout')).toContainText('p95');
  await screenshot(page, 'tasks-overview');
  // Thirty days reach back before the week of statistics kept: the figures and the charts say from when they count.
  await glance.getByText('30d', { exact: true }).click();
  await expect(page).toHaveURL(/window=30d/);
  await expect(glance.getByTestId('stats-partial')).toContainText('are no longer kept');
  await expect(trends.getByTestId('chart-partial')).toContainText('are no longer kept');
  await glance.getByText('7d', { exact: true }).click();
  await expect(page).toHaveURL(/window=7d/);
  await expect(trends.getByTestId('chart-throughput').getByRole('img')).toHaveAttribute('aria-label', /168 buckets/);
  await expect(page.getByTestId('stats-partial')).toHaveCount(0);
  await expect(page.getByTestId('chart-partial')).toHaveCount(0);
});

test('home: every project at a glance, with totals, attention and charts', async () => {
  // A second project with an agent of its own and two tasks, one failed.
  const created = await page.request.post('/api/v1/projects', { data: { slug: 'billing', name: 'Billing' }, headers: await csrfHeaders(context) });
  expect(created.status()).toBe(201);
  const ledger = await mintAgent('ledger', 'billing');
  const up = await ledger.upload([
    ledger.eventBatch([...life('post-1', 'app.ledger.post', 10, ok([1], 20)), ...life('post-2', 'app.ledger.post', 8, fail([2], 'ValueError: bad amount'))]),
  ]);
  expect(up.body).toMatchObject({ accepted: 1, rejected: 0 });

  await page.goto('/projects/default');
  await nav(page, 'Home').click();
  await expect(page).toHaveURL(/\/home$/);
  await expect(page.getByTestId('home-projects')).toContainText('2');
  await expect(page.getByTestId('home-finished')).toContainText(String(TASK_COUNT - 1 + 2));
  await expect(page.getByTestId('home-failure-rate')).toContainText('7 failed');
  const projects = table('Projects');
  await expect(bodyRows(projects)).toHaveCount(2);
  await expect(projects.getByRole('row', { name: /Default/ })).toContainText('24 %');
  await expect(projects.getByRole('row', { name: /Billing/ })).toContainText('50 %');
  await expect(page.getByRole('list', { name: 'Needs attention' })).toContainText('Default');
  // The charts sum both projects: 27 tasks finished in the window.
  await expect(page.getByTestId('home-chart-throughput').getByRole('img')).toBeVisible();
  await expect(page.getByTestId('home-chart-runtime').getByRole('img')).toHaveAttribute('aria-label', /Default at most .*Billing at most/);
  await screenshot(page, 'tasks-home');
  await page.getByText('30d', { exact: true }).click();
  await expect(page.getByTestId('home-partial')).toContainText('are no longer kept');
  await expect(page.getByTestId('home-chart-partial')).toContainText('are no longer kept');
  await page.getByText('1h', { exact: true }).click();
  await expect(page).toHaveURL(/\/home\?window=1h$/);
  await expect(page.getByTestId('home-chart-throughput').getByRole('img')).toHaveAttribute('aria-label', /60 buckets/);
  await expect(page.getByTestId('home-chart-partial')).toHaveCount(0);
  await projects.getByRole('link', { name: 'Billing' }).click();
  await expect(page).toHaveURL(/\/projects\/billing\?window=1h$/);
  await expect(page.getByTestId('kpi-finished')).toContainText('2');
});

test('search highlights the matches in arguments and exceptions, as text', async () => {
  await page.goto('/projects/default/tasks');
  const tasks = table('Tasks');
  await expect(bodyRows(tasks)).toHaveCount(TASK_COUNT);
  const filters = page.getByRole('form', { name: 'Filter the tasks' });
  await filters.getByLabel('Search tasks').fill('zebracorn');
  await filters.getByLabel('Search tasks').press('Enter');
  await expect(page).toHaveURL(/q=zebracorn/);
  await expect(bodyRows(tasks)).toHaveCount(2);
  const echo = tasks.getByRole('row', { name: /app\.tasks\.echo/ });
  await expect(echo.locator('mark')).toHaveText('zebracorn');
  await expect(echo.getByTestId('search-match')).toContainText('<img src=x onerror=alert(1)>');
  await expect(tasks.locator('img')).toHaveCount(0); // the text was never parsed as markup
  await expect(tasks.getByRole('row', { name: /app\.reports\.build/ }).locator('mark')).toHaveText('zebracorn');
  // A search is retried (or deleted) as a whole like any filter (the last test does both).
  const bar = page.getByRole('region', { name: 'Bulk actions' });
  await expect(bar.getByRole('button', { name: 'Retry every task matching the search…' })).toBeVisible();
  await expect(bar.getByRole('button', { name: 'Delete every task matching the search…' })).toBeVisible();
  await screenshot(page, 'tasks-search');

  await filters.getByLabel('Search tasks').fill('ConnectionError');
  await filters.getByLabel('Search tasks').press('Enter');
  await expect(bodyRows(tasks)).toHaveCount(4);
  await expect(bodyRows(tasks).first().getByTestId('search-match')).toContainText('exception');
  await expect(bodyRows(tasks).first().locator('mark').first()).toHaveText(/ConnectionError/i);

  await filters.getByLabel('Search tasks').fill('');
  await filters.getByLabel('Priority').selectOption('high');
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(bodyRows(tasks)).toHaveCount(2);
  await expect(bar.getByRole('button', { name: 'Retry every task matching the filters…' })).toBeVisible();
  await filters.getByRole('button', { name: 'Clear filters' }).click();
  await expect(bodyRows(tasks)).toHaveCount(TASK_COUNT);
});

test('sortable columns, and a saved view that brings filters and sort back', async () => {
  const tasks = table('Tasks');
  await tasks.getByRole('button', { name: 'Run time' }).click();
  await expect(page).toHaveURL(/sort=runtime_ms&order=desc/);
  await expect(tasks.getByRole('columnheader', { name: /Run time/ })).toHaveAttribute('aria-sort', 'descending');
  await expect(bodyRows(tasks).first()).toContainText('app.tasks.slow');
  await tasks.getByRole('button', { name: 'Run time' }).click();
  await expect(page).toHaveURL(/order=asc/);
  await expect(bodyRows(tasks).first()).toContainText('app.tasks.echo'); // 5 ms
  await tasks.getByRole('button', { name: 'Task' }).click();
  await expect(page).toHaveURL(/sort=name&order=asc/);
  await expect(bodyRows(tasks).first()).toContainText('app.billing.charge');

  // State success, slowest first, saved as a view.
  await tasks.getByRole('button', { name: 'Run time' }).click();
  const filters = page.getByRole('form', { name: 'Filter the tasks' });
  await filters.getByLabel('State').selectOption('success');
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/state=success&sort=runtime_ms&order=desc/);
  await page.getByRole('button', { name: 'Save view…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Save this view' });
  await dialog.getByLabel('View name').fill('Slowest successes');
  await dialog.getByRole('button', { name: 'Save view' }).click();
  const views = page.getByRole('navigation', { name: 'Saved views' });
  await expect(views.getByRole('link', { name: 'Slowest successes' })).toHaveAttribute('aria-current', 'page');
  await screenshot(page, 'tasks-sorted-view');

  await page.goto('/projects/default/tasks');
  await expect(bodyRows(tasks)).toHaveCount(TASK_COUNT);
  await views.getByRole('link', { name: 'Slowest successes' }).click();
  await expect(page).toHaveURL(/state=success&sort=runtime_ms&order=desc/);
  await expect(bodyRows(tasks).first()).toContainText('app.tasks.slow');
  await expect(bodyRows(tasks)).toHaveCount(TASK_COUNT - 7);
  // Kept by svc: still there after a reload.
  await page.reload();
  await expect(views.getByRole('link', { name: 'Slowest successes' })).toBeVisible();
});

test('a saved view follows the user to another browser; views an older dashboard kept in the browser are uploaded once', async ({ browser }) => {
  const other = await browser.newContext({ baseURL: svc.url });
  try {
    const tab = await other.newPage();
    await tab.goto('/projects/default/tasks');
    await expect(tab).toHaveURL(/\/login\?next=/);
    await signIn(tab, ADMIN, () => totpOf(totpSecret));
    await expect(tab).toHaveURL(/\/projects\/default\/tasks$/);
    const views = tab.getByRole('navigation', { name: 'Saved views' });
    await views.getByRole('link', { name: 'Slowest successes' }).click();
    await expect(tab).toHaveURL(/state=success&sort=runtime_ms&order=desc/);
    await expect(bodyRows(table('Tasks', tab))).toHaveCount(TASK_COUNT - 7);

    // What this browser kept before svc stored views: uploaded on the next load, then gone from the browser.
    const me = await (await tab.request.get('/api/v1/auth/me')).json();
    const legacy = `svc.views.${me.id}.default`;
    await tab.evaluate(
      ([key]) => localStorage.setItem(key!, JSON.stringify([{ name: 'Old failures', query: 'state=failure' }, { name: 'Slowest successes', query: 'state=retry' }])),
      [legacy],
    );
    await tab.goto('/projects/default/tasks');
    await expect(views.getByRole('link', { name: 'Old failures' })).toHaveAttribute('href', '/projects/default/tasks?state=failure');
    // A name svc already had keeps svc's view.
    await expect(views.getByRole('link', { name: 'Slowest successes' })).toHaveAttribute('href', /state=success/);
    expect(await tab.evaluate(([key]) => localStorage.getItem(key!), [legacy])).toBeNull();

    // Deleted here, gone in the first browser too.
    await views.getByRole('button', { name: 'Delete view Old failures' }).click();
    await expect(views.getByRole('link', { name: 'Old failures' })).toHaveCount(0);
  } finally {
    await other.close();
  }
  await page.goto('/projects/default/tasks');
  const views = page.getByRole('navigation', { name: 'Saved views' });
  await expect(views.getByRole('link', { name: 'Slowest successes' })).toBeVisible();
  await expect(views.getByRole('link', { name: 'Old failures' })).toHaveCount(0);
});

/** Cells of a CSV (RFC 4180: quoted cells with "" inside and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

test('the export link downloads the filtered rows as CSV', async () => {
  await page.goto('/projects/default/tasks?state=failure');
  await expect(bodyRows(table('Tasks'))).toHaveCount(6);
  const link = page.getByRole('link', { name: 'Export CSV' });
  await expect(link).toHaveAttribute('href', /\/tasks\/export\.csv\?state=failure$/);
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  expect(download.suggestedFilename()).toMatch(/^tasks-default-.*\.csv$/);
  const rows = parseCsv(readFileSync((await download.path())!, 'utf8'));
  const [header, ...data] = rows;
  expect(data).toHaveLength(6);
  const state = header!.indexOf('state');
  const name = header!.indexOf('name');
  expect(data.every((r) => r[state] === 'failure')).toBe(true);
  expect(data.map((r) => r[name]).sort()).toEqual([...Array(4).fill('app.billing.charge'), 'app.billing.refund', 'app.billing.refund']);

  // An export svc refuses (here: a user's third at once) is said on the page, not left as a broken download.
  await page.route(/\/tasks\/export\.csv\?/, (r) =>
    r.fulfill({ status: 429, contentType: 'application/json', headers: { 'retry-after': '10' }, body: JSON.stringify({ error: 'too_many_exports', message: '2 exports of yours are still running; wait for one to finish', details: { limit: 2 }, request_id: 'e2e' }) }),
  );
  let downloads = 0;
  page.on('download', () => downloads++);
  await link.click();
  await expect(page.getByRole('alert')).toContainText('The export did not start: 2 exports of yours are still running');
  expect(downloads).toBe(0);
  await page.unroute(/\/tasks\/export\.csv\?/);
});

test('rows selected and retried as a bulk job, its progress shown until every retry is answered', async () => {
  await page.goto('/projects/default/tasks?state=failure&name=refund');
  const tasks = table('Tasks');
  await expect(bodyRows(tasks)).toHaveCount(2);
  await tasks.getByRole('checkbox', { name: 'Select every task shown' }).check();
  const bar = page.getByRole('region', { name: 'Bulk actions' });
  await expect(bar).toContainText('2 tasks selected');
  await bar.getByRole('button', { name: 'Retry selected' }).click();
  await page.getByRole('dialog', { name: 'Retry 2 tasks?' }).getByRole('button', { name: 'Start bulk retry' }).click();
  const job = page.getByRole('region', { name: 'Bulk retry' });
  await expect(job.getByRole('progressbar')).toBeVisible();
  await screenshot(page, 'tasks-bulk-retry-running');
  await expect(job.getByTestId('bulk-progress')).toContainText('2 of 2 tasks done: 2 succeeded', { timeout: 20_000 });
  await expect(job).toContainText('completed');
  await expect(job.getByRole('progressbar')).toHaveAttribute('value', '2');
  await screenshot(page, 'tasks-bulk-retry-done');
  expect(retried().sort()).toEqual(['refund-0', 'refund-1']);

  // The Bulk jobs page lists it with its items.
  await nav(page, 'Bulk jobs').click();
  const jobs = table('Bulk jobs');
  await expect(bodyRows(jobs).first()).toContainText('completed');
  await jobs.getByRole('button', { name: 'Tasks' }).first().click();
  await expect(jobs.locator('tr.expanded').getByRole('row', { name: /refund-0/ })).toContainText('succeeded');
  await screenshot(page, 'tasks-bulk-jobs');
});

test('a project admin deletes selected tasks from svc behind a confirmation', async () => {
  await page.goto('/projects/default/tasks?q=zebracorn');
  const tasks = table('Tasks');
  await expect(bodyRows(tasks)).toHaveCount(2);
  await tasks.getByRole('checkbox', { name: /Select app\.tasks\.echo/ }).check();
  await page.getByRole('region', { name: 'Bulk actions' }).getByRole('button', { name: 'Delete selected…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete 1 task from svc?' });
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await dialog.getByRole('button', { name: 'Delete tasks' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Deleted 1 task and 3 events from svc.' })).toBeVisible();
  await expect(bodyRows(tasks)).toHaveCount(1);
});

test('failure groups: grouped by exception and message, and "retry this group" starts a job with progress', async () => {
  // A week of statistics kept (this file's setting): a 30-day window says so, the default one does not.
  await page.goto('/projects/default/failures?window=30d');
  await expect(page.getByTestId('failures-partial')).toContainText('are no longer kept');
  await nav(page, 'Failure groups').click();
  await expect(table('Failure groups').getByRole('row', { name: /ConnectionError/ })).toBeVisible();
  await expect(page.getByTestId('failures-partial')).toHaveCount(0);
  const groups = table('Failure groups');
  const charge = groups.getByRole('row', { name: /ConnectionError/ });
  await expect(charge).toContainText('could not reach db');
  await expect(charge).toContainText('app.billing.charge');
  await expect(charge.locator('td').nth(1)).toContainText('4');
  await expect(charge.getByRole('img', { name: /^Failures per/ })).toBeVisible();
  await expect(charge.locator('time')).toHaveCount(2); // first and last seen
  await expect(groups.getByRole('row', { name: /KeyError/ }).locator('td').nth(1)).toContainText('2');
  await charge.getByRole('button', { name: 'Show tasks' }).click();
  // At a laptop's width the groups fit the page: nothing to scroll sideways to reach the buttons.
  const wrap = page.getByRole('region', { name: 'Failure groups', exact: true }).locator('.table-wrap').first();
  expect(await wrap.evaluate((e) => e.scrollWidth - e.clientWidth)).toBeLessThanOrEqual(0);
  await expect(groups.getByRole('link', { name: 'app.billing.charge' })).toHaveCount(5); // 4 tasks + the name
  await charge.getByRole('button', { name: /Retry this group/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Retry this failure group?' });
  await expect(dialog).toContainText('ConnectionError');
  await dialog.getByRole('button', { name: 'Start bulk retry' }).click();
  const job = page.getByRole('region', { name: 'Retry of ConnectionError' });
  await expect(job.getByRole('progressbar')).toBeVisible();
  await expect(job.getByTestId('bulk-progress')).toContainText('4 of 4 tasks done: 4 succeeded', { timeout: 20_000 });
  await screenshot(page, 'tasks-failure-groups');
  // The job's filter is the group (the server picked its four tasks), and each was retried once.
  expect(retried().slice(2).sort()).toEqual(['charge-0', 'charge-1', 'charge-2', 'charge-3']);
  await nav(page, 'Bulk jobs').click();
  await expect(bodyRows(table('Bulk jobs')).first()).toContainText(/failure group [0-9a-f]{16}, state failure/);
});

test("the task page shows the tree of its chain and the task's raw events", async () => {
  await page.goto('/projects/default/tasks/celery/order-ship');
  const tree = page.getByRole('list', { name: 'Task tree' });
  await expect(tree.getByRole('listitem')).toHaveCount(4);
  await expect(tree.locator('[aria-current="page"]')).toHaveText('app.orders.ship');
  // ship sits under charge, which sits under process.
  const charge = tree.locator('li', { has: page.locator(':scope > .tree-node', { hasText: 'app.orders.charge' }) });
  await expect(charge.locator(':scope > ul > li')).toHaveText([/app\.orders\.ship/]);
  const root = tree.locator(':scope > li');
  await expect(root).toHaveCount(1);
  await expect(root.locator(':scope > ul > li')).toHaveCount(2); // charge and email
  await tree.getByRole('link', { name: 'app.orders.process' }).click();
  await expect(page).toHaveURL(/\/tasks\/celery\/order-root$/);
  await expect(page.getByRole('list', { name: 'Task tree' }).locator('[aria-current="page"]')).toHaveText('app.orders.process');

  await page.getByRole('button', { name: 'Show raw events' }).click();
  const raw = page.getByRole('list', { name: 'Raw events' });
  await expect(raw.getByRole('listitem')).toHaveCount(3);
  await expect(raw.getByRole('listitem').first()).toContainText('task.received');
  await page.getByLabel('Order of the raw events').selectOption('desc');
  await expect(raw.getByRole('listitem').first()).toContainText('task.succeeded');
  await screenshot(page, 'tasks-tree-raw-events');

  await page.goto('/projects/default/tasks/celery/slow-1');
  await expect(page.getByTestId('task-tree-none')).toBeVisible();
});

test('Ctrl-K jumps to a task by its id, a page, another project, an agent of the first and a worker', async () => {
  await page.goto('/projects/default');
  await expect(page.getByTestId('kpi-finished')).toBeVisible(); // the app is running
  const palette = page.getByRole('dialog', { name: 'Jump to' });
  const input = palette.getByRole('combobox');
  // Pressed until the palette opens (Ctrl-K only ever opens it): a press landing while the page just
  // navigated to is still rendering was lost once in a full run, and the palette never opened.
  const openPalette = () =>
    expect(async () => {
      await page.keyboard.press('Control+k');
      await expect(palette).toBeVisible({ timeout: 2000 });
    }).toPass({ timeout: 15_000 });
  await openPalette();
  await expect(input).toBeFocused();
  await input.fill('order-email');
  await expect(palette.getByRole('option').first()).toContainText('app.orders.email');
  await screenshot(page, 'tasks-palette');
  await input.press('Enter');
  await expect(page).toHaveURL(/\/projects\/default\/tasks\/celery\/order-email$/);
  await expect(palette).toBeHidden();

  await openPalette();
  await input.fill('failure groups');
  await expect(palette.getByRole('option').first()).toContainText('Failure groups');
  await input.press('Enter');
  await expect(page).toHaveURL(/\/projects\/default\/failures$/);

  // Another project, then an agent of the first from there.
  await openPalette();
  await input.fill('billing');
  await expect(palette.getByRole('option').first()).toContainText('project');
  await input.press('Enter');
  await expect(page).toHaveURL(/\/projects\/billing$/);
  await openPalette();
  await input.fill('answerer');
  await expect(palette.getByRole('option').first()).toContainText(/agent\s*answerer/);
  await input.press('Enter');
  await expect(page).toHaveURL(/\/projects\/default\/agents\/[0-9a-f-]{36}$/);
  await expect(page.getByRole('heading', { name: 'Agent answerer' })).toBeVisible();

  await page.getByRole('button', { name: /Jump to/ }).click();
  await input.fill('w1@host');
  await expect(palette.getByRole('option', { name: /worker\s*w1@host/ })).toBeVisible();
  await palette.getByRole('option', { name: /worker\s*w1@host/ }).click();
  await expect(page).toHaveURL(/\/projects\/default\/workers\/[0-9a-f-]{36}$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Default: Worker');
});

test('worker actions go through confirmation dialogs and their commands are watched to the answer', async () => {
  await expect(page.getByTestId('worker-concurrency')).toHaveText('4');
  await page.getByRole('button', { name: 'Restart…' }).click();
  const restart = page.getByRole('dialog', { name: 'Restart w1@host?' });
  await expect(restart).toContainText('Tasks running on it may be interrupted');
  await restart.getByRole('button', { name: 'Restart worker' }).click();
  const sent = table('Commands sent from this page');
  await expect(sent.getByRole('row', { name: /restart_worker/ })).toContainText('completed', { timeout: 10_000 });

  await page.getByRole('button', { name: 'Resize pool…' }).click();
  const resize = page.getByRole('dialog', { name: 'Resize the pool of w1@host' });
  await resize.getByLabel('Change').selectOption('size');
  await resize.getByLabel('Processes').fill('8');
  await resize.getByRole('button', { name: 'Resize pool' }).click();
  await expect(sent.getByRole('row', { name: /pool_grow/ })).toContainText('completed', { timeout: 10_000 });

  await page.getByRole('button', { name: 'Rate limit…' }).click();
  const limit = page.getByRole('dialog', { name: 'Set a rate limit on w1@host' });
  await limit.getByLabel('Task name').fill('app.billing.charge');
  await limit.getByLabel('Rate').fill('10/m');
  await limit.getByRole('button', { name: 'Set rate limit' }).click();
  await expect(sent.getByRole('row', { name: /rate_limit/ })).toContainText('completed', { timeout: 10_000 });

  await page.getByRole('button', { name: 'Cancel consumer…' }).click();
  const cancel = page.getByRole('dialog', { name: 'Make w1@host stop consuming a queue' });
  await cancel.getByLabel('Queue').selectOption('emails');
  await cancel.getByRole('button', { name: 'Cancel consumer' }).click();
  await expect(sent.getByRole('row', { name: /cancel_consumer/ })).toContainText('completed', { timeout: 10_000 });
  await screenshot(page, 'tasks-worker-actions');
  const resized = answered.find((a) => a.action === 'pool_grow')!;
  expect(JSON.stringify(resized.payload)).toContain('"delta":4');
});

test('a project admin purges a queue through the two-step confirm token', async () => {
  await nav(page, 'Queues').click();
  await table('Queues').getByRole('button', { name: 'Purge default' }).click();
  const dialog = page.getByRole('dialog', { name: 'Purge queue default?' });
  await expect(dialog.getByTestId('purge-depth')).toHaveText('3 tasks');
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await screenshot(page, 'tasks-queue-purge');
  await dialog.getByRole('button', { name: 'Purge 3 tasks' }).click();
  await expect(table('Commands sent from this page').getByRole('row', { name: /purge_queue/ })).toContainText('completed', { timeout: 10_000 });
  const purge = answered.find((a) => a.action === 'purge_queue')!;
  expect(JSON.stringify(purge.payload)).toMatch(/"confirm_token":"[0-9a-f]{64}"/);
});

test('dead letters: listed by a command, then one requeued behind a confirmation', async () => {
  await nav(page, 'Dead letters').click();
  await page.getByRole('button', { name: 'List dead letters' }).click();
  await expect(page.getByTestId('dlq-status')).toContainText('completed', { timeout: 10_000 });
  const letters = table('Dead letters of celery');
  await expect(bodyRows(letters)).toHaveCount(2);
  await letters.getByRole('button', { name: 'Requeue app.mail.send' }).click();
  await page.getByRole('dialog', { name: 'Requeue app.mail.send?' }).getByRole('button', { name: 'Requeue task' }).click();
  await expect(table('Commands sent from this page').getByRole('row', { name: /requeue_dead_letter/ })).toContainText('completed', { timeout: 10_000 });
  await screenshot(page, 'tasks-dead-letters');
});

test('a viewer sees the same pages without any action button', async ({ browser }) => {
  const created = await page.request.post('/api/v1/users', { data: { ...VIEWER }, headers: await csrfHeaders(context) });
  expect(created.status()).toBe(201);
  const joined = await page.request.post('/api/v1/projects/default/memberships', {
    data: { user_id: (await created.json()).id, role: 'viewer' },
    headers: await csrfHeaders(context),
  });
  expect(joined.status()).toBe(201);
  const other = await browser.newContext({ baseURL: svc.url });
  try {
    const tab = await other.newPage();
    expect((await tab.request.post('/api/v1/auth/login', { data: { email: VIEWER.email, password: VIEWER.password } })).status()).toBe(200);
    await tab.goto('/projects/default/tasks?state=failure');
    await expect(bodyRows(table('Tasks', tab))).toHaveCount(6);
    await expect(tab.getByRole('checkbox')).toHaveCount(0);
    await expect(tab.getByRole('region', { name: 'Bulk actions' })).toHaveCount(0);
    await expect(tab.getByRole('link', { name: 'Export CSV' })).toBeVisible(); // reading is theirs
    await expect(nav(tab, 'Dead letters')).toHaveCount(0);
    await screenshot(tab, 'tasks-viewer');

    await nav(tab, 'Failure groups').click();
    await expect(table('Failure groups', tab).getByRole('row', { name: /ConnectionError/ })).toBeVisible();
    await expect(tab.getByRole('button', { name: /Retry this group/ })).toHaveCount(0);

    await tab.goto('/projects/default/tasks/celery/charge-0');
    await expect(tab.getByTestId('task-state')).toHaveText('failure');
    await expect(tab.getByRole('button', { name: 'Retry', exact: true })).toHaveCount(0);

    await nav(tab, 'Workers').click();
    await table('Workers', tab).getByRole('link', { name: 'w1@host', exact: true }).click();
    await expect(tab.getByTestId('worker-state')).toHaveText('online');
    for (const name of ['Restart…', 'Resize pool…', 'Add consumer…', 'Rate limit…']) await expect(tab.getByRole('button', { name })).toHaveCount(0);

    await nav(tab, 'Queues').click();
    await expect(bodyRows(table('Queues', tab))).toHaveCount(2);
    await expect(tab.getByRole('button', { name: /Purge/ })).toHaveCount(0);

    await nav(tab, 'Bulk jobs').click();
    await expect(bodyRows(table('Bulk jobs', tab))).toHaveCount(2);
    await expect(tab.getByRole('button', { name: 'Abort' })).toHaveCount(0);

    // The server refuses them all the same.
    const refused = await tab.request.post('/api/v1/projects/default/bulk-jobs', {
      data: { kind: 'retry', filter: { state: 'failure' } },
      headers: await csrfHeaders(other),
    });
    expect(refused.status()).toBe(403);
  } finally {
    await other.close();
  }
});

test('the task pages in dark mode and on a narrow screen', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto('/projects/default');
  await expect(page.getByTestId('kpi-finished')).toBeVisible();
  await expect(page.getByTestId('chart-throughput')).toBeVisible();
  await screenshot(page, 'tasks-overview-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/projects/default/tasks?q=ConnectionError');
  await expect(bodyRows(table('Tasks'))).toHaveCount(4);
  await screenshot(page, 'tasks-search-narrow');
  await page.setViewportSize({ width: 1280, height: 720 });
});

test("a new project's task pages before anything ran: each says so and what to do, with no error", async () => {
  const created = await page.request.post('/api/v1/projects', { data: { slug: 'quiet', name: 'Quiet' }, headers: await csrfHeaders(context) });
  expect(created.status()).toBe(201);
  const region = (name: string | RegExp) => page.getByRole('region', { name });
  await page.goto('/projects/quiet');
  await expect(region('Trends')).toContainText('Nothing finished in this window');
  await expect(region('Failing tasks')).toContainText('No task is failing often');
  await expect(region('Recent tasks')).toContainText('No tasks yet');
  await expect(page.locator('.notice.error')).toHaveCount(0);
  await screenshot(page, 'tasks-empty-overview');
  const pages: [string, string, string][] = [
    ['tasks', 'No tasks yet', 'tasks-empty-list'],
    ['failures', 'No failures in the last 24 hours', 'tasks-empty-failures'],
    ['bulk-jobs', 'No bulk jobs yet', 'tasks-empty-bulk-jobs'],
  ];
  for (const [path, says, shot] of pages) {
    await page.goto(`/projects/quiet/${path}`);
    await expect(page.getByText(says)).toBeVisible();
    await expect(page.locator('.notice.error')).toHaveCount(0);
    await screenshot(page, shot);
  }
});

test('a search narrowed by priority retried as a whole, then every match of the search deleted: the tasks the search finds, by the server', async () => {
  // A word in the exceptions of three failures and in the arguments of a fourth task; a fifth fails otherwise.
  const feeds = [
    ...[0, 1, 2].flatMap((n) => life(`yak-${n}`, 'app.feeds.pull', 6 - n, fail([n], 'IOError: feed yakfarm unreadable'), n < 2 ? { priority: 'high' } : {})),
    ...life('yak-args', 'app.feeds.parse', 3, ok(['yakfarm-9'], 20)),
    ...life('llama-1', 'app.feeds.pull', 2, fail([9], 'IOError: feed llama unreadable'), { priority: 'high' }),
  ];
  expect((await lp.upload([lp.eventBatch(feeds)])).body).toMatchObject({ accepted: 1, rejected: 0 });
  const before = retried().length;
  await page.goto('/projects/default/tasks?q=yakfarm&priority=high');
  const tasks = table('Tasks');
  await expect(bodyRows(tasks)).toHaveCount(2);
  const bar = page.getByRole('region', { name: 'Bulk actions' });
  await bar.getByRole('button', { name: 'Retry every task matching the search and filters…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Retry every task matching the search and filters?' });
  await expect(dialog).toContainText('not only the rows shown');
  await dialog.getByRole('button', { name: 'Start bulk retry' }).click();
  const job = page.getByRole('region', { name: 'Bulk retry' });
  await expect(job.getByTestId('bulk-progress')).toContainText('2 of 2 tasks done: 2 succeeded', { timeout: 20_000 });
  expect(retried().slice(before).sort()).toEqual(['yak-0', 'yak-1']);
  await screenshot(page, 'tasks-search-retry-all');
  await nav(page, 'Bulk jobs').click();
  await expect(bodyRows(table('Bulk jobs')).first()).toContainText('search “yakfarm”, priority high');

  await page.goto('/projects/default/tasks?q=yakfarm');
  await expect(bodyRows(tasks)).toHaveCount(4);
  await bar.getByRole('button', { name: 'Delete every task matching the search…' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete every task matching the search from svc?' });
  await expect(confirm).toContainText('Every task the search matches goes');
  await expect(confirm.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await confirm.getByRole('button', { name: 'Delete tasks' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Deleted 4 tasks and 12 events from svc.' })).toBeVisible();
  await expect(page.getByText('No task matches this search')).toBeVisible();
  await page.goto('/projects/default/tasks?q=llama');
  await expect(bodyRows(tasks)).toHaveCount(1);
});
