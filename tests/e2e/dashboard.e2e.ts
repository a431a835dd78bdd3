// The dashboard in a real browser against the compiled dist/svc, from first boot onwards: setup, enrolment,
// sign-in with the MFA step, the MFA re-check, projects, members and invitations, API keys, activity, health,
// readable server errors and a session revoked from elsewhere. The tests share one installation and run in
// order; each saves a screenshot of its page into test-results/screenshots/.
import { expect, request as playwrightRequest, test, type BrowserContext, type Page } from '@playwright/test';
import { nav, screenshot, signIn, totpOf } from './browser.ts';
import { ageMfaVerifications, startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', name: 'Ada Admin' };
const INVITEE = { email: 'ops@example.com', password: 'Staple-Orbit-Lantern-42', name: 'Otto Ops' };

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let context: BrowserContext;
let page: Page;
let totpSecret = '';
let inviteLink = '';

const totp = () => totpOf(totpSecret);
const shot = (name: string, p: Page = page) => screenshot(p, name);

test.beforeAll(async ({ browser }) => {
  svc = await startSvc();
  context = await browser.newContext({ baseURL: svc.url });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.url });
  page = await context.newPage();
});

test.afterAll(async () => {
  await context?.close();
  await svc?.stop();
});

test('first boot: the dashboard sends the visitor to setup, and the setup form signs the new administrator in', async () => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/setup$/);
  await expect(page.getByRole('alert')).toContainText('needs the setup link');

  await page.goto(svc.setupUrl);
  await page.getByLabel('E-mail address').fill(ADMIN.email);
  await page.getByLabel('Your name').fill(ADMIN.name);
  await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
  await page.getByLabel('Repeat the password').fill(ADMIN.password);
  await shot('setup');
  await page.getByRole('button', { name: 'Create administrator' }).click();

  // One project exists (default), so the dashboard opens it.
  await expect(page).toHaveURL(/\/projects\/default$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Default');
  await expect(page.getByRole('navigation', { name: 'Main' })).toContainText(`Signed in as ${ADMIN.name}`);
  await shot('project-overview');
});

test('an action that needs two-factor authentication explains how to enrol', async () => {
  await nav(page, 'Users').click();
  await page.getByRole('button', { name: 'New user' }).click();
  const dialog = page.getByRole('dialog', { name: 'New user' });
  await dialog.getByLabel('E-mail address').fill('early@example.com');
  await dialog.getByLabel('Password', { exact: true }).fill('Early-Bird-Catches-77');
  await dialog.getByRole('button', { name: 'Create user' }).click();
  await expect(dialog.getByRole('alert')).toContainText('needs two-factor authentication');
  await dialog.getByRole('link', { name: 'Set up two-factor authentication' }).click();
  await expect(page).toHaveURL(/\/account\/security$/);
});

test('TOTP enrolment in the browser: QR code, key, recovery codes shown once', async () => {
  await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
  await expect(page.getByRole('img', { name: 'QR code for your authenticator app' })).toBeVisible();
  totpSecret = (await page.getByTestId('totp-secret').textContent())!.trim();
  expect(totpSecret).toMatch(/^[A-Z2-7]{32}$/);
  await shot('security-enrolment');
  await page.getByLabel('Code from the app').fill(totp());
  await page.getByRole('button', { name: 'Turn on two-factor authentication' }).click();

  const codes = page.getByTestId('recovery-codes');
  await expect(codes.locator('li')).toHaveCount(10);
  await codes.getByRole('button', { name: 'Copy all' }).click();
  await expect(codes.getByRole('button', { name: 'Copied' })).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(
    (await codes.locator('li').first().textContent())!.trim(),
  );
  const download = page.waitForEvent('download');
  await codes.getByRole('link', { name: 'Download' }).click();
  expect((await download).suggestedFilename()).toBe('svc-recovery-codes.txt');
  await shot('security-recovery-codes');
  await codes.getByRole('button', { name: 'I have saved them' }).click();
  await expect(page.getByText('10 unused recovery codes')).toBeVisible();
  await expect(page.getByTestId('recovery-codes')).toHaveCount(0);
});

test('sign out, then sign in with the MFA step and remember this device', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole('status')).toHaveText('You are signed out.');
  await shot('login');
  await page.getByLabel('E-mail address').fill(ADMIN.email);
  await page.getByLabel('Password', { exact: true }).fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/login\/mfa/);
  await shot('login-mfa');
  await page.getByLabel('Authenticator code').fill('000000');
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('alert')).toContainText('That code is not right');
  await page.getByLabel('Authenticator code').fill(totp());
  await page.getByLabel(/Remember this device/).check();
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page).toHaveURL(/\/projects\/default$/);

  // The remembered device skips the code at the next sign-in.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, ADMIN);
  await expect(page).toHaveURL(/\/projects\/default$/);
  await nav(page, 'Security').click();
  const device = page.getByRole('row', { name: /Chrome on Linux/ });
  await expect(device).toContainText('active');

  // A remembered device counts as a fresh verification: new recovery codes, and forgetting the device.
  await page.getByRole('button', { name: 'Make new recovery codes' }).click();
  await page.getByRole('dialog', { name: 'Make new recovery codes?' }).getByRole('button', { name: 'Make new codes' }).click();
  await expect(page.getByTestId('recovery-codes').locator('li')).toHaveCount(10);
  await page.getByRole('button', { name: 'I have saved them' }).click();
  await page.getByRole('button', { name: 'Forget Chrome on Linux' }).click();
  await page.getByRole('dialog', { name: 'Forget Chrome on Linux?' }).getByRole('button', { name: 'Forget device' }).click();
  await expect(device).toContainText('forgotten');
  await shot('security');
});

test('users: the MFA re-check prompt, a readable validation error, then the user is created', async () => {
  // As if the verification had grown older than SVC_MFA_VERIFICATION_TTL_SECONDS.
  ageMfaVerifications(svc);
  await nav(page, 'Users').click();
  await page.getByRole('button', { name: 'New user' }).click();
  const dialog = page.getByRole('dialog', { name: 'New user' });
  await dialog.getByLabel('E-mail address').fill('dev@example.com');
  await dialog.getByLabel('Display name').fill('Dana Dev');
  await dialog.getByLabel('Password', { exact: true }).fill('short');
  await dialog.getByRole('button', { name: 'Create user' }).click();

  const prompt = page.getByRole('dialog', { name: 'Confirm it is you' });
  await expect(prompt).toBeVisible();
  await shot('mfa-recheck');
  await prompt.getByLabel('Authenticator code').fill(totp());
  await prompt.getByRole('button', { name: 'Confirm' }).click();
  await expect(prompt).toBeHidden();
  // The retried request reached the password policy: its message sits under the field, not as JSON.
  await expect(dialog.getByText('Password must have at least 12 characters')).toBeVisible();
  await expect(dialog).not.toContainText('{');

  await dialog.getByLabel('Password', { exact: true }).fill('Dana-Writes-Code-2026');
  await dialog.getByRole('button', { name: 'Create user' }).click();
  await expect(dialog).toBeHidden();
  const row = page.getByRole('row', { name: /dev@example\.com/ });
  await expect(row).toContainText('Dana Dev');

  await row.getByRole('button', { name: 'Edit dev@example.com' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit dev@example.com' });
  await edit.getByLabel('Display name').fill('Dana Developer');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(edit).toBeHidden();
  await expect(row).toContainText('Dana Developer');

  await row.getByRole('button', { name: 'Deactivate dev@example.com' }).click();
  await page.getByRole('dialog', { name: 'Deactivate dev@example.com?' }).getByRole('button', { name: 'Deactivate' }).click();
  await expect(row).toContainText('deactivated');
  await shot('users');

  // Your own row offers nothing the server would refuse: no deactivation, deletion or dropping your
  // own admin role; your password changes under Security.
  const mine = page.getByRole('row', { name: /admin@example\.com/ });
  await expect(mine).toContainText('(you)');
  await expect(mine.getByRole('button', { name: `Deactivate ${ADMIN.email}` })).toHaveCount(0);
  await expect(mine.getByRole('button', { name: `Delete ${ADMIN.email}` })).toHaveCount(0);
  await expect(mine.getByRole('link', { name: 'Change your password' })).toHaveAttribute('href', '/account/security');
  await mine.getByRole('button', { name: `Edit ${ADMIN.email}` }).click();
  const own = page.getByRole('dialog', { name: `Edit ${ADMIN.email}` });
  await expect(own.getByLabel(/Administrator/)).toHaveCount(0);
  await own.getByRole('button', { name: 'Cancel' }).click();
});

test('projects: create, a duplicate refused readably, then invite a member with a link shown once', async () => {
  await nav(page, 'Projects').click();
  for (const [name, slug] of [
    ['Payments', 'payments'],
    ['Scratch', 'scratch'],
  ]) {
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    await dialog.getByLabel('Name').fill(name!);
    await dialog.getByLabel('Slug').fill(slug!);
    await dialog.getByRole('button', { name: 'Create project' }).click();
    await expect(dialog).toBeHidden();
  }
  await page.getByRole('button', { name: 'New project' }).click();
  const dup = page.getByRole('dialog', { name: 'New project' });
  await dup.getByLabel('Name').fill('Payments again');
  await dup.getByLabel('Slug').fill('payments');
  await dup.getByRole('button', { name: 'Create project' }).click();
  await expect(dup.getByRole('alert')).toHaveText('A project with slug payments exists.');
  await page.keyboard.press('Escape');
  await expect(dup).toBeHidden();
  await expect(page.getByRole('row')).toHaveCount(4);
  await shot('projects');

  await page.getByRole('link', { name: 'Payments' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Payments');
  await nav(page, 'Members').click();
  await expect(page).toHaveURL(/\/projects\/payments\/members$/);
  await page.getByLabel('E-mail address').fill(INVITEE.email);
  await page.getByRole('form', { name: 'Invite someone' }).getByLabel('Role').selectOption('operator');
  await page.getByRole('button', { name: 'Create invitation' }).click();
  inviteLink = (await page.getByTestId('invitation-link').textContent())!.trim();
  expect(inviteLink).toMatch(/\/invite#token=/);
  await expect(page.getByRole('row', { name: new RegExp(INVITEE.email) })).toContainText('operator');
  await shot('members');
});

test('an invitation accepted in a second browser, then the member managed and another invitation revoked', async ({
  browser,
}) => {
  const other = await browser.newContext({ baseURL: svc.url });
  const guest = await other.newPage();
  await guest.goto(inviteLink);
  await expect(guest.getByText('Join Payments as operator')).toBeVisible();
  await guest.getByLabel('Your name').fill(INVITEE.name);
  await guest.getByLabel('Password', { exact: true }).fill(INVITEE.password);
  await guest.getByLabel('Repeat the password').fill(INVITEE.password);
  await shot('invite', guest);
  await guest.getByRole('button', { name: 'Create account and join' }).click();
  await expect(guest).toHaveURL(/\/projects\/payments$/);
  await expect(guest.getByRole('heading', { level: 1 })).toHaveText('Payments');
  // An operator sees no member management and no Users page.
  await expect(nav(guest, 'Members')).toHaveCount(0);
  await expect(nav(guest, 'Users')).toHaveCount(0);
  await other.close();

  await page.reload();
  const member = page.getByRole('row', { name: new RegExp(INVITEE.email) });
  await expect(member).toContainText(INVITEE.name);
  await member.getByLabel(`Role of ${INVITEE.email}`).selectOption('viewer');
  await page.reload();
  await expect(page.getByLabel(`Role of ${INVITEE.email}`)).toHaveValue('viewer');

  await page.getByLabel('E-mail address').fill('temp@example.com');
  await page.getByRole('button', { name: 'Create invitation' }).click();
  await page.getByRole('button', { name: 'Revoke the invitation for temp@example.com' }).click();
  await page
    .getByRole('dialog', { name: /Revoke the invitation/ })
    .getByRole('button', { name: 'Revoke' })
    .click();
  await expect(page.getByText('No pending invitations')).toBeVisible();
});

test('archiving a project', async () => {
  await nav(page, 'Projects').click();
  await page.getByRole('button', { name: 'Archive Scratch' }).click();
  await page.getByRole('dialog', { name: 'Archive Scratch?' }).getByRole('button', { name: 'Archive project' }).click();
  await expect(page.getByRole('link', { name: 'Scratch' })).toHaveCount(0);
  await page.getByLabel('Show archived').check();
  await expect(page.getByRole('row', { name: /Scratch/ })).toContainText('archived');
});

test('API key: created, its secret shown once with a copy button, and it works', async () => {
  await nav(page, 'API keys').click();
  await expect(page.getByText('No API keys yet')).toBeVisible();
  await page.getByLabel('Name').fill('nightly report');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('api-key-secret').textContent())!.trim();
  expect(secret).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
  await page.getByRole('button', { name: 'Copy', exact: true }).click();
  // The button writes the clipboard asynchronously: read until the write has landed.
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
  await expect(page.getByRole('row', { name: /nightly report/ })).toContainText(secret.slice(0, 12));
  await shot('api-keys');

  const client = await playwrightRequest.newContext({
    baseURL: svc.url,
    extraHTTPHeaders: { authorization: `Bearer ${secret}` },
  });
  expect((await client.get('/api/v1/projects')).status()).toBe(200);
  await client.dispose();
  await page.reload();
  await expect(page.getByTestId('api-key-secret')).toHaveCount(0);
  await expect(page.locator('body')).not.toContainText(secret);
});

test('activity: rows, filters, live updates, older pages, and the rate-limit message', async () => {
  await nav(page, 'Activity').click();
  const feed = page.getByRole('list', { name: 'Activity, newest first' });
  await expect(feed).toContainText('api_key.created');
  await expect(feed).toContainText('invitation.accept');
  await shot('activity');

  await page.getByLabel('Action starts with').fill('invitation.');
  await page.getByRole('button', { name: 'Apply' }).click();
  await expect(page).toHaveURL(/action=invitation\./);
  await expect(feed.getByRole('listitem').first()).toContainText('invitation.');
  for (const action of await feed.locator('.feed-action').allTextContents()) expect(action).toMatch(/^invitation\./);
  await page.getByLabel('Project', { exact: true }).selectOption('payments');
  await expect(page).toHaveURL(/project=payments/);
  await expect(feed).toContainText('invitation.mint');
  await page.getByRole('button', { name: 'Clear filters' }).click();

  // Live: a change made elsewhere shows up without reloading.
  const csrf = (await context.cookies()).find((c) => c.name === 'svc_csrf')!.value;
  const patch = (n: number) =>
    page.request.patch('/api/v1/auth/me', { data: { display_name: `${ADMIN.name} ${n}` }, headers: { 'x-csrf-token': csrf } });
  expect((await patch(1)).status()).toBe(200);
  await page.getByRole('button', { name: 'Check now' }).click();
  await expect(feed.getByRole('listitem').first()).toContainText('user.updated');

  // Older pages: more rows than one page of 50.
  for (let n = 2; n <= 50; n++) await patch(n);
  await page.reload();
  await expect(feed.getByRole('listitem')).toHaveCount(50);
  await page.getByRole('button', { name: 'Load older' }).click();
  await expect.poll(() => feed.getByRole('listitem').count()).toBeGreaterThan(50);

  // 60 requests a minute per user: use up the rest, and the page says so instead of failing.
  for (let n = 0; n < 70 && (await page.request.get('/api/v1/activity?limit=1')).status() !== 429; n++);
  await page.getByRole('button', { name: 'Check now' }).click();
  await expect(page.getByTestId('activity-rate-limited')).toContainText('60 requests a minute');
  await shot('activity-rate-limited');
});

test('health: readiness, version, and the audit chain verified on request', async () => {
  // Health is one of the pages fetched when first shown (web/src/ui/lazy-page.ts): a chunk from the binary,
  // cached like every hashed asset.
  const chunk = page.waitForResponse((r) => /^\/assets\/chunk-\w+\.js$/.test(new URL(r.url()).pathname));
  await nav(page, 'Health').click();
  expect((await chunk).headers()['cache-control']).toBe('public, max-age=31536000, immutable');
  await expect(page.getByTestId('readiness')).toContainText('ready');
  await expect(page.getByTestId('version')).toHaveText(/^\d+\.\d+\.\d+/);
  await page.getByRole('button', { name: 'Verify the audit chain' }).click();
  await expect(page.getByTestId('audit-result')).toContainText('The chain is intact');
  await shot('health');
});

test('a page whose code cannot be fetched says so, with a way on', async () => {
  const tab = await context.newPage();
  // As in a tab left open while svc was upgraded: the chunks it knows of are gone.
  await tab.route('**/assets/chunk-*.js', (route) => route.fulfill({ status: 404, body: '' }));
  await tab.goto('/health');
  const alert = tab.getByRole('alert');
  await expect(alert).toContainText('This page failed to show. Its code could not be fetched from svc');
  await expect(alert.getByRole('button', { name: 'Reload' })).toBeVisible();
  await tab.close();
});

test('profile, and the dashboard in dark mode and on a narrow screen', async () => {
  await nav(page, 'Profile').click();
  await page.getByLabel('Display name').fill(ADMIN.name);
  await page.getByRole('button', { name: 'Save profile' }).click();
  await expect(page.getByText('Profile saved.')).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' })).toContainText(`Signed in as ${ADMIN.name}`);

  const password = page.getByRole('region', { name: 'Password' });
  await password.getByLabel('Current password').fill(ADMIN.password);
  await password.getByLabel('New password', { exact: true }).fill('Correct-Horse-Battery-10');
  await password.getByLabel('Repeat the new password').fill('Correct-Horse-Battery-10');
  await password.getByRole('button', { name: 'Change password' }).click();
  await expect(password.getByRole('status')).toContainText('Password changed');
  ADMIN.password = 'Correct-Horse-Battery-10';
  // This browser got a new session with the change; the page keeps working.
  await nav(page, 'Security').click();
  await expect(page.getByRole('heading', { name: 'Sessions' })).toBeVisible();
  await nav(page, 'Profile').click();
  await shot('profile');

  await page.emulateMedia({ colorScheme: 'dark' });
  await nav(page, 'Projects').click();
  await shot('projects-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await page.setViewportSize({ width: 390, height: 844 });
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeHidden();
  await page.getByRole('button', { name: 'Menu' }).click();
  await expect(nav(page, 'Activity')).toBeVisible();
  await shot('narrow-menu');
  await nav(page, 'Health').click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeHidden();
  await page.setViewportSize({ width: 1280, height: 720 });
});

test('a session revoked from another browser leads back to the login page', async ({ browser }) => {
  const other = await browser.newContext({ baseURL: svc.url });
  const second = await other.newPage();
  await second.goto('/account/security');
  await expect(second).toHaveURL(/\/login\?next=/);
  await signIn(second, ADMIN, totp);
  await expect(second).toHaveURL(/\/account\/security$/);
  const others = second
    .getByRole('row')
    .filter({ hasNot: second.getByText('this browser') })
    .filter({ has: second.getByRole('button', { name: 'Sign out' }) });
  await expect(others).toHaveCount(1);
  await others.getByRole('button', { name: 'Sign out' }).click();
  await second.getByRole('dialog', { name: 'Sign out this session?' }).getByRole('button', { name: 'Sign it out' }).click();
  await expect(others).toHaveCount(0);
  await other.close();

  // The first browser finds out at its next request.
  await nav(page, 'Users').click();
  await expect(page).toHaveURL(/\/login\?next=%2Fusers/);
  await expect(page.getByRole('status')).toHaveText('Your session has ended. Sign in again to continue.');
  await shot('login-session-ended');
});
