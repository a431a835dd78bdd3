// The schedules pages in a real browser against the compiled dist/svc, with svc's own scheduler running
// (`svc scheduler serve` with a certificate from `svc mint-scheduler-cert`): the empty list, the project's time
// zone set by its admin, a quarterly schedule listed with its next five runs in UTC and the project's zone and
// a DST transition flagged, run now and disable from the list, the detail page's next runs and fire history
// (the run-now fire, and a fire the scheduler process sent on time), misfires; screenshots of each.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { csrfHeaders, firstAdmin, nav, screenshot } from './browser.ts';
import { startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };
const binary = process.env.SVC_TEST_BINARY ?? fileURLToPath(new URL('../../dist/svc', import.meta.url));

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let context: BrowserContext;
let page: Page;
let scheduler: ChildProcess | null = null;
let schedulerLog = '';

const table = (name: string, p: Page = page): Locator => p.getByRole('region', { name, exact: true }).getByRole('table');

async function createSchedule(body: Record<string, unknown>): Promise<string> {
  const res = await page.request.post('/api/v1/projects/default/schedules', { data: body, headers: await csrfHeaders(context) });
  expect(res.status()).toBe(201);
  return (await res.json()).id;
}

test.beforeAll(async ({ browser }) => {
  svc = await startSvc({
    SVC_SCHEDULER_GRPC_ENABLED: 'true',
    SVC_SCHEDULER_GRPC_BIND_HOST: '127.0.0.1',
    SVC_SCHEDULER_GRPC_BIND_PORT: '0',
    SVC_SCHEDULER_GRPC_ALLOWED_CNS: '["e2e-scheduler"]',
  });
  context = await browser.newContext({ baseURL: svc.url });
  page = await context.newPage();
  await firstAdmin(page, svc.setupUrl, ADMIN);
});

test.afterAll(async () => {
  scheduler?.kill('SIGTERM');
  await context?.close();
  await svc?.stop();
});

test('no schedules yet: the list says where they come from, and no misfires', async () => {
  await page.goto('/projects/default');
  await nav(page, 'Schedules').click();
  await expect(page.getByText('No schedules yet')).toBeVisible();
  await expect(page.getByText('No misfires')).toBeVisible();
  await expect(page.getByTestId('project-zone')).toHaveText('UTC');
  await screenshot(page, 'schedules-empty');
});

test("the project's time zone, set by its admin; an unknown zone is refused", async () => {
  await page.getByRole('button', { name: 'Change time zone' }).click();
  const form = page.getByRole('form', { name: 'Project time zone' });
  await form.getByLabel('Project time zone (IANA name)').fill('Mars/Olympus');
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(form.getByText('is not a time zone this service knows')).toBeVisible();
  await form.getByLabel('Project time zone (IANA name)').fill('America/New_York');
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByTestId('project-zone')).toHaveText('America/New_York');
});

test('a quarterly schedule is listed with its next five runs in UTC and the project zone, a DST transition flagged', async () => {
  // 03:00 Berlin time on the first day of every third month: five runs span more than a year, so at least one
  // crosses a daylight saving change in Berlin and in New York whatever today is.
  await createSchedule({ name: 'quarterly-report', engine: 'celery', kind: 'cron', expression: '0 3 1 */3 *', timezone: 'Europe/Berlin', task_name: 'reports.quarterly' });
  await page.getByRole('button', { name: 'Refresh' }).first().click();
  const row = page.getByTestId('schedule-row').filter({ hasText: 'quarterly-report' });
  await expect(row).toContainText('cron 0 3 1 */3 * (Europe/Berlin)');
  await expect(row).toContainText('svc-scheduler');
  await expect(row).toContainText('enabled');
  const runs = row.getByTestId('upcoming-run');
  await expect(runs).toHaveCount(5);
  // Each run in UTC and in the project's zone with its offset; 03:00 in Berlin is 01:00 or 02:00 UTC.
  for (let i = 0; i < 5; i++) {
    await expect(runs.nth(i)).toContainText(/\d{4}-\d{2}-01 0[12]:00 UTC · \d{4}-\d{2}-\d{2} \d{2}:00 -0[45]:00/);
  }
  await expect(row.getByText(/^DST [+-]\d\d:\d\d → [+-]\d\d:\d\d/).first()).toBeVisible();
  await expect(table('Schedules').getByRole('columnheader', { name: 'Next five runs (UTC · America/New_York)' })).toBeVisible();
  await screenshot(page, 'schedules-list');
});

test('run now and disable from the list', async () => {
  const row = page.getByTestId('schedule-row').filter({ hasText: 'quarterly-report' });
  await row.getByRole('button', { name: 'Run quarterly-report now' }).click();
  // No agent runs celery here: the fire waits in the buffer (SVC_SCHEDULE_FIRE_BUFFER_SECONDS).
  await expect(row.getByRole('status')).toHaveText('Fired now (buffered).');
  await row.getByRole('button', { name: 'Disable quarterly-report' }).click();
  await expect(row).toContainText('disabled');
  await expect(row.getByRole('button', { name: 'Enable quarterly-report' })).toBeVisible();
  await screenshot(page, 'schedules-disabled');
});

test('the detail page: definition, next five runs in three zones with the DST column, the run-now fire in the history', async () => {
  await page.getByRole('link', { name: 'quarterly-report' }).click();
  await expect(page.getByRole('heading', { name: 'Schedule quarterly-report' })).toBeVisible();
  await expect(page.getByTestId('schedule-state')).toContainText('disabled');
  const next = table('Next five runs');
  await expect(next.getByRole('columnheader')).toHaveText(['#', 'UTC', 'America/New_York (project)', 'Europe/Berlin (schedule)', 'DST']);
  await expect(next.locator('tbody tr')).toHaveCount(5);
  // Berlin's wall clock stays 03:00 across the change; the UTC hour moves.
  for (let i = 0; i < 5; i++) await expect(next.locator('tbody tr').nth(i).locator('td').nth(3)).toContainText(/-01 03:00 \+0[12]:00/);
  await expect(next.getByText(/^DST: (Berlin|New York) [+-]\d\d:\d\d → [+-]\d\d:\d\d$/).first()).toBeVisible();
  const history = table('Fire history');
  await expect(history.getByTestId('fire-row')).toHaveCount(1);
  await expect(history.getByTestId('fire-row').first()).toContainText('run now');
  await expect(history.getByTestId('fire-row').first()).toContainText('buffered');
  await expect(page.getByRole('region', { name: 'Misfires', exact: true }).getByText('No misfires')).toBeVisible();
  await screenshot(page, 'schedule-detail');
  // Enabled again from its page.
  await page.getByRole('button', { name: 'Enable quarterly-report' }).click();
  await expect(page.getByTestId('schedule-state')).toContainText('enabled');
});

test('svc scheduler fires a schedule on time; its fire shows in the history', async () => {
  const home = join(svc.home, '.svc');
  const certs = join(svc.home, 'scheduler-certs');
  const minted = spawnSync(binary, ['mint-scheduler-cert', '--name', 'e2e-scheduler', '--out-dir', certs], { env: { PATH: process.env.PATH ?? '', SVC_HOME: home }, encoding: 'utf8' });
  expect(minted.status).toBe(0);
  const endpoint = /scheduler endpoint (https:\/\/\S+)/.exec(svc.stderr())![1]!;
  const id = await createSchedule({ name: 'heartbeat', engine: 'celery', kind: 'interval', expression: '3', task_name: 'app.heartbeat' });
  scheduler = spawn(binary, ['scheduler', 'serve', '--brain-grpc-url', endpoint, '--tls-cert', join(certs, 'e2e-scheduler.crt'), '--tls-key', join(certs, 'e2e-scheduler.key'), '--tls-ca', join(home, 'scheduler-pki/ca.crt'), '--info-port', '0'], {
    env: { PATH: process.env.PATH ?? '', SVC_HOME: join(svc.home, 'scheduler-home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  scheduler.stdout!.on('data', (c: Buffer) => (schedulerLog += c.toString()));
  scheduler.stderr!.on('data', (c: Buffer) => (schedulerLog += c.toString()));
  await page.goto(`/projects/default/schedules/${id}`);
  const rows = table('Fire history').getByTestId('fire-row');
  await expect(async () => {
    await page.getByRole('region', { name: 'Fire history', exact: true }).getByRole('button', { name: 'Refresh' }).click();
    await expect(rows.first()).toContainText('scheduled', { timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  const fires = await (await page.request.get(`/api/v1/projects/default/schedules/${id}/fires`)).json();
  expect(fires.length, schedulerLog).toBeGreaterThan(0);
  for (const f of fires) expect(Date.parse(f.fired_at) - Date.parse(f.scheduled_for)).toBeLessThan(1000);
  await screenshot(page, 'schedule-fired-by-scheduler');
  // The list shows it too, with its last run.
  await nav(page, 'Schedules').click();
  await expect(page.getByTestId('schedule-row').filter({ hasText: 'heartbeat' })).toContainText('every 3 s');
});
