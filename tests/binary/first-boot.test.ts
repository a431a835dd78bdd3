// First boot and account recovery with the compiled binary: the setup link
// on stderr, setup by API, login, TOTP, a fresh-MFA route; the bootstrap
// settings; the first administrator's notification subscription from the
// default project's defaults; and the recovery commands.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { decodeBase32IgnorePadding } from '@oslojs/encoding';
import { generateTOTP } from '@oslojs/otp';
import { cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

const running: RunningSvc[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
});

/** A tiny cookie jar over fetch for a real server. */
class Client {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  async call(method: string, path: string, body?: unknown) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET' && this.cookies.has('svc_csrf')) headers['x-csrf-token'] = this.cookies.get('svc_csrf')!;
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, v] = pair!.split('=');
      if (/Max-Age=0/.test(c)) this.cookies.delete(k!);
      else this.cookies.set(k!, v!);
    }
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
}

/** The first administrator hears of failed tasks in the default project: its default (task.failed, in the app), materialised at first boot. */
async function expectDefaultSubscription(c: Client): Promise<void> {
  const project = (await c.call('GET', '/api/v1/projects/default')).body;
  const defaults = (await c.call('GET', '/api/v1/projects/default/notifications/defaults')).body;
  expect(defaults.map((d: { trigger: string; in_app: boolean }) => [d.trigger, d.in_app])).toEqual([['task.failed', true]]);
  const subs = (await c.call('GET', '/api/v1/user/subscriptions')).body;
  expect(subs).toHaveLength(1);
  expect(subs[0]).toMatchObject({ project_id: project.id, trigger: 'task.failed', in_app: true, filters: {}, cooldown_seconds: 0, is_active: true });
}

const setupLink = (stderr: string) => /(https?:\/\/\S+\/setup\?token=(\S+))/.exec(stderr);

describe('first boot from an empty home', () => {
  test('setup link on stderr; setup by API; login; TOTP; a fresh-MFA route; setup closes for good', async () => {
    const env = cleanEnv(FAST_IDENTITY_ENV);
    const svc = await startSvc(env);
    running.push(svc);
    await eventually(() => setupLink(svc.stderr()) !== null, 5000, 'setup link');
    const [, url, token] = setupLink(svc.stderr())!;
    expect(svc.stdout()).not.toContain(token!); // the token is never logged
    const page = await fetch(url!.replace('localhost', '127.0.0.1'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Create administrator');

    const c = new Client(svc.url);
    expect((await c.call('GET', '/api/v1/setup/status')).body).toEqual({ first_boot: true });
    const done = await c.call('POST', '/api/v1/setup/complete', { token, email: 'admin@example.com', password: STRONG_PASSWORD });
    expect(done.status).toBe(201);
    // A fresh browser signs in.
    const b = new Client(svc.url);
    expect((await b.call('POST', '/api/v1/auth/login', { email: 'admin@example.com', password: STRONG_PASSWORD })).body.mfa_required).toBe(false);
    await expectDefaultSubscription(b);
    const start = await b.call('POST', '/api/v1/auth/mfa/enroll-start');
    const key = decodeBase32IgnorePadding(start.body.secret_base32);
    expect(start.body.provisioning_url).toStartWith('otpauth://totp/');
    expect((await b.call('POST', '/api/v1/auth/mfa/enroll-complete', { code: generateTOTP(key, 30, 6) })).body.recovery_codes).toHaveLength(10);
    const created = await b.call('POST', '/api/v1/users', { email: 'bob@example.com', password: STRONG_PASSWORD });
    expect(created.status).toBe(201);
    // Setup is closed now.
    expect((await new Client(svc.url).call('POST', '/api/v1/setup/complete', { token, email: 'x@example.com', password: STRONG_PASSWORD })).status).toBe(409);
    expect((await fetch(`${svc.url}/setup`)).status).toBe(404);
  });

  test('valid SVC_BOOTSTRAP_ADMIN_* create the admin at start and no link is printed', async () => {
    const env = cleanEnv({ ...FAST_IDENTITY_ENV, SVC_BOOTSTRAP_ADMIN_EMAIL: 'boot@example.com', SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD });
    const svc = await startSvc(env);
    running.push(svc);
    await eventually(() => svc.stdout().includes('created the bootstrap administrator'), 5000, 'bootstrap log');
    expect(setupLink(svc.stderr())).toBeNull();
    expect(svc.stdout() + svc.stderr()).not.toContain(STRONG_PASSWORD);
    const c = new Client(svc.url);
    expect((await c.call('POST', '/api/v1/auth/login', { email: 'boot@example.com', password: STRONG_PASSWORD })).status).toBe(200);
    await expectDefaultSubscription(c);
  });

  test('invalid SVC_BOOTSTRAP_ADMIN_* are logged and the setup link is printed instead', async () => {
    const env = cleanEnv({ ...FAST_IDENTITY_ENV, SVC_BOOTSTRAP_ADMIN_EMAIL: 'boot@example.com', SVC_BOOTSTRAP_ADMIN_PASSWORD: 'weak' });
    const svc = await startSvc(env);
    running.push(svc);
    await eventually(() => setupLink(svc.stderr()) !== null, 5000, 'setup link');
    const line = svc.stdout().split('\n').find((l) => l.includes('SVC_BOOTSTRAP_ADMIN_EMAIL'))!;
    expect(JSON.parse(line)).toMatchObject({ level: 'error', logger: 'setup' });
    expect(line).not.toContain('"weak"');
  });
});

describe('account recovery commands', () => {
  const env = cleanEnv(FAST_IDENTITY_ENV);
  const db = () => new Database(join(env.SVC_HOME!, 'svc.db'));

  test('reset-setup: refuses without --force; with --force deletes the tokens and writes the audit row', async () => {
    const svc = await startSvc(env);
    await eventually(() => setupLink(svc.stderr()) !== null, 5000, 'setup link');
    await svc.stop();
    const refused = await runSvc(['reset-setup'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--force');
    expect((db().query('SELECT COUNT(*) AS n FROM first_boot_tokens').get() as { n: number }).n).toBe(1);
    const done = await runSvc(['reset-setup', '--force'], env);
    expect(done.code).toBe(0);
    const d = db();
    expect((d.query('SELECT COUNT(*) AS n FROM first_boot_tokens').get() as { n: number }).n).toBe(0);
    expect((d.query("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'setup.tokens_reset'").get() as { n: number }).n).toBe(1);
  });

  test('bootstrap-admin (and its alias) with --password-stdin: first boot only, policy enforced', async () => {
    expect((await runSvc(['bootstrap-admin', '--email', 'root@example.com'], env)).code).toBe(2);
    const weak = await runSvc(['createsuperuser', '--email', 'root@example.com', '--password-stdin'], env, { stdin: 'weak\n' });
    expect(weak.code).toBe(2);
    expect(weak.stderr).toContain('password must have at least 12 characters');
    const ok = await runSvc(['createsuperuser', '--email', 'root@example.com', '--password-stdin'], env, { stdin: `${STRONG_PASSWORD}\n` });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('created administrator root@example.com');
    const again = await runSvc(['bootstrap-admin', '--email', 'two@example.com', '--password-stdin'], env, { stdin: `${STRONG_PASSWORD}\n` });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already complete');
    expect((await runSvc(['reset-setup', '--force'], env)).code).toBe(1);
  });

  test('changepassword ends the sessions; reset-mfa clears MFA, attributed to the OS user', async () => {
    const svc = await startSvc(env);
    running.push(svc);
    const c = new Client(svc.url);
    await c.call('POST', '/api/v1/auth/login', { email: 'root@example.com', password: STRONG_PASSWORD });
    const start = await c.call('POST', '/api/v1/auth/mfa/enroll-start');
    await c.call('POST', '/api/v1/auth/mfa/enroll-complete', { code: generateTOTP(decodeBase32IgnorePadding(start.body.secret_base32), 30, 6) });
    expect((await c.call('GET', '/api/v1/auth/mfa/status')).body.enrolled).toBe(true);

    const reset = await runSvc(['reset-mfa', 'root@example.com'], { ...env, USER: 'opsperson' });
    expect(reset.code).toBe(0);
    expect(reset.stdout).toContain('two-factor authentication of root@example.com reset');
    const row = db().query("SELECT user_id, user_agent, metadata FROM audit_log WHERE action = 'user.mfa_reset_by_admin'").get() as Record<string, string>;
    expect(row.user_agent).toContain('opsperson');
    expect(row.user_id).toBeNull();
    expect((await runSvc(['reset-mfa', 'nobody@example.com'], env)).code).toBe(1);

    const c2 = new Client(svc.url);
    expect((await c2.call('POST', '/api/v1/auth/login', { email: 'root@example.com', password: STRONG_PASSWORD })).body.mfa_required).toBe(false);
    const changed = await runSvc(['changepassword', 'root@example.com', '--password-stdin'], env, { stdin: 'Totally-New-Password-5\n' });
    expect(changed.code).toBe(0);
    expect((await c2.call('GET', '/api/v1/auth/me')).status).toBe(401);
    expect((await new Client(svc.url).call('POST', '/api/v1/auth/login', { email: 'root@example.com', password: 'Totally-New-Password-5' })).status).toBe(200);
  });
});
