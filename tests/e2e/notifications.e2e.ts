// The notification pages in a real browser against the compiled dist/svc: a project's channels (a webhook whose
// test fails, changed while keeping its masked signing secret, then answered by a receiver with 503), the
// delivery log with the channel tests and clearing it, a default subscription; the account's own channels (one
// copied from the project), a subscription with filters muted for an hour; and the bell: a task that fails at a
// connected test agent lands in the inbox of the admin (subscribed by the project's task.failed default on
// joining), the badge counts it, the inbox marks it read and leads to the task.
// Sends go to tests/e2e/hook-receiver.ts: a namespace of this machine on an address the outbound policy allows.
import { createHmac } from 'node:crypto';
import { expect, test, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { csrfHeaders, firstAdmin, screenshot } from './browser.ts';
import { receiverUnavailable, startHookReceiver, type HookReceiver } from './hook-receiver.ts';
import { taskEvent, TestAgent } from './node-agent.ts';
import { startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };
const VIEWER = { email: 'viewer@example.com', password: 'Quiet-Meadow-Lantern-31', display_name: 'Vic Viewer' };
const SECRET = 'signing-secret-of-ops-hook-0001';
const MASK = '••••••••';

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let receiver: HookReceiver;
let context: BrowserContext;
let page: Page;
let projectId = '';

const region = (name: string, p: Page = page): Locator => p.getByRole('region', { name, exact: true });
const bodyRows = (t: Locator): Locator => t.locator('tbody tr');
const sidebarLink = (href: string, p: Page = page) => p.locator(`#sidebar a[href="${href}"]`);
/** The badge of the bell on screen (the shell has one in the sidebar and one in the narrow screens' top bar). */
const badge = (p: Page = page): Locator => p.getByTestId('unread-badge').filter({ visible: true });

async function unreadCount(): Promise<number> {
  return (await (await page.request.get('/api/v1/user/notifications/unread-count')).json()).unread;
}

/** A task's life ending in a failure, as z4j-celery reports it. */
function failingTask(taskId: string, name: string) {
  const start = Date.now() - 5_000;
  const at = (n: number) => new Date(start + n).toISOString().replace('Z', '+00:00');
  const data = { task_name: name, queue: 'billing', worker: 'w1@host' };
  return [
    taskEvent({ task_id: taskId, kind: 'task.received', occurred_at: at(0), data: { ...data, args: [42], kwargs: {} } }),
    taskEvent({ task_id: taskId, kind: 'task.started', occurred_at: at(1), data }),
    taskEvent({
      task_id: taskId,
      kind: 'task.failed',
      occurred_at: at(2),
      data: {
        ...data,
        exception: "CardDeclined('insufficient funds')",
        traceback: 'Traceback (most recent call last): ...',
        runtime_ms: 80,
      },
    }),
  ];
}

test.beforeAll(async ({ browser }) => {
  const why = receiverUnavailable();
  test.skip(why !== null, `the webhook receiver cannot run here: ${why}`);
  receiver = await startHookReceiver();
  // Plain http:// to the receiver (its port 80); blocked addresses stay blocked all the same.
  svc = await startSvc({ SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true', SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '5' });
  context = await browser.newContext({ baseURL: svc.url });
  page = await context.newPage();
  await firstAdmin(page, svc.setupUrl, ADMIN);
  projectId = (await (await page.request.get('/api/v1/projects/default')).json()).id;
});

test.afterAll(async () => {
  await context?.close();
  await svc?.stop();
  await receiver?.stop();
});

test("project channels: a webhook's failing test, a change that keeps the masked secret, the 503 it then gets", async () => {
  await page.goto('/projects/default');
  await sidebarLink('/projects/default/notifications').click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Default: Notifications');
  const channels = region('Channels');
  await expect(channels).toContainText('No channels yet');
  await screenshot(page, 'notifications-project-empty');

  await channels.getByRole('button', { name: 'Add channel' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add a channel' });
  await expect(dialog.getByLabel('Type')).toHaveValue('webhook');
  await dialog.getByLabel('Name').fill('ops-hook');
  // The outbound policy refuses a loopback address: the message stands next to the URL, not in the notice.
  await dialog.getByLabel('URL').fill('https://127.0.0.1/hook');
  await dialog.getByRole('button', { name: 'Add channel' }).click();
  await expect(dialog.getByLabel('URL')).toHaveAttribute('aria-invalid', 'true');
  const urlError = dialog.locator('.field-error');
  await expect(urlError).toHaveCount(1);
  await expect(dialog.getByRole('alert')).not.toContainText('Config url');
  await screenshot(page, 'notifications-channel-invalid');

  // Nothing listens on the receiver's 443: the unsaved settings' test fails, and says why.
  await dialog.getByLabel('URL').fill(`https://${receiver.address}/hook`);
  await dialog.getByLabel('Headers').fill('X-Team: payments');
  await dialog.getByLabel('Signing secret').fill(SECRET);
  await dialog.getByRole('button', { name: 'Send test' }).click();
  const unsaved = dialog.getByTestId('channel-test-result');
  await expect(unsaved).toContainText('Test of these settings failed.');
  await expect(unsaved).toContainText('No answer came (status code 0).');
  await expect(dialog.getByLabel('URL')).not.toHaveAttribute('aria-invalid', 'true');
  await dialog.getByRole('button', { name: 'Add channel' }).click();
  await expect(dialog).toBeHidden();

  const row = channels.getByRole('row', { name: /ops-hook/ });
  await expect(row).toContainText('Webhook');
  await expect(row).toContainText(receiver.address);
  await expect(row).toContainText('active');
  await row.getByRole('button', { name: 'Test ops-hook' }).click();
  const tested = channels.getByTestId('channel-test-result');
  await expect(tested).toContainText('Test of ops-hook failed.');
  await expect(tested).toContainText('No answer came (status code 0).');
  // The error says what went wrong, without the address svc resolved.
  const error = (await tested.locator('p').nth(1).textContent()) ?? '';
  expect(error.length).toBeGreaterThan(0);
  expect(error).not.toContain(receiver.address);
  await screenshot(page, 'notifications-channel-test-failed');

  // Changed to the receiver's failing path; the secret stays masked in its input and is sent back as it is.
  await row.getByRole('button', { name: 'Edit ops-hook' }).click();
  const edit = page.getByRole('dialog', { name: 'Change ops-hook' });
  await expect(edit.getByLabel('Signing secret')).toHaveValue(MASK);
  await expect(edit.getByLabel('Headers')).toHaveValue('X-Team: payments');
  // A test of the changed settings before saving: the secret left masked is the saved one.
  await edit.getByLabel('URL').fill(`http://${receiver.address}/down/hook`);
  await edit.getByRole('button', { name: 'Send test' }).click();
  await expect(edit.getByTestId('channel-test-result')).toContainText('Status code 503.');
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await expect(edit).toBeHidden();
  await expect(row).toContainText(receiver.address);

  await row.getByRole('button', { name: 'Test ops-hook' }).click();
  await expect(tested).toContainText('Test of ops-hook failed. Status code 503.');
  await expect(tested.locator('pre')).toHaveText('receiver is down for maintenance');
  await screenshot(page, 'notifications-channel-test-503');

  // The receiver got both tests (before and after saving) signed with the secret given when the channel
  // was made: the mask kept it.
  const seen = (await receiver.seen()).filter((r) => r.path === '/down/hook');
  expect(seen).toHaveLength(2);
  for (const s of seen) {
    expect(s.headers['x-team']).toBe('payments');
    const expected = createHmac('sha256', SECRET).update(`${s.headers['x-svc-timestamp']}.${s.body}`).digest('hex');
    expect(s.headers['x-svc-signature']).toBe(`sha256=${expected}`);
  }
});

test('project delivery log: the channel tests newest first, cleared up to a time and then whole', async () => {
  const log = region('Delivery log');
  const rows = bodyRows(log.getByRole('table'));
  // The unsaved test, the first saved one, the edited form's test, the 503: the log on the page loaded again after each.
  await expect(rows).toHaveCount(4);
  await expect(rows.first()).toContainText('failed');
  await expect(rows.first()).toContainText('status 503');
  await expect(rows.first()).toContainText('test.dispatch');
  await expect(rows.first()).toContainText('ops-hook');
  await expect(rows.last()).toContainText('(unsaved)');
  await expect(log).toContainText('Showing 4 delivery attempts.');
  await screenshot(page, 'notifications-delivery-log');

  // Rows sent before an hour ago: none.
  await log.getByRole('button', { name: 'Clear the delivery log' }).click();
  const clear = page.getByRole('dialog', { name: 'Clear the delivery log' });
  const anHourAgo = await page.evaluate(() => {
    const d = new Date(Date.now() - 3_600_000);
    const p = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  });
  await clear.getByLabel('Only rows sent before').fill(anHourAgo);
  await clear.getByRole('button', { name: 'Clear', exact: true }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Cleared 0 delivery rows.' })).toBeVisible();
  await expect(rows).toHaveCount(4);
  await log.getByRole('button', { name: 'Clear the delivery log' }).click();
  await clear.getByRole('button', { name: 'Clear', exact: true }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Cleared 4 delivery rows.' })).toBeVisible();
  await expect(log).toContainText('Nothing sent yet');
});

test('default subscriptions: task.failed in the app from the start, one added for agents going offline', async () => {
  const defaults = region('Default subscriptions');
  const rows = bodyRows(defaults.getByRole('table'));
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('A task failed');
  await expect(rows.first()).toContainText('in-app');

  await defaults.getByRole('button', { name: 'Add default' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add a default subscription' });
  // task.failed has its default already: it is not offered again.
  await expect(dialog.getByLabel('Trigger').locator('option[value="task.failed"]')).toHaveCount(0);
  await dialog.getByLabel('Trigger').selectOption('agent.offline');
  await dialog.getByRole('group', { name: 'Project channels' }).getByLabel('ops-hook').check();
  await dialog.getByLabel('Cooldown (seconds)').fill('300');
  await dialog.getByRole('button', { name: 'Add default' }).click();
  await expect(dialog).toBeHidden();
  const offline = defaults.getByRole('row', { name: /An agent went offline/ });
  await expect(offline).toContainText('in-app, ops-hook');
  await expect(offline).toContainText('5 minutes');

  await offline.getByRole('button', { name: 'Edit the default for agent.offline' }).click();
  const edit = page.getByRole('dialog', { name: 'Change the default for agent.offline' });
  await edit.getByLabel('In the app').uncheck();
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await expect(offline).toContainText('ops-hook');
  await expect(offline).not.toContainText('in-app');
  await screenshot(page, 'notifications-project');
});

test('a viewer sees the channels and nothing to change', async ({ browser }) => {
  const created = await page.request.post('/api/v1/users', { data: { ...VIEWER }, headers: await csrfHeaders(context) });
  expect(created.status()).toBe(201);
  const userId = (await created.json()).id;
  const joined = await page.request.post('/api/v1/projects/default/memberships', {
    data: { user_id: userId, role: 'viewer' },
    headers: await csrfHeaders(context),
  });
  expect(joined.status()).toBe(201);

  const other = await browser.newContext({ baseURL: svc.url });
  const tab = await other.newPage();
  const login = await tab.request.post('/api/v1/auth/login', { data: { email: VIEWER.email, password: VIEWER.password } });
  expect(login.status()).toBe(200);
  await tab.goto('/projects/default/notifications');
  const channels = region('Channels', tab);
  await expect(channels.getByRole('row', { name: /ops-hook/ })).toContainText('Webhook');
  await expect(channels.getByRole('button', { name: 'Add channel' })).toHaveCount(0);
  await expect(channels.getByRole('button', { name: 'Test ops-hook' })).toHaveCount(0);
  await expect(region('Default subscriptions', tab)).toHaveCount(0);
  await expect(region('Delivery log', tab)).toHaveCount(0);
  await expect(tab.getByRole('link', { name: 'your notification settings' })).toBeVisible();
  await screenshot(tab, 'notifications-project-viewer');
  await other.close();
});

test('account: a personal channel and one copied from the project, a subscription with filters, muted for an hour', async () => {
  await sidebarLink('/account/notifications').click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Notifications');
  const channels = region('Your channels');
  await expect(channels).toContainText('No channels yet');

  // A project admin may copy the project's channel (the secret is copied by svc, never shown).
  await channels.getByRole('button', { name: 'Copy from a project…' }).click();
  const copy = page.getByRole('dialog', { name: "Copy a project's channel" });
  await expect(copy.getByLabel('Channel', { exact: true })).toContainText('Default: ops-hook (webhook)');
  await copy.getByLabel('Name of your copy').fill('copied-hook');
  await copy.getByRole('button', { name: 'Copy channel' }).click();
  await expect(copy).toBeHidden();
  await expect(channels.getByRole('row', { name: /copied-hook/ })).toContainText(receiver.address);

  await channels.getByRole('button', { name: 'Add channel' }).click();
  const add = page.getByRole('dialog', { name: 'Add a channel' });
  await add.getByLabel('Name').fill('my-hook');
  await add.getByLabel('URL').fill(`http://${receiver.address}/personal`);
  await add.getByRole('button', { name: 'Add channel' }).click();
  await expect(add).toBeHidden();
  const mine = channels.getByRole('row', { name: /my-hook/ });
  await mine.getByRole('button', { name: 'Test my-hook' }).click();
  await expect(channels.getByTestId('channel-test-result')).toContainText('Test of my-hook delivered. Status code 204.');
  expect((await receiver.seen()).filter((r) => r.path === '/personal')).toHaveLength(1);

  // The project's default subscribed the admin to failed tasks on joining.
  const subs = region('Your subscriptions');
  await expect(subs.getByRole('row', { name: 'Default: task.failed' })).toContainText('in-app');

  await subs.getByRole('button', { name: 'Subscribe…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Subscribe' });
  await expect(dialog.getByLabel('Trigger').locator('option[value="task.failed"]')).toHaveCount(0);
  await dialog.getByLabel('Trigger').selectOption('task.retried');
  const priorities = dialog.getByRole('group', { name: 'Only for task priorities' });
  await priorities.getByLabel('critical').check();
  await priorities.getByLabel('high').check();
  await dialog.getByLabel('Task name contains').fill('billing');
  // Too many wildcards: the server's message stands next to the pattern.
  await dialog.getByLabel('Task name matches').fill('a*b*c*d*e*f*');
  await dialog.getByRole('group', { name: 'Your channels' }).getByLabel('my-hook').check();
  await dialog.getByRole('group', { name: "The project's channels" }).getByLabel('ops-hook').check();
  await dialog.getByLabel('Cooldown (seconds)').fill('60');
  await dialog.getByRole('button', { name: 'Subscribe' }).click();
  await expect(dialog.getByLabel('Task name matches')).toHaveAttribute('aria-invalid', 'true');
  await expect(dialog.locator('.field-error')).toContainText('wildcards');
  await screenshot(page, 'notifications-subscription-invalid');
  await dialog.getByLabel('Task name matches').fill('app.billing.*');
  await dialog.getByRole('button', { name: 'Subscribe' }).click();
  await expect(dialog).toBeHidden();

  const retried = subs.getByRole('row', { name: 'Default: task.retried' });
  await expect(retried).toContainText('priority critical or high; name contains billing; name matches app.billing.*');
  await expect(retried).toContainText('in-app, my-hook, ops-hook');
  await expect(retried).toContainText('1 minute');
  await expect(retried).toContainText('active');

  await retried.getByRole('button', { name: 'Mute task.retried in Default' }).click();
  const mute = page.getByRole('dialog', { name: 'Mute task.retried' });
  await mute.getByLabel('Mute for').selectOption({ label: '1 hour' });
  await mute.getByRole('button', { name: 'Mute' }).click();
  await expect(mute).toBeHidden();
  await expect(retried).toContainText('muted');
  await expect(retried).toContainText(/until in (1 hour|60 minutes|59 minutes)/);
  const stored = (await (await page.request.get('/api/v1/user/subscriptions')).json()).find(
    (x: { trigger: string }) => x.trigger === 'task.retried',
  );
  expect(Date.parse(stored.muted_until) - Date.now()).toBeGreaterThan(55 * 60_000);
  expect(stored.filters).toEqual({ priority: ['critical', 'high'], task_name: 'billing', task_name_pattern: 'app.billing.*' });
  await expect(retried.getByRole('button', { name: 'Unmute task.retried in Default' })).toBeVisible();

  // Paused and resumed.
  await retried.getByRole('button', { name: 'Pause task.retried in Default' }).click();
  await expect(retried).toContainText('paused');
  await retried.getByRole('button', { name: 'Resume task.retried in Default' }).click();
  await expect(retried).toContainText('muted');

  const log = bodyRows(region('Your delivery log').getByRole('table'));
  await expect(log).toHaveCount(1);
  await expect(log.first()).toContainText('sent');
  await expect(log.first()).toContainText('my-hook');
  await screenshot(page, 'notifications-account');
});

test('e-mail, Telegram and PagerDuty forms save the config each type takes; a change keeps the masked secrets', async () => {
  const channels = region('Your channels');
  const configOf = async (name: string) =>
    ((await (await page.request.get('/api/v1/user/channels')).json()) as { name: string; config: unknown }[]).find(
      (c) => c.name === name,
    )?.config;
  const add = page.getByRole('dialog', { name: 'Add a channel' });

  await channels.getByRole('button', { name: 'Add channel' }).click();
  await add.getByLabel('Type').selectOption('email');
  await add.getByLabel('Name').fill('mail');
  await add.getByLabel('SMTP host').fill(receiver.address);
  await add.getByLabel('SMTP port').fill('2526');
  await add.getByLabel('SMTP user').fill('svc');
  await add.getByLabel('SMTP password').fill('smtp-pass-1');
  await add.getByLabel('Require STARTTLS').uncheck();
  await add.getByLabel('From').fill('svc@example.com');
  await add.getByLabel('To').fill('ops@example.com\nnot-an-address');
  await add.getByRole('button', { name: 'Add channel' }).click();
  // A port svc does not send to, a login without TLS, a line that is no address: each message stands by its input.
  await expect(add.getByLabel('SMTP port')).toHaveAttribute('aria-invalid', 'true');
  await expect(add.getByLabel('Require STARTTLS')).toHaveAttribute('aria-invalid', 'true');
  await expect(add.getByLabel('To')).toHaveAttribute('aria-invalid', 'true');
  await expect(add.locator('.field-error')).toHaveCount(3);
  await expect(add.locator('.field-error').last()).toHaveText('Line 2: must be an e-mail address');
  await screenshot(page, 'notifications-email-invalid');
  await add.getByLabel('SMTP port').fill('2525');
  await add.getByLabel('Require STARTTLS').check();
  await add.getByLabel('To').fill('ops@example.com\noncall@example.com');
  await add.getByRole('button', { name: 'Add channel' }).click();
  await expect(add).toBeHidden();
  await expect(channels.getByRole('row', { name: /mail/ }).first()).toContainText('ops@example.com, oncall@example.com');
  const mail = {
    smtp_host: receiver.address,
    smtp_port: 2525,
    smtp_user: 'svc',
    smtp_pass: MASK,
    smtp_tls: true,
    from_addr: 'svc@example.com',
    to_addrs: ['ops@example.com', 'oncall@example.com'],
  };
  expect(await configOf('mail')).toEqual(mail);

  await channels.getByRole('button', { name: 'Add channel' }).click();
  await add.getByLabel('Type').selectOption('telegram');
  await add.getByLabel('Name').fill('chat');
  await add.getByLabel('Bot token').fill('123456:ABC-def_ghi');
  await add.getByLabel('Chat id').fill('-1001234567');
  await add.getByRole('button', { name: 'Add channel' }).click();
  await expect(add).toBeHidden();
  expect(await configOf('chat')).toEqual({ bot_token: MASK, chat_id: -1001234567 });

  await channels.getByRole('button', { name: 'Add channel' }).click();
  await add.getByLabel('Type').selectOption('pagerduty');
  await add.getByLabel('Name').fill('pager');
  await add.getByLabel('Integration key').fill('R0UTINGKEY12345678');
  await add.getByLabel('Severity').selectOption('warning');
  await add.getByRole('button', { name: 'Add channel' }).click();
  await expect(add).toBeHidden();
  expect(await configOf('pager')).toEqual({ integration_key: MASK, severity_default: 'warning' });

  // Changes: the masked secrets go back as they came, and svc keeps what they stand for.
  await channels.getByRole('button', { name: 'Edit mail' }).click();
  const mailEdit = page.getByRole('dialog', { name: 'Change mail' });
  await expect(mailEdit.getByLabel('SMTP password')).toHaveValue(MASK);
  await expect(mailEdit.getByLabel('Require STARTTLS')).toBeChecked();
  await expect(mailEdit.getByLabel('To')).toHaveValue('ops@example.com\noncall@example.com');
  await mailEdit.getByLabel('To').fill('ops@example.com');
  await mailEdit.getByRole('button', { name: 'Save changes' }).click();
  await expect(mailEdit).toBeHidden();
  expect(await configOf('mail')).toEqual({ ...mail, to_addrs: ['ops@example.com'] });

  await channels.getByRole('button', { name: 'Edit pager' }).click();
  const pagerEdit = page.getByRole('dialog', { name: 'Change pager' });
  await pagerEdit.getByLabel('Severity').selectOption({ label: 'By trigger' });
  await pagerEdit.getByLabel('Active').uncheck();
  await pagerEdit.getByRole('button', { name: 'Save changes' }).click();
  await expect(pagerEdit).toBeHidden();
  expect(await configOf('pager')).toEqual({ integration_key: MASK });
  await expect(channels.getByRole('row', { name: /pager/ })).toContainText('inactive');

  // Deleting asks first.
  await channels.getByRole('button', { name: 'Delete chat' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete chat?' });
  await expect(confirm.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await confirm.getByRole('button', { name: 'Delete channel' }).click();
  await expect(channels.getByRole('row', { name: /chat/ })).toHaveCount(0);
  await screenshot(page, 'notifications-account-channels');
});

test('the bell counts a failed task in the inbox; the inbox marks it read and leads to the task', async () => {
  // The admin's task.failed subscription also sends through their personal channel.
  const subs = region('Your subscriptions');
  await subs.getByRole('button', { name: 'Edit task.failed in Default' }).click();
  const edit = page.getByRole('dialog', { name: 'Change your subscription to task.failed' });
  await edit.getByRole('group', { name: 'Your channels' }).getByLabel('my-hook').check();
  await edit.getByRole('button', { name: 'Save changes' }).click();
  await expect(subs.getByRole('row', { name: 'Default: task.failed' })).toContainText('in-app, my-hook');

  await expect(page.getByRole('button', { name: 'Notifications', exact: true })).toBeVisible();
  await expect(badge()).toHaveCount(0);
  const minted = await page.request.post('/api/v1/projects/default/agents', {
    data: { name: 'billing-workers' },
    headers: await csrfHeaders(context),
  });
  expect(minted.status()).toBe(201);
  const m = await minted.json();
  const agent = new TestAgent({ baseUrl: svc.url, token: m.token, hmacSecret: m.hmac_secret, agentId: m.agent.id, projectId });
  expect((await agent.probe()).status).toBe(200);
  const uploaded = await agent.upload([agent.eventBatch(failingTask('charge-42', 'app.billing.charge'))]);
  expect(uploaded.body).toMatchObject({ accepted: 1, rejected: 0 });
  await expect.poll(unreadCount).toBe(1);

  // The bell asks again every 30 s; a new page load asks at once.
  await page.reload();
  const bell = page.getByRole('button', { name: 'Notifications, 1 unread' });
  await expect(bell).toBeVisible();
  await expect(badge()).toHaveText('1');
  await screenshot(page, 'notifications-bell');

  await bell.click();
  const inbox = page.getByRole('dialog', { name: 'Notifications' });
  const items = inbox.getByTestId('inbox-item');
  await expect(items).toHaveCount(1);
  await expect(items.first()).toContainText('Task failed: app.billing.charge');
  await expect(items.first()).toContainText("CardDeclined('insufficient funds')");
  await expect(items.first()).toContainText('(unread)');
  await expect(inbox.getByRole('status')).toHaveText('1 unread.');
  await screenshot(page, 'notifications-inbox');
  await inbox.getByRole('button', { name: 'Mark “Task failed: app.billing.charge” read' }).click();
  await expect(inbox.getByRole('status')).toHaveText('Nothing unread.');
  await expect(items.first()).not.toContainText('(unread)');
  expect(await unreadCount()).toBe(0);

  // The row leads to the task's page; the inbox closes.
  await items.first().getByRole('link', { name: 'Task failed: app.billing.charge' }).click();
  await expect(page).toHaveURL(/\/projects\/default\/tasks\/celery\/charge-42$/);
  await expect(inbox).toBeHidden();
  await expect(page.getByTestId('task-state')).toHaveText('failure');

  // Two more failures: "Mark all read" empties the count.
  await agent.upload([agent.eventBatch(failingTask('charge-43', 'app.billing.charge'))]);
  await agent.upload([agent.eventBatch(failingTask('charge-44', 'app.billing.refund'))]);
  await expect.poll(unreadCount).toBe(2);
  await page.getByRole('button', { name: /^Notifications/ }).click();
  await expect(inbox.getByRole('status')).toHaveText('2 unread.');
  await inbox.getByLabel('Unread only').check();
  await expect(items).toHaveCount(2);
  await inbox.getByRole('button', { name: 'Mark all read' }).click();
  await expect(inbox.getByRole('status')).toHaveText('Nothing unread.');
  await expect(inbox).toContainText('Nothing unread');
  await inbox.getByLabel('Unread only').uncheck();
  await expect(items).toHaveCount(3);
  await inbox.getByRole('button', { name: 'Close' }).click();
  await expect(inbox).toBeHidden();
  await expect(badge()).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Notifications', exact: true })).toBeVisible();

  // The sends through the personal channel are in its log, each naming its task.
  await page.goto('/account/notifications');
  const log = region('Your delivery log');
  await expect(bodyRows(log.getByRole('table'))).toHaveCount(4);
  const failed = bodyRows(log.getByRole('table')).filter({ hasText: 'charge-42' });
  await expect(failed).toContainText('task.failed');
  await expect(failed).toContainText('sent');
  await expect(failed.getByRole('link', { name: 'app.billing.charge' })).toHaveAttribute('href', '/projects/default/tasks/celery/charge-42');
  const delivered = (await receiver.seen()).filter((r) => r.path === '/personal' && r.body.includes('charge-42'));
  expect(delivered).toHaveLength(1);
});

test('the notification pages in dark mode and on a narrow screen, the bell in the top bar', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto('/projects/default/notifications');
  await expect(region('Channels').getByRole('row', { name: /ops-hook/ })).toBeVisible();
  await screenshot(page, 'notifications-project-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/account/notifications');
  await expect(region('Your subscriptions')).toBeVisible();
  const bell = page.getByRole('banner').getByRole('button', { name: 'Notifications', exact: true });
  await expect(bell).toBeVisible();
  await bell.click();
  await expect(page.getByRole('dialog', { name: 'Notifications' }).getByTestId('inbox-item')).toHaveCount(3);
  await screenshot(page, 'notifications-narrow');
  await page.setViewportSize({ width: 1280, height: 720 });
});
