// The project pages in a real browser against the compiled dist/svc, from first boot to a connected agent's
// tasks: an agent minted in the browser (the MFA re-check, the token and hmac_secret shown once, the z4j
// configuration), connected by the TypeScript test agent from this process (long-poll, and a second one over
// WebSocket), its task events and status samples on the agents, health, tasks, workers and queues pages, a
// retry and a cancel issued from a task's page and answered by the agent, the commands pages, and a revoke.
// Its own installation: first boot and MFA enrolment go through the API, the rest through the page.
import { expect, test, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { nav, screenshot, signIn, totpOf } from './browser.ts';
import { taskEvent, TestAgent, type WsAgent } from './node-agent.ts';
import { ageMfaVerifications, startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let context: BrowserContext;
let page: Page;
let totpSecret = '';
let projectId = '';
let lp: TestAgent; // payments-workers, long-poll: reports the tasks and answers the commands
let ws: WsAgent; // reports-ws, WebSocket: advertises its engines in the hello

/** The table of a page section, by the section's heading. */
const table = (name: string, p: Page = page): Locator => p.getByRole('region', { name, exact: true }).getByRole('table');
const bodyRows = (t: Locator): Locator => t.locator('tbody tr');

async function csrfHeaders(): Promise<Record<string, string>> {
  const csrf = (await context.cookies()).find((c) => c.name === 'svc_csrf')?.value ?? '';
  return { 'x-csrf-token': csrf };
}

/** Mints an agent through the page (the dialog) and reads what the page shows once. */
async function mint(name: string, opener: Locator): Promise<{ token: string; secret: string; config: string }> {
  await opener.click();
  const dialog = page.getByRole('dialog', { name: 'Connect an agent' });
  await dialog.getByLabel('Agent name').fill(name);
  await dialog.getByRole('button', { name: 'Create agent' }).click();
  const panel = page.getByRole('region', { name: `Agent ${name} is ready to connect` });
  await expect(panel).toBeVisible();
  return {
    token: (await panel.getByTestId('agent-token').textContent())!.trim(),
    secret: (await panel.getByTestId('agent-hmac-secret').textContent())!.trim(),
    config: (await panel.getByTestId('agent-config').textContent())!,
  };
}

const envValue = (config: string, key: string): string => new RegExp(`^${key}=(.*)$`, 'm').exec(config)?.[1] ?? '';

/** A task's life as z4j-celery reports it: one event per kind, a millisecond apart. */
function lifecycle(taskId: string, name: string, queue: string, steps: [string, Record<string, unknown>][]) {
  const start = Date.now() - 60_000;
  return steps.map(([kind, data], n) =>
    taskEvent({
      task_id: taskId,
      kind,
      occurred_at: new Date(start + n).toISOString().replace('Z', '+00:00'),
      data: { task_name: name, queue, worker: 'w1@host', ...data } as never,
    }),
  );
}

const TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "billing/tasks.py", line 42, in send_invoice',
  '    smtp.send(message)',
  'SMTPServerDisconnected: Connection unexpectedly closed',
].join('\n');

const EVENTS = [
  ...['add-1', 'add-2', 'add-3'].flatMap((id, n) =>
    lifecycle(id, 'app.tasks.add', 'default', [
      ['task.received', { args: [n, 2], kwargs: {} }],
      ['task.started', {}],
      ['task.succeeded', { result: n + 2, runtime_ms: 12 + n }],
    ]),
  ),
  ...lifecycle('invoice-7', 'app.billing.send_invoice', 'emails', [
    ['task.received', { args: ['INV-7'], kwargs: { notify: true } }],
    ['task.started', {}],
    ['task.failed', {
      exception: "SMTPServerDisconnected('Connection unexpectedly closed')",
      traceback: TRACEBACK,
      runtime_ms: 2300,
    }],
  ]),
  ...lifecycle('sync-1', 'app.tasks.sync_inventory', 'default', [
    ['task.received', { args: [], kwargs: { full: false } }],
    ['task.retried', { exception: 'TimeoutError()' }],
  ]),
  ...lifecycle('report-1', 'app.reports.build', 'default', [
    ['task.received', { args: ['2026-Q1'], kwargs: {} }],
    ['task.started', {}],
  ]),
];

/** Worker details and queue depths as z4j-celery puts them into a heartbeat's adapter_health (JSON text). */
const ADAPTER_HEALTH = {
  'celery.worker_details': JSON.stringify({
    'w1@host': {
      stats: { pid: 4242, pool: { 'max-concurrency': 4 } },
      active_queues: [{ name: 'default' }, { name: 'emails' }],
      active: [{}],
    },
  }),
  'celery.queue_depths': JSON.stringify({ default: 3, emails: 0 }),
};

const loss = (counters: Record<string, number>) => ({ telemetry_loss: { buffer_id: 'buf-1', runtime_id: 'rt-1', ...counters } });

/** The agent picks up the command the page issued, acknowledges it and answers. */
interface Answer {
  status: 'success' | 'failed';
  result?: Record<string, string>;
  error?: string;
}

async function answerCommand(action: string, answer: Answer) {
  const polled = await lp.poll({ wait: 5, contracts: 'celery=1' });
  expect(polled.status).toBe(200);
  const [frame] = lp.verifyAll(polled.body.frames);
  expect(frame?.payload.action).toBe(action);
  const id = frame!.id!;
  const uploaded = await lp.upload([lp.ack(id), lp.result(id, answer.status, answer.result ?? null, answer.error ?? null)]);
  expect(uploaded.body.accepted).toBe(2);
}

test.beforeAll(async ({ browser }) => {
  svc = await startSvc();
  context = await browser.newContext({ baseURL: svc.url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  page = await context.newPage();
  // First boot and TOTP enrolment through the API (the browser flows are dashboard.e2e.ts's); the cookies land
  // in this browser context.
  const token = new URL(svc.setupUrl).searchParams.get('token');
  expect((await page.request.post('/api/v1/setup/complete', { data: { token, ...ADMIN } })).status()).toBe(201);
  const start = await page.request.post('/api/v1/auth/mfa/enroll-start', { headers: await csrfHeaders() });
  totpSecret = (await start.json()).secret_base32;
  const done = await page.request.post('/api/v1/auth/mfa/enroll-complete', {
    data: { code: totpOf(totpSecret) },
    headers: await csrfHeaders(),
  });
  expect(done.status()).toBe(200);
  projectId = (await (await page.request.get('/api/v1/projects/default')).json()).id;
});

test.afterAll(async () => {
  ws?.close();
  await context?.close();
  await svc?.stop();
});

test('a project without agents says how to connect the first, and every list says what to do next', async () => {
  await page.goto('/projects/default');
  const summary = page.getByRole('region', { name: 'Agents and tasks' });
  await expect(summary).toContainText('No agent is connected yet');
  await expect(summary.getByRole('button', { name: 'Connect an agent' })).toBeVisible();
  await screenshot(page, 'project-overview-no-agent');
  for (const [link, empty] of [
    ['Tasks', 'No tasks yet'],
    ['Commands', 'No commands yet'],
    ['Workers', 'No workers reported yet'],
    ['Queues', 'No queues reported yet'],
    ['Agents', 'No agent is connected yet'],
  ] as const) {
    await nav(page, link).click();
    await expect(page.getByText(empty)).toBeVisible();
  }
});

test('agents: minted after the MFA re-check, secrets and configuration shown once, then connected over long-poll', async () => {
  ageMfaVerifications(svc); // minting needs a fresh verification: the page asks for the code and retries
  await page.getByRole('button', { name: 'Connect an agent' }).click();
  const dialog = page.getByRole('dialog', { name: 'Connect an agent' });
  await dialog.getByLabel('Agent name').fill('payments-workers');
  await dialog.getByRole('button', { name: 'Create agent' }).click();
  const prompt = page.getByRole('dialog', { name: 'Confirm it is you' });
  await prompt.getByLabel('Authenticator code').fill(totpOf(totpSecret));
  await prompt.getByRole('button', { name: 'Confirm' }).click();

  const panel = page.getByRole('region', { name: 'Agent payments-workers is ready to connect' });
  const token = (await panel.getByTestId('agent-token').textContent())!.trim();
  const secret = (await panel.getByTestId('agent-hmac-secret').textContent())!.trim();
  expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(secret).toMatch(/^[A-Za-z0-9_-]{43,44}=?$/);
  const config = panel.getByTestId('agent-config');
  await expect(config).toContainText(`Z4J_BRAIN_URL=${svc.url}`);
  await expect(config).toContainText(`Z4J_TOKEN=${token}`);
  await expect(config).toContainText('Z4J_PROJECT_ID=default');
  await expect(config).toContainText(`Z4J_HMAC_SECRET=${secret}`);
  await expect(config).not.toContainText('Z4J_TRANSPORT');
  await panel.getByLabel(/Long-poll/).check();
  await expect(config).toContainText('Z4J_TRANSPORT=longpoll');
  const agentId = envValue((await config.textContent())!, 'Z4J_AGENT_ID');
  expect(agentId).toMatch(/^[0-9a-f-]{36}$/);
  await panel.getByRole('button', { name: 'Copy configuration' }).click();
  // The button writes the clipboard asynchronously: read until the write has landed.
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toContain(`Z4J_AGENT_ID=${agentId}`);
  await expect(panel.getByTestId('minted-agent-state')).toContainText('never connected');
  await screenshot(page, 'agent-minted');

  // The agent connects with what the page showed, and reports tasks, worker details, queue depths and status.
  lp = new TestAgent({ baseUrl: svc.url, token, hmacSecret: secret, agentId, projectId });
  expect((await lp.probe()).status).toBe(200);
  const frames = [
    lp.eventBatch(EVENTS),
    lp.heartbeat({ adapter_health: ADAPTER_HEALTH }),
    lp.agentStatus(loss({ event_records: 0 })),
    lp.agentStatus(loss({ event_records: 2 })),
    lp.agentStatus(loss({ event_records: 5, capacity_evicted_frames: 1 })),
  ];
  const uploaded = await lp.upload(frames);
  expect(uploaded.body).toMatchObject({ accepted: frames.length, rejected: 0 });
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(panel.getByTestId('minted-agent-state')).toContainText('online');
  await panel.getByRole('button', { name: 'Done: hide the secrets' }).click();
  await expect(page.getByTestId('agent-token')).toHaveCount(0);
});

test('agents: a second agent over WebSocket reports its engines; the list shows state, protocol and engines', async () => {
  const opener = page.getByRole('region', { name: 'Agents' }).getByRole('button', { name: 'Connect an agent' });
  const minted = await mint('reports-ws', opener);
  const agentId = (await page.request.get('/api/v1/projects/default/agents').then((r) => r.json())).find(
    (a: { name: string }) => a.name === 'reports-ws',
  ).id;
  ws = await new TestAgent({ baseUrl: svc.url, token: minted.token, hmacSecret: minted.secret, agentId, projectId }).connect();
  expect(ws.helloAck?.type).toBe('hello_ack');
  await page.getByRole('button', { name: 'Done: hide the secrets' }).click();
  await page.getByRole('button', { name: 'Refresh' }).click();

  const agents = table('Agents');
  const longPoll = agents.getByRole('row', { name: /payments-workers/ });
  const webSocket = agents.getByRole('row', { name: /reports-ws/ });
  await expect(longPoll.locator('td').nth(1)).toHaveText('online');
  await expect(longPoll.locator('td').nth(3)).toHaveText('-'); // long-poll agents send no hello: no protocol
  await expect(longPoll.locator('td').nth(4)).toHaveText('-'); // ... and no engines
  await expect(webSocket.locator('td').nth(1)).toHaveText('online');
  await expect(webSocket.locator('td').nth(3)).toHaveText('2');
  await expect(webSocket.locator('td').nth(4)).toHaveText('celery');
  await expect(longPoll.locator('td').nth(2)).toContainText(/now|second/);
  await screenshot(page, 'agents');
});

test("an agent's health samples over time with the telemetry loss they report", async () => {
  await table('Agents').getByRole('link', { name: 'payments-workers' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Default: Agent');
  const health = page.getByRole('region', { name: 'Health samples' });
  await expect(health.getByRole('img', { name: /Frames lost as reported, 3 samples/ })).toBeVisible();
  const samples = bodyRows(health.getByRole('table'));
  await expect(samples).toHaveCount(3);
  // Newest first: the last sample counted 5 event records and 1 evicted frame.
  await expect(samples.first()).toContainText('capacity evicted frames 1, event records 5');
  await expect(samples.last()).toContainText('none');
  await screenshot(page, 'agent-health');
});

test('tasks: the list with filters by state, name, queue and time, and a failed task in detail', async () => {
  await nav(page, 'Tasks').click();
  const tasks = table('Tasks');
  await expect(bodyRows(tasks)).toHaveCount(6);
  await expect(page.getByText('Showing 6 tasks.')).toBeVisible();
  await screenshot(page, 'tasks');

  const filters = page.getByRole('form', { name: 'Filter the tasks' });
  await filters.getByLabel('State').selectOption('failure');
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/state=failure/);
  await expect(bodyRows(tasks)).toHaveCount(1);
  await expect(bodyRows(tasks)).toContainText('app.billing.send_invoice');
  await filters.getByRole('button', { name: 'Clear filters' }).click();
  await expect(bodyRows(tasks)).toHaveCount(6);

  await filters.getByLabel('Name contains').fill('tasks.add');
  await filters.getByLabel('Name contains').press('Enter');
  await expect(bodyRows(tasks)).toHaveCount(3);
  await filters.getByLabel('Name contains').fill('');
  await filters.getByLabel('Queue').fill('emails');
  await filters.getByLabel('Queue').press('Enter');
  await expect(bodyRows(tasks)).toHaveCount(1);
  await filters.getByRole('button', { name: 'Clear filters' }).click();

  // Time: svc first heard of every task a moment ago, so nothing is newer than an hour from now.
  const inAnHour = await page.evaluate(() => {
    const d = new Date(Date.now() + 3_600_000);
    const p = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  });
  await filters.getByRole('button', { name: 'Time range…' }).click();
  await filters.getByLabel('First seen from').fill(inAnHour);
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/since=/);
  await expect(page.getByText('No task matches these filters')).toBeVisible();
  await filters.getByLabel('First seen from').fill('');
  await filters.getByLabel('First seen before').fill(inAnHour);
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(bodyRows(tasks)).toHaveCount(6);

  await tasks.getByRole('link', { name: 'app.billing.send_invoice' }).click();
  await expect(page).toHaveURL(/\/tasks\/celery\/invoice-7$/);
  await expect(page.getByTestId('task-state')).toHaveText('failure');
  await expect(page.getByTestId('task-exception')).toContainText('SMTPServerDisconnected');
  await expect(page.getByLabel('Traceback')).toContainText('billing/tasks.py", line 42');
  await expect(page.getByLabel('Positional arguments')).toContainText('"INV-7"');
  const timeline = page.getByRole('list', { name: 'Events, oldest first' });
  await expect(timeline.getByRole('listitem')).toHaveCount(3);
  await expect(timeline.getByRole('listitem').last()).toContainText('task.failed');
  await expect(timeline.getByRole('listitem').last()).toContainText('from payments-workers');
  await screenshot(page, 'task-detail');
});

test("a new tab asks for the session, the projects and its page's list while the dashboard's script still loads, each once", async () => {
  const tab = await context.newPage();
  const asked: string[] = [];
  tab.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname.startsWith('/api/')) asked.push(`${url.pathname}${url.search}`);
  });
  const early = [
    '/api/v1/auth/me',
    '/api/v1/projects',
    '/api/v1/user/notifications/unread-count', // the bell's badge
    '/api/v1/projects/default/tasks?state=failure&limit=50',
  ].sort();
  // The script waits until those three have left: index.html's inline script sent them, not the app.
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  await tab.route('**/assets/main-*.js', async (route) => {
    await held;
    await route.continue();
  });
  await tab.goto('/projects/default/tasks?state=failure', { waitUntil: 'commit' });
  await expect.poll(() => [...asked].sort()).toEqual(early);
  release();
  const tasks = table('Tasks', tab);
  await expect(bodyRows(tasks)).toHaveCount(1);
  await expect(bodyRows(tasks)).toContainText('app.billing.send_invoice');
  // The app took those answers instead of asking again; it asked for one more thing, once: the user's saved
  // views of the list (not needed to paint the rows, so not among the early requests).
  expect([...asked].sort()).toEqual([...early, '/api/v1/projects/default/saved-views?page=tasks'].sort());
  await tab.close();
});

test('a tab opened with an ended session goes to the login page, and after signing in shows the page it was opened on', async ({
  browser,
}) => {
  const other = await browser.newContext({ baseURL: svc.url });
  // A session svc does not know (any more): the tab's early requests are all refused.
  await other.addCookies([{ name: 'svc_session', value: 'ended-session', url: svc.url }]);
  const tab = await other.newPage();
  await tab.goto('/projects/default/tasks');
  await expect(tab).toHaveURL(/\/login\?next=%2Fprojects%2Fdefault%2Ftasks$/);
  await signIn(tab, { email: ADMIN.email, password: ADMIN.password }, () => totpOf(totpSecret));
  // The refused early answer for the list is not used again: the page shows the list instead of the login page.
  await expect(tab).toHaveURL(/\/projects\/default\/tasks$/);
  await expect(bodyRows(table('Tasks', tab))).toHaveCount(6);
  await other.close();
});

test("retry and cancel from a task's page: the command appears, the agent answers, the outcome shows", async () => {
  const commands = table('Commands');
  await page.getByRole('button', { name: 'Retry', exact: true }).click();
  await page.getByRole('dialog', { name: 'Retry this task?' }).getByRole('button', { name: 'Retry task' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Command retry_task created' })).toBeVisible();
  const retry = commands.getByRole('row', { name: /retry_task/ });
  await expect(retry).toContainText('pending');
  await expect(retry).toContainText('payments-workers'); // sent to the agent that reported the task
  await answerCommand('retry_task', { status: 'success', result: { new_task_id: 'invoice-7-retry' } });
  await expect(retry).toContainText('completed'); // the page watches until the outcome arrives
  await expect(retry).toContainText('invoice-7-retry');
  await screenshot(page, 'task-command-outcome');

  await page.goto('/projects/default/tasks/celery/report-1');
  await expect(page.getByTestId('task-state')).toHaveText('started');
  await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  await page.getByRole('dialog', { name: 'Cancel this task?' }).getByRole('button', { name: 'Cancel task' }).click();
  const cancel = commands.getByRole('row', { name: /cancel_task/ });
  await expect(cancel).toContainText('pending');
  await answerCommand('cancel_task', { status: 'failed', error: 'task already finished' });
  await expect(cancel).toContainText('failed');
  await expect(cancel).toContainText('task already finished');
});

test('commands: the list with its status filter, and one command in detail', async () => {
  await nav(page, 'Commands').click();
  const commands = table('Commands');
  await expect(bodyRows(commands)).toHaveCount(2);
  await screenshot(page, 'commands');
  await page.getByLabel('Status').selectOption('failed');
  await expect(page).toHaveURL(/status=failed/);
  await expect(bodyRows(commands)).toHaveCount(1);
  await commands.getByRole('link', { name: 'cancel_task' }).click();
  await expect(page.getByTestId('command-status')).toHaveText('failed');
  const outcome = page.getByRole('region', { name: 'Outcome' });
  await expect(outcome).toContainText('task already finished');
  await expect(page.getByLabel('Parameters', { exact: true })).toContainText('"task_id": "report-1"');
  await expect(page.getByRole('link', { name: 'task celery:report-1' })).toBeVisible();
  await screenshot(page, 'command-detail');
});

test('workers and queues as the agent reported them, each leading to its tasks', async () => {
  await nav(page, 'Workers').click();
  const worker = table('Workers').getByRole('row', { name: /w1@host/ });
  await expect(worker).toContainText('online');
  await expect(worker.locator('td').nth(3)).toHaveText('4'); // concurrency
  await expect(worker).toContainText('default, emails');
  await screenshot(page, 'workers');

  await nav(page, 'Queues').click();
  await expect(table('Queues').getByRole('row', { name: /default/ }).locator('td').nth(2)).toHaveText('3');
  await expect(table('Queues').getByRole('row', { name: /emails/ }).locator('td').nth(2)).toHaveText('0');
  await screenshot(page, 'queues');
  await table('Queues').getByRole('link', { name: 'emails' }).click();
  await expect(page).toHaveURL(/\/tasks\?queue=emails$/);
  await expect(bodyRows(table('Tasks'))).toHaveCount(1);
});

test('revoking an agent asks first; its token stops working', async () => {
  // Agents silent for 30 s count as offline: both speak up before the count is read.
  ws.send('heartbeat', { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} });
  expect((await lp.upload([lp.heartbeat()])).body.accepted).toBe(1);
  await nav(page, 'Overview').click();
  await expect(page.getByTestId('agents-summary')).toContainText('2 of 2 agents online');
  await nav(page, 'Agents').click();
  await page.getByRole('button', { name: 'Revoke payments-workers' }).click();
  const confirm = page.getByRole('dialog', { name: 'Revoke payments-workers?' });
  await expect(confirm).toContainText('Its token stops working at once');
  await expect(confirm.getByRole('button', { name: 'Cancel' })).toBeFocused(); // Enter does not revoke by accident
  await screenshot(page, 'agent-revoke');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(table('Agents').getByRole('row', { name: /payments-workers/ })).toHaveCount(1);

  await page.getByRole('button', { name: 'Revoke payments-workers' }).click();
  await confirm.getByRole('button', { name: 'Revoke agent' }).click();
  await expect(confirm).toBeHidden();
  await expect(table('Agents').getByRole('row', { name: /payments-workers/ })).toHaveCount(0);
  expect((await lp.probe()).status).toBe(401);
});

test('the project pages in dark mode and on a narrow screen', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto('/projects/default/tasks/celery/invoice-7');
  await expect(page.getByTestId('task-state')).toHaveText('failure');
  await screenshot(page, 'task-detail-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/projects/default/tasks');
  await expect(bodyRows(table('Tasks'))).toHaveCount(6);
  await screenshot(page, 'tasks-narrow');
  await page.setViewportSize({ width: 1280, height: 720 });
});
