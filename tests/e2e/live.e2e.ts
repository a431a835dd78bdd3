// Live updates in a real browser against the compiled dist/svc: the task list open in a tab shows a task an
// agent uploads without a reload, within a second of the upload, and its row changes in place when the task
// finishes, a row further down than the first page too; a filter matching only old tasks reads on and then
// offers to look further. Its own installation; first boot, MFA enrolment and the agent go through the API.
import { expect, test, type BrowserContext, type Page } from '@playwright/test';
import { csrfHeaders, firstAdmin, screenshot } from './browser.ts';
import { taskEvent, TestAgent } from './node-agent.ts';
import { startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };

let svc: Svc;
let context: BrowserContext;
let page: Page;
let agent: TestAgent;

test.beforeAll(async ({ browser }) => {
  svc = await startSvc();
  context = await browser.newContext({ baseURL: svc.url });
  page = await context.newPage();
  await firstAdmin(page, svc.setupUrl, ADMIN);
  const minted = await page.request.post('/api/v1/projects/default/agents', { data: { name: 'live-agent' }, headers: await csrfHeaders(context) });
  expect(minted.status()).toBe(201);
  const m = await minted.json();
  agent = new TestAgent({ baseUrl: svc.url, token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId: m.agent.project_id });
  expect((await agent.probe()).status).toBe(200);
  // One task already there, so the list is a table from the start.
  expect((await agent.upload([agent.eventBatch([taskEvent({ task_id: 'first-task', kind: 'task.received', data: { task_name: 'app.tasks.first' } })])])).status).toBe(200);
});

test.afterAll(async () => {
  await context?.close();
  await svc?.stop();
});

test('the task list shows a task uploaded meanwhile within a second, without a reload, and updates its row in place', async () => {
  let liveSocket = false;
  page.on('websocket', (ws) => {
    if (ws.url().endsWith('/api/v1/live')) liveSocket = true;
  });
  await page.goto('/projects/default/tasks');
  const table = page.getByRole('region', { name: 'Tasks', exact: true }).getByRole('table');
  await expect(table.getByRole('row', { name: /app\.tasks\.first/ })).toBeVisible();
  let navigations = 0;
  page.on('framenavigated', () => navigations++);
  // The stream is open and the project subscribed: the list says so.
  await expect(page.getByTestId('live-state')).toHaveText('Live');
  expect(liveSocket).toBe(true);

  const uploaded = Date.now();
  const up = await agent.upload([
    agent.eventBatch([taskEvent({ task_id: 'live-task-1', kind: 'task.received', data: { task_name: 'app.billing.send_invoice', queue: 'emails' } })]),
  ]);
  expect(up.body).toMatchObject({ accepted: 1 });
  const row = table.getByRole('row', { name: /app\.billing\.send_invoice/ });
  await expect(row).toBeVisible({ timeout: 1000 });
  const shownAfter = Date.now() - uploaded;
  expect(shownAfter).toBeLessThan(1000);
  await expect(row).toContainText('received');
  await screenshot(page, 'live-task-list');

  // The same row changes in place when the task succeeds (no second row, no reload).
  await agent.upload([agent.eventBatch([taskEvent({ task_id: 'live-task-1', kind: 'task.succeeded', data: { task_name: 'app.billing.send_invoice', queue: 'emails', runtime_ms: 42 } })])]);
  await expect(row).toContainText('success', { timeout: 3000 });
  await expect(table.getByRole('row', { name: /app\.billing\.send_invoice/ })).toHaveCount(1);
  expect(navigations).toBe(0);
  test.info().annotations.push({ type: 'shown after upload', description: `${shownAfter} ms` });
});

test('with the stream refused, the list says Polling and still shows a task uploaded meanwhile, by its poll', async ({ browser }) => {
  const other = await browser.newContext({ baseURL: svc.url, storageState: await context.storageState() });
  const tab = await other.newPage();
  // Every attempt at the live stream is closed at once, as a proxy that drops WebSockets would.
  await tab.routeWebSocket(/\/api\/v1\/live$/, (ws) => ws.close({ code: 1011, reason: 'blocked by the test' }));
  await tab.goto('/projects/default/tasks');
  const table = tab.getByRole('region', { name: 'Tasks', exact: true }).getByRole('table');
  await expect(table.getByRole('row', { name: /app\.tasks\.first/ })).toBeVisible();
  await expect(tab.getByTestId('live-state')).toHaveText('Polling');
  const up = await agent.upload([agent.eventBatch([taskEvent({ task_id: 'polled-task', kind: 'task.received', data: { task_name: 'app.reports.polled' } })])]);
  expect(up.body).toMatchObject({ accepted: 1 });
  // The fallback reads the list again every 15 s.
  await expect(table.getByRole('row', { name: /app\.reports\.polled/ })).toBeVisible({ timeout: 20_000 });
  await screenshot(tab, 'live-polling');
  await other.close();
});

test('a task further down than the first page (loaded by "Load more") changes in place when it finishes', async () => {
  // 60 tasks of their own: the first page holds 50, the oldest ten come with "Load more".
  const ids = Array.from({ length: 60 }, (_, i) => `deep-task-${String(i).padStart(2, '0')}`);
  const up = await agent.upload([agent.eventBatch(ids.map((task_id) => taskEvent({ task_id, kind: 'task.received', data: { task_name: `app.deep.t_${task_id.slice(-2)}` } })))]);
  expect(up.body).toMatchObject({ accepted: 1 });
  await page.goto('/projects/default/tasks?name=app.deep');
  const region = page.getByRole('region', { name: 'Tasks', exact: true });
  const table = region.getByRole('table');
  await expect(table.getByRole('row')).toHaveCount(51);
  await expect(page.getByTestId('live-state')).toHaveText('Live');
  const firstPage = new Set((await table.getByRole('row').allInnerTexts()).map((t) => /app\.deep\.t_(\d\d)/.exec(t)?.[1]).filter(Boolean));
  await region.getByRole('button', { name: 'Load more' }).click();
  await expect(table.getByRole('row')).toHaveCount(61);
  const below = ids.map((id) => id.slice(-2)).find((n) => !firstPage.has(n))!;
  const row = table.getByRole('row', { name: new RegExp(`app\\.deep\\.t_${below}`) });
  await expect(row).toContainText('received');
  let navigations = 0;
  page.on('framenavigated', () => navigations++);
  await agent.upload([agent.eventBatch([taskEvent({ task_id: `deep-task-${below}`, kind: 'task.succeeded', data: { task_name: `app.deep.t_${below}`, runtime_ms: 7 } })])]);
  await expect(row).toContainText('success', { timeout: 3000 });
  await expect(table.getByRole('row')).toHaveCount(61);
  expect(navigations).toBe(0);
});

test('a filter matching only old tasks: the list reads on through pages that found nothing, then offers to look further', async () => {
  // 22,000 newer tasks of another name: the list walks 2,000 tasks a page for a name filter (docs/tasks.md),
  // and reads on through ten such pages by itself.
  for (let lo = 0; lo < 22_000; lo += 4_400) {
    const events = Array.from({ length: 4_400 }, (_, k) => taskEvent({ task_id: `noise-${lo + k}`, kind: 'task.received', data: { task_name: 'app.noise.tick' } }));
    expect((await agent.upload([agent.eventBatch(events)])).body).toMatchObject({ accepted: 1 });
  }
  await page.goto('/projects/default/tasks?name=app.tasks.first');
  const region = page.getByRole('region', { name: 'Tasks', exact: true });
  await expect(region.getByRole('status')).toHaveText('None found among the tasks read so far; there are more to look through.');
  await screenshot(page, 'tasks-look-further');
  await region.getByRole('button', { name: 'Look further' }).click();
  await expect(region.getByRole('table').getByRole('row', { name: /app\.tasks\.first/ })).toBeVisible();
  await expect(region.getByRole('button', { name: 'Look further' })).toHaveCount(0);
});
