// What the e2e files share: screenshots, the sidebar's links, signing in, TOTP codes for an enrolled secret, the
// CSRF header of API calls, and first boot through the API.
import { expect, type BrowserContext, type Page } from '@playwright/test';
import { decodeBase32IgnorePadding } from '@oslojs/encoding';
import { generateTOTP } from '@oslojs/otp';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SHOTS = fileURLToPath(new URL('../../test-results/screenshots/', import.meta.url));

/** A full-page screenshot from the top (so the sticky sidebar sits where a person first sees it). */
export async function screenshot(p: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await p.evaluate(() => window.scrollTo(0, 0));
  await p.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** The sidebar link of a page (the shell's main navigation). */
export const nav = (p: Page, name: string) => p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

/** Signs in on the login page; with `code`, the authenticator step follows. */
export async function signIn(p: Page, user: { email: string; password: string }, code?: () => string): Promise<void> {
  await p.getByLabel('E-mail address').fill(user.email);
  await p.getByLabel('Password', { exact: true }).fill(user.password);
  await p.getByLabel('Password', { exact: true }).press('Enter'); // forms submit from the keyboard
  if (!code) return;
  await expect(p.getByRole('heading', { name: 'Two-factor authentication' })).toBeVisible();
  await p.getByLabel('Authenticator code').fill(code());
  await p.getByRole('button', { name: 'Verify' }).click();
}

export const totpOf = (secretBase32: string): string => generateTOTP(decodeBase32IgnorePadding(secretBase32), 30, 6);

/** The double-submit CSRF header of a context's session, for API calls the tests make beside the page. */
export async function csrfHeaders(c: BrowserContext): Promise<Record<string, string>> {
  const csrf = (await c.cookies()).find((x) => x.name === 'svc_csrf')?.value ?? '';
  return { 'x-csrf-token': csrf };
}

/** First boot and TOTP enrolment through the API (dashboard.e2e.ts has the browser flows): `admin` is set up with
 * the setup link and signed in in `p`'s context. Answers the TOTP secret. */
export async function firstAdmin(p: Page, setupUrl: string, admin: Record<string, string>): Promise<string> {
  const token = new URL(setupUrl).searchParams.get('token');
  expect((await p.request.post('/api/v1/setup/complete', { data: { token, ...admin } })).status()).toBe(201);
  const start = await p.request.post('/api/v1/auth/mfa/enroll-start', { headers: await csrfHeaders(p.context()) });
  const secret = (await start.json()).secret_base32;
  const done = await p.request.post('/api/v1/auth/mfa/enroll-complete', { data: { code: totpOf(secret) }, headers: await csrfHeaders(p.context()) });
  expect(done.status()).toBe(200);
  return secret;
}
