// Single sign-on in Chromium against the compiled dist/svc and a real OpenID Provider (the certified
// `oidc-provider` from npm, on loopback, started here): the SSO button on the sign-in page, the
// provider's own sign-in form, and back to the dashboard signed in. A newcomer is provisioned with
// the roles their groups map to; the administrator's account is matched by e-mail and linked, the
// identity shown on the Security page and unlinked there; a refusal comes back to the sign-in page
// with its reason in words; a user whose second factor is the provider's confirms an action there again. svc reaches the provider only on 127.0.0.1 (SVC_OIDC_ALLOW_PRIVATE_PROVIDER).
import { expect, test, type BrowserContext, type Page } from '@playwright/test';
import { startOidcProvider, PROVIDER_PASSWORD, type TestOidcProvider } from '../helpers/oidc-provider.ts';
import { screenshot } from './browser.ts';
import { ageMfaVerifications, startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };
const SECRET = 'e2e-client-secret-of-svc-0123456789abcdef';

test.describe.configure({ mode: 'serial' });

let op: TestOidcProvider;
let svc: Svc;

test.beforeAll(async ({ browser }) => {
  op = await startOidcProvider({
    clientId: 'svc-e2e',
    clientSecret: SECRET,
    redirectUris: [],
    accounts: [
      { sub: 'idp-admin', email: ADMIN.email, name: 'Ada Admin' },
      { sub: 'idp-newcomer', email: 'newcomer@example.com', name: 'Nia Newcomer', groups: ['platform-team'] },
      { sub: 'idp-unverified', email: 'unverified@example.com', email_verified: false },
      // The provider asserts a multi-factor sign-in for this one (amr), so svc asks for no code of its own.
      { sub: 'idp-strong', email: 'strong@example.com', name: 'Sam Strong', amr: ['pwd', 'mfa'] },
    ],
  });
  svc = await startSvc({
    SVC_OIDC_ISSUER: op.issuer,
    SVC_OIDC_CLIENT_ID: 'svc-e2e',
    SVC_OIDC_CLIENT_SECRET: SECRET,
    SVC_OIDC_ALLOW_HTTP: 'true',
    SVC_OIDC_ALLOW_PRIVATE_PROVIDER: 'true',
    SVC_OIDC_SCOPES: 'openid email profile groups',
    SVC_OIDC_BUTTON_LABEL: 'Sign in with Example ID',
    SVC_SSO_AUTO_PROVISION: 'true',
    SVC_SSO_PROVISION_PROJECTS: 'default',
    SVC_OIDC_PROJECT_ROLES: 'platform-team:default:operator',
  });
  // The provider learns svc's callback now that svc's port is known (before its first request).
  op.redirectUris.push(`${svc.url}/api/v1/auth/sso/callback`);
  const c = await browser.newContext({ baseURL: svc.url });
  const token = new URL(svc.setupUrl).searchParams.get('token');
  expect((await c.request.post('/api/v1/setup/complete', { data: { token, ...ADMIN } })).status()).toBe(201);
  await c.close();
});

test.afterAll(async () => {
  await svc?.stop();
  await op?.close();
});

/** From svc's sign-in page through the provider's form; `next` is where the dashboard should land. */
async function ssoSignIn(page: Page, email: string, next = '/'): Promise<void> {
  await page.goto(`/login?next=${encodeURIComponent(next)}`);
  await page.getByRole('link', { name: 'Sign in with Example ID' }).click();
  await expect(page.getByRole('heading', { name: 'Test identity provider' })).toBeVisible();
  expect(page.url().startsWith(op.issuer)).toBe(true);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PROVIDER_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function fresh(browser: import('@playwright/test').Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: svc.url });
  return { context, page: await context.newPage() };
}

test('the sign-in page offers the SSO button above the password form', async ({ browser }) => {
  const { context, page } = await fresh(browser);
  await page.goto('/login');
  await expect(page.getByRole('link', { name: 'Sign in with Example ID' })).toBeVisible();
  await expect(page.getByLabel('E-mail address')).toBeVisible();
  await screenshot(page, 'sso-01-sign-in-page');
  await context.close();
});

test('a newcomer signs in through the provider: provisioned, with the role their group maps to', async ({ browser }) => {
  const { context, page } = await fresh(browser);
  await ssoSignIn(page, 'newcomer@example.com', '/projects');
  await expect(page).toHaveURL(new RegExp(`^${svc.url}/projects`));
  const me = await (await page.request.get('/api/v1/auth/me')).json();
  expect(me).toMatchObject({ email: 'newcomer@example.com', display_name: 'Nia Newcomer', is_admin: false });
  expect(me.memberships.map((m: { project_slug: string; role: string }) => [m.project_slug, m.role])).toEqual([['default', 'operator']]);
  await screenshot(page, 'sso-02-newcomer-signed-in');
  // Their only way in: the Security page lists the identity without an Unlink button.
  await page.goto('/account/security');
  const section = page.getByRole('region', { name: 'Single sign-on' });
  await expect(section.getByTestId('sso-identity')).toContainText('newcomer@example.com');
  await expect(section.getByRole('button', { name: 'Unlink' })).toHaveCount(0);
  await expect(section).toContainText('only way to sign in');
  await context.close();
});

test('the administrator is matched by e-mail, linked, and can unlink on the Security page', async ({ browser }) => {
  const { context, page } = await fresh(browser);
  await ssoSignIn(page, ADMIN.email, '/account/security');
  await expect(page).toHaveURL(new RegExp(`^${svc.url}/account/security`));
  const section = page.getByRole('region', { name: 'Single sign-on' });
  await expect(section.getByTestId('sso-identity')).toContainText(op.issuer);
  await screenshot(page, 'sso-03-linked-identity');
  await section.getByRole('button', { name: 'Unlink' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Unlink' }).click();
  await expect(page.getByRole('region', { name: 'Single sign-on' })).toHaveCount(0);
  expect((await (await page.request.get('/api/v1/auth/sso/identities')).json()).identities).toEqual([]);
  await context.close();
});

test('a refusal comes back to the sign-in page with its reason, and no session', async ({ browser }) => {
  const { context, page } = await fresh(browser);
  await ssoSignIn(page, 'unverified@example.com');
  await expect(page).toHaveURL(/\/login\?sso_error=sso_email_unverified/);
  await expect(page.getByTestId('sso-error')).toContainText('has not verified your e-mail address');
  expect((await context.cookies()).some((c) => c.name === 'svc_session')).toBe(false);
  await screenshot(page, 'sso-04-refused');
  await context.close();
});

test('MFA from the provider, past its window: the dashboard offers to verify there, and the action then goes through', async ({ browser }) => {
  const { context, page } = await fresh(browser);
  await ssoSignIn(page, 'strong@example.com', '/account/api-keys');
  await expect(page).toHaveURL(new RegExp(`^${svc.url}/account/api-keys`));
  ageMfaVerifications(svc);
  await page.getByLabel('Name').fill('nightly report');
  await page.getByRole('button', { name: 'Create key' }).click();
  const prompt = page.getByRole('dialog', { name: 'Confirm it is you' });
  const provider = new URL(op.issuer).host;
  await expect(prompt.getByRole('link', { name: `Verify with ${provider}` })).toBeVisible();
  await expect(prompt.getByLabel('Authenticator code')).toHaveCount(0);
  await screenshot(page, 'sso-05-verify-with-provider');
  await prompt.getByRole('link', { name: `Verify with ${provider}` }).click();
  // The provider asks for the password again, though its own session is still open (prompt=login).
  await expect(page.getByRole('heading', { name: 'Test identity provider' })).toBeVisible();
  await page.getByLabel('E-mail').fill('strong@example.com');
  await page.getByLabel('Password').fill(PROVIDER_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(new RegExp(`^${svc.url}/account/api-keys$`));
  await page.getByLabel('Name').fill('nightly report');
  await page.getByRole('button', { name: 'Create key' }).click();
  await expect(page.getByTestId('api-key-secret')).toBeVisible();
  expect((await (await page.request.get('/api/v1/auth/me')).json()).mfa).toEqual({ enrolled: false, pending: false, fresh: true });
  await context.close();
});
