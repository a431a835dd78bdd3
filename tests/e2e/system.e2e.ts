// The administrators' System and Settings pages in a real browser against the compiled dist/svc: every subsystem
// check passing, the process, host and database facts and the installed versions; the update check against a
// release manifest (first failing, then naming a newer svc); a subsystem check that fails (the database carries a
// migration this build does not know, as after running an older binary on a newer database) shown failed with
// why, and passing again once fixed; the settings with their sources, secrets masked and their real values nowhere
// on the page; a member who sees neither link and is sent away from both addresses; and, on an installation
// without SVC_VERSION_CHECK_URL, the check saying it is off.
// The manifest comes from a small HTTP server in a network namespace of this machine on an address the outbound
// policy allows (11.89.x.y, public space): svc's requests never leave the machine. Without root or iproute2 the
// manifest test is skipped and the rest runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { nav, screenshot, totpOf } from './browser.ts';
import { startSvc, type Svc } from './svc.ts';

const ADMIN = { email: 'admin@example.com', password: 'Correct-Horse-Battery-9', display_name: 'Ada Admin' };
const MEMBER = { email: 'member@example.com', password: 'Quiet-Meadow-Lantern-31', display_name: 'Mo Member' };
/** Set in svc's environment: the settings page must show it masked and never as it is. */
const METRICS_TOKEN = 'metrics-token-of-the-system-e2e-4f1c9a7d2b8e';
/** A revision no build of svc has: the migrations check must fail while the database carries it. */
const ALIEN_REVISION = '9999';

test.describe.configure({ mode: 'serial' });

let svc: Svc;
let host: ManifestHost | null = null;
let context: BrowserContext;
let page: Page;

const root = fileURLToPath(new URL('../..', import.meta.url));
const region = (name: string, p: Page = page): Locator => p.getByRole('region', { name, exact: true });
/** A row of the subsystem checks table, by the check's name. */
const checkRow = (name: string): Locator => region('Subsystem checks').locator(`tbody tr[data-check="${name}"]`);

async function csrfHeaders(c: BrowserContext = context): Promise<Record<string, string>> {
  const csrf = (await c.cookies()).find((x) => x.name === 'svc_csrf')?.value ?? '';
  return { 'x-csrf-token': csrf };
}

/** First boot through the API (dashboard.e2e.ts has the browser flows): the admin, signed in in `p`'s context. */
async function firstAdmin(s: Svc, p: Page): Promise<void> {
  const token = new URL(s.setupUrl).searchParams.get('token');
  expect((await p.request.post('/api/v1/setup/complete', { data: { token, ...ADMIN } })).status()).toBe(201);
}

/** Runs SQL on the live database with Bun's SQLite, as tests/e2e/svc.ts ageMfaVerifications does. */
function sqlite(statement: string): void {
  const script = `
    import { Database } from 'bun:sqlite';
    const db = new Database(process.env.SVC_DB);
    db.run('PRAGMA busy_timeout = 5000');
    db.run(process.env.SVC_SQL);
  `;
  const r = spawnSync(join(root, 'node_modules/.bin/bun'), ['-e', script], {
    env: { PATH: process.env.PATH ?? '', SVC_DB: join(svc.home, '.svc/svc.db'), SVC_SQL: statement },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`sqlite: ${r.stderr}`);
}

// --- the release manifest's host -------------------------------------------------------------------------------

interface ManifestHost {
  address: string;
  /** What GET answers from now on (any path but the control ones). */
  answer(status: number, body: unknown): Promise<void>;
  /** Requests svc made so far. */
  fetched(): Promise<number>;
  stop(): Promise<void>;
}

const SERVER = `
const http = require('node:http');
let answer = { status: 503, body: 'down for maintenance' };
let fetched = 0;
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/__answer' && req.method === 'PUT') {
        answer = JSON.parse(body);
        res.writeHead(204);
        res.end();
        return;
      }
      if (req.url === '/__fetched') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(fetched));
        return;
      }
      fetched++;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    });
  })
  .listen(80, process.argv[1], () => console.log('{"ready":true}'));
`;

const ip = (args: string[]) => spawnSync('ip', args, { encoding: 'utf8' });

function hostUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating a network namespace needs root';
  if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) return 'iproute2 (`ip`) is not installed';
  return null;
}

/** A namespace joined to the host by a veth pair, on a random /30 of 11.89.0.0/16 (hook-receiver.ts has 11.88/16,
 * tests/helpers/outbound-netns.ts 11.87/16), with the server above on its port 80. */
async function startManifestHost(): Promise<ManifestHost> {
  const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`.slice(-7);
  const ns = `svcsys-${tag}`;
  const hostIf = `vsys${tag}h`;
  const nsIf = `vsys${tag}n`;
  const n = Math.floor(Math.random() * 16384);
  const v4 = (last: number) => `11.89.${n >> 6}.${(n & 63) * 4 + last}`;
  let child: ChildProcess | null = null;
  const cleanup = () => {
    child?.kill('SIGKILL');
    ip(['netns', 'del', ns]);
    ip(['link', 'del', hostIf]);
  };
  process.once('exit', cleanup);
  const must = (args: string[]) => {
    const r = ip(args);
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr?.trim() || r.error?.message}`);
  };
  try {
    must(['netns', 'add', ns]);
    must(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    must(['link', 'set', nsIf, 'netns', ns]);
    must(['addr', 'add', `${v4(1)}/30`, 'dev', hostIf]);
    must(['-n', ns, 'addr', 'add', `${v4(2)}/30`, 'dev', nsIf]);
    must(['link', 'set', hostIf, 'up']);
    must(['-n', ns, 'link', 'set', nsIf, 'up']);
    must(['-n', ns, 'link', 'set', 'lo', 'up']);
    const address = v4(2);
    const proc = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', SERVER, address], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the manifest host did not start: ${out}`)), 10_000);
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('{"ready":true}')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the manifest host exited (${code}): ${out}`));
      });
    });
    return {
      address,
      answer: async (status, body) => {
        const r = await fetch(`http://${address}/__answer`, { method: 'PUT', body: JSON.stringify({ status, body }) });
        if (r.status !== 204) throw new Error(`the manifest host refused the answer: ${r.status}`);
      },
      fetched: async () => (await (await fetch(`http://${address}/__fetched`)).json()) as number,
      stop: async () => {
        process.off('exit', cleanup);
        const exited = proc.exitCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : null;
        cleanup();
        await exited;
      },
    };
  } catch (e) {
    process.off('exit', cleanup);
    cleanup();
    throw e;
  }
}

// --- the tests -------------------------------------------------------------------------------------------------

test.beforeAll(async ({ browser }) => {
  const why = hostUnavailable();
  if (why === null) host = await startManifestHost();
  else console.log(`no manifest host (${why}): the update check test is skipped`);
  svc = await startSvc({
    SVC_METRICS_AUTH_TOKEN: METRICS_TOKEN,
    ...(host ? { SVC_VERSION_CHECK_URL: `http://${host.address}/releases/manifest.json`, SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true' } : {}),
  });
  context = await browser.newContext({ baseURL: svc.url });
  page = await context.newPage();
  await firstAdmin(svc, page);
  // Enrolled, so that the admin can create the member later (user changes need a fresh MFA verification).
  const start = await page.request.post('/api/v1/auth/mfa/enroll-start', { headers: await csrfHeaders() });
  const secret = (await start.json()).secret_base32;
  const done = await page.request.post('/api/v1/auth/mfa/enroll-complete', { data: { code: totpOf(secret) }, headers: await csrfHeaders() });
  expect(done.status()).toBe(200);
});

test.afterAll(async () => {
  await context?.close();
  await svc?.stop();
  await host?.stop();
});

test('system: every subsystem check passes, with the process, host, database and versions', async () => {
  await page.goto('/');
  await nav(page, 'System').click();
  await expect(page).toHaveURL(/\/system$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('System');

  const summary = page.getByTestId('deep-summary');
  await expect(summary).toContainText('Every check passed.');
  const rows = region('Subsystem checks').locator('tbody tr');
  const report = await (await page.request.get('/api/v1/health/deep')).json();
  await expect(rows).toHaveCount(report.entries.length);
  await expect(region('Subsystem checks').locator('tbody tr[data-status="failed"]')).toHaveCount(0);
  for (const name of ['database', 'migrations', 'audit_chain', 'disk', 'agent_transports', 'notifications']) {
    await expect(checkRow(name)).toContainText('ok');
  }
  // Not configured here: shown as off, not as a failure.
  await expect(checkRow('audit_forwarder')).toContainText('off');
  await expect(checkRow('audit_forwarder')).toContainText('SVC_AUDIT_WEBHOOK_URL is not set');
  await expect(page.getByTestId('deep-coverage')).toContainText(`${report.coverage.checked} checks`);
  await expect(page.getByTestId('deep-coverage')).toContainText('0 failed');
  await expect(region('Subsystem checks')).toContainText('the audit log itself (svc audit verify walks it)');

  const system = await (await page.request.get('/api/v1/health/system')).json();
  await expect(page.getByTestId('system-version')).toContainText(system.version);
  await expect(page.getByTestId('system-bun')).toHaveText(system.runtime.bun);
  await expect(page.getByTestId('system-os')).toHaveText(`${system.os.platform} ${system.os.release}`);
  await expect(page.getByTestId('system-arch')).toHaveText(system.os.arch);
  await expect(page.getByTestId('system-pid')).toHaveText(String(system.pid));
  await expect(page.getByTestId('system-database')).toContainText(`SQLite ${system.database.version}`);
  await expect(page.getByTestId('system-database-size')).toHaveText(/^\d+(\.\d)? (bytes|KiB|MiB)$/);
  await expect(page.getByTestId('system-database-connections')).toContainText(String(system.database.connections));

  const versions = region('Versions');
  await expect(page.getByTestId('versions-svc')).toHaveText(system.version);
  await expect(page.getByTestId('versions-protocol')).toHaveText(system.agent_protocol);
  await expect(versions.getByRole('row', { name: /^svc / })).toContainText(system.version);
  await expect(versions.getByRole('row', { name: /^elysia / })).toContainText(system.packages.elysia);
  await screenshot(page, 'system');
});

test('system: the update check against the release manifest, failing first, then naming a newer svc', async () => {
  test.skip(host === null, 'no manifest host on this machine');
  const versions = region('Versions');
  const installed = (await page.getByTestId('versions-svc').textContent())!.trim();
  const [major] = installed.split('.');
  const newer = `${Number(major) + 1}.0.0`;

  // The manifest's host answers 503: the failure is explained, not a broken page.
  await host!.answer(503, 'down for maintenance');
  await versions.getByRole('button', { name: 'Check for updates' }).click();
  await expect(versions.getByRole('alert')).toContainText('The version check failed: The release manifest answered HTTP 503.');
  await screenshot(page, 'system-update-check-failed');

  await host!.answer(200, { schema: 1, packages: { svc: newer, 'left-pad': '9.9.9' }, binaries: {} });
  await versions.getByRole('button', { name: 'Check for updates' }).click();
  const result = page.getByTestId('update-result');
  await expect(result).toContainText('1 newer release:');
  await expect(result).toContainText(`svc ${installed} → ${newer}`);
  // A package svc does not have is not an update of it.
  await expect(result).not.toContainText('left-pad');
  await expect(versions.getByRole('row', { name: /^svc / })).toContainText(newer);
  expect(await host!.fetched()).toBe(2);
  await screenshot(page, 'system-update-available');

  // Cached for an hour: asked again, svc answers from memory and says so.
  await versions.getByRole('button', { name: 'Check for updates' }).click();
  await expect(result).toContainText('(remembered for an hour)');
  expect(await host!.fetched()).toBe(2);
});

test('system: a failing subsystem check is shown failed with why, the 503 report being a result', async () => {
  // As after an older binary was started on a database a newer release had migrated.
  sqlite(`INSERT INTO svc_migrations (revision, name, checksum, applied_at) VALUES ('${ALIEN_REVISION}', 'from_a_newer_release', 'x', '2030-01-01T00:00:00.000000+00:00')`);
  const deep = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/health/deep');
  await region('Subsystem checks').getByRole('button', { name: 'Refresh' }).click();
  expect((await deep).status()).toBe(503);

  const summary = page.getByTestId('deep-summary');
  await expect(summary).toContainText(/1 check of \d+ failed\./);
  await expect(summary).toContainText(`migrations: the database has revisions this build does not know (${ALIEN_REVISION})`);
  const row = checkRow('migrations');
  await expect(row).toHaveAttribute('data-status', 'failed');
  await expect(row).toContainText('failed');
  await expect(row.locator('.text-bad')).toHaveText(`the database has revisions this build does not know (${ALIEN_REVISION})`);
  await expect(page.getByTestId('deep-coverage')).toContainText('1 failed');
  // The other checks are still there, still passing.
  await expect(checkRow('database')).toHaveAttribute('data-status', 'ok');
  await row.getByText('What was measured').click();
  await expect(row.locator('pre')).toContainText(new RegExp(`"unknown": \\[\\s*"${ALIEN_REVISION}"`));
  await screenshot(page, 'system-check-failed');

  sqlite(`DELETE FROM svc_migrations WHERE revision = '${ALIEN_REVISION}'`);
  await region('Subsystem checks').getByRole('button', { name: 'Refresh' }).click();
  await expect(summary).toContainText('Every check passed.');
  await expect(checkRow('migrations')).toHaveAttribute('data-status', 'ok');
});

test('settings: every setting with its source, secrets masked and their values nowhere on the page', async () => {
  const loaded = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/admin/settings');
  await nav(page, 'Settings').click();
  await expect(page).toHaveURL(/\/settings$/);
  const answer = await (await loaded).json();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Settings');
  await expect(page.getByTestId('settings-home')).toHaveText(join(svc.home, '.svc'));

  const list = region('Effective settings');
  await expect(list.locator('tbody tr')).toHaveCount(answer.settings.length);
  await expect(page.getByTestId('settings-count')).toHaveText(`${answer.settings.length} settings`);

  const metrics = list.getByRole('row', { name: /^SVC_METRICS_AUTH_TOKEN\s/ });
  await expect(metrics).toContainText('***');
  await expect(metrics).toContainText('secret');
  await expect(metrics).toContainText('environment');
  // Minted on first boot into $SVC_HOME/secret.env.
  const master = list.getByRole('row', { name: /^SVC_SECRET\s/ });
  await expect(master).toContainText('***');
  await expect(master).toContainText('secret.env');
  await expect(list.getByRole('row', { name: /^SVC_BIND_PORT\s/ })).toContainText('default');
  await screenshot(page, 'settings');

  // Neither the token from the environment nor a minted secret appears anywhere on the page.
  const minted = Object.fromEntries(
    readFileSync(join(svc.home, '.svc/secret.env'), 'utf8')
      .split('\n')
      .filter((l) => /^SVC_\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^['"]|['"]$/g, '')]),
  ) as Record<string, string>;
  expect(minted.SVC_SECRET?.length ?? 0).toBeGreaterThanOrEqual(32);
  const text = (await page.locator('body').textContent()) ?? '';
  const html = await page.content();
  for (const value of [METRICS_TOKEN, ...Object.values(minted)]) {
    expect(text).not.toContain(value);
    expect(html).not.toContain(value);
  }

  // Found by words of the name or description, narrowed by source; secret values are not searchable.
  await page.getByLabel('Find').fill('metrics auth');
  await expect(list.locator('tbody tr')).toHaveCount(1);
  await expect(page.getByTestId('settings-count')).toHaveText(`1 of ${answer.settings.length} settings`);
  await page.getByLabel('Find').fill(METRICS_TOKEN);
  await expect(list.getByText('No setting matches')).toBeVisible();
  await page.getByLabel('Find').fill('');
  await page.getByLabel('Source').selectOption('env');
  const fromEnv = answer.settings.filter((s: { source: string }) => s.source === 'env').length;
  await expect(list.locator('tbody tr')).toHaveCount(fromEnv);
  await expect(list.getByRole('row', { name: /^SVC_METRICS_AUTH_TOKEN\s/ })).toBeVisible();
  await expect(list.getByRole('row', { name: /^SVC_BIND_PORT\s/ })).toHaveCount(0);
  await screenshot(page, 'settings-filtered');
});

test('system and settings in dark mode and on a narrow screen', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await nav(page, 'System').click();
  await expect(page.getByTestId('deep-summary')).toContainText('Every check passed.');
  await screenshot(page, 'system-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('button', { name: 'Menu' }).click();
  await nav(page, 'Settings').click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeHidden();
  await expect(page.getByRole('region', { name: 'Effective settings' }).getByRole('row', { name: /^SVC_METRICS_AUTH_TOKEN\s/ })).toContainText(
    '***',
  );
  await screenshot(page, 'settings-narrow');
  await page.setViewportSize({ width: 1280, height: 720 });
});

test('a member sees no System or Settings link and is sent away from their addresses', async ({ browser }) => {
  const created = await page.request.post('/api/v1/users', { data: { ...MEMBER }, headers: await csrfHeaders() });
  expect(created.status()).toBe(201);
  const joined = await page.request.post('/api/v1/projects/default/memberships', {
    data: { user_id: (await created.json()).id, role: 'operator' },
    headers: await csrfHeaders(),
  });
  expect(joined.status()).toBe(201);

  const other = await browser.newContext({ baseURL: svc.url });
  const tab = await other.newPage();
  const adminCalls: string[] = [];
  tab.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (path.startsWith('/api/v1/admin/') || path.startsWith('/api/v1/health/deep')) adminCalls.push(path);
  });
  expect((await tab.request.post('/api/v1/auth/login', { data: { email: MEMBER.email, password: MEMBER.password } })).status()).toBe(200);
  await tab.goto('/health');
  await expect(tab.getByTestId('readiness')).toContainText('ready');
  const sidebar = tab.getByRole('navigation', { name: 'Main' });
  await expect(sidebar).toContainText(`Signed in as ${MEMBER.display_name}`);
  for (const name of ['Users', 'System', 'Settings']) await expect(nav(tab, name)).toHaveCount(0);
  await expect(tab.getByRole('link', { name: 'System', exact: true })).toHaveCount(0);
  await screenshot(tab, 'system-member-sidebar');

  for (const address of ['/system', '/settings']) {
    await tab.goto(address);
    await expect(tab).toHaveURL(/\/projects$/);
    await expect(tab.getByRole('heading', { level: 1 })).toHaveText('Projects');
  }
  // Nothing of theirs was asked for, and the server refuses them all the same.
  expect(adminCalls).toEqual([]);
  const refused = await tab.request.get('/api/v1/admin/settings');
  expect(refused.status()).toBe(403);
  expect((await refused.json()).error).toBe('admin_required');
  expect((await tab.request.post('/api/v1/admin/system/versions/check', { headers: await csrfHeaders(other) })).status()).toBe(403);
  await other.close();
});

test('on an installation without SVC_VERSION_CHECK_URL the update check says it is off', async ({ browser }) => {
  const bare = await startSvc();
  const c = await browser.newContext({ baseURL: bare.url });
  try {
    const p = await c.newPage();
    await firstAdmin(bare, p);
    await p.goto('/system');
    const versions = region('Versions', p);
    await versions.getByRole('button', { name: 'Check for updates' }).click();
    const result = p.getByTestId('update-result');
    await expect(result).toContainText('The version check is off.');
    await expect(result).toContainText('SVC_VERSION_CHECK_URL');
    await expect(versions.getByRole('alert')).toHaveCount(0);
    await screenshot(p, 'system-update-check-off');
  } finally {
    await c.close();
    await bare.stop();
  }
});
