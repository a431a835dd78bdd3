// POST /api/v1/admin/system/versions/check through the HTTP API: the release
// manifest at SVC_VERSION_CHECK_URL read through the outbound guard from a
// real host (tests/helpers/outbound-netns.ts: a network namespace on a public
// address, so nothing relaxes the blocked ranges), the hour-long cache, a
// failing manifest host, and the guard's refusal of a loopback address.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { VERSION } from '../../src/version.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { FAST_IDENTITY_ENV, mfaAdmin, type Browser } from '../helpers/identity.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';

const CHECK = '/api/v1/admin/system/versions/check';
const skip = unavailable();
if (skip) console.warn(`SKIPPED the manifest host tests of tests/api/versions-check.test.ts: ${skip} (run as root with iproute2 installed)`);

const services: TestService[] = [];
let rx: Receiver | undefined;

afterAll(async () => {
  for (const s of services) await s.close();
  await rx?.stop();
});

/** A service whose version check reads `url`, and its administrator. */
async function checking(url: string): Promise<Browser> {
  const svc = await testService({ env: { ...FAST_IDENTITY_ENV, SVC_VERSION_CHECK_URL: url, SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true' } });
  services.push(svc);
  return mfaAdmin(svc);
}

describe.skipIf(skip !== null)('against a manifest host', () => {
  beforeAll(async () => {
    rx = await startReceiver();
  }, 30_000);

  // The cache is per manifest URL and per process: each test publishes at a path of its own.
  const manifestUrl = (path: string) => `http://${rx!.address}${path}`;
  const fetches = async (path: string) => (await rx!.log()).filter((s) => s.path === path).length;

  test('names the packages the manifest has newer versions of; a second check within the hour is the cached answer', async () => {
    const path = `/releases-${crypto.randomUUID().slice(0, 8)}/manifest.json`;
    // elysia's version here is older than the installed one, `unknown-package` is not installed: neither is an update.
    const manifest = { schema: 1, packages: { svc: '999.0.0', elysia: '0.0.1', 'unknown-package': '5.0.0' } };
    await rx!.respond(path, { status: 200, body: JSON.stringify(manifest), headers: { 'content-type': 'application/json' } });
    const admin = await checking(manifestUrl(path));

    const first = await admin.call('POST', CHECK);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ cached: false, updates: [{ name: 'svc', installed: VERSION, latest: '999.0.0' }] });
    expect(first.body.updates).toHaveLength(1);
    expect(await fetches(path)).toBe(1);

    const second = await admin.call('POST', CHECK);
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ ...first.body, cached: true });
    expect(await fetches(path)).toBe(1);
  });

  test('a manifest host that fails is a 502 check_failed saying why, and is not cached', async () => {
    const path = `/releases-${crypto.randomUUID().slice(0, 8)}/manifest.json`;
    await rx!.respond(path, { status: 503, body: 'down for maintenance' });
    const admin = await checking(manifestUrl(path));
    const down = await admin.call('POST', CHECK);
    expect(down.status).toBe(502);
    expect(down.body).toMatchObject({ error: 'check_failed', message: 'the release manifest answered HTTP 503' });
    await rx!.respond(path, { status: 200, body: JSON.stringify({ schema: 1, packages: { svc: VERSION } }) });
    const up = await admin.call('POST', CHECK);
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ cached: false, updates: [] });
    expect(await fetches(path)).toBe(2);
  });
});

describe('without a manifest host', () => {
  test('a manifest URL on a blocked address is refused by the outbound guard, naming neither URL nor address', async () => {
    const admin = await checking('http://127.0.0.1:1/releases/manifest.json');
    const r = await admin.call('POST', CHECK);
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: 'check_failed', details: { reason: 'blocked_address' } });
    expect(r.body.message).toBe('could not fetch the release manifest (blocked_address)');
    expect(r.text).not.toContain('127.0.0.1');
  });

  test('with SVC_VERSION_CHECK_URL empty the check is off: 404 check_disabled', async () => {
    const admin = await checking('');
    const r = await admin.call('POST', CHECK);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ error: 'check_disabled', message: 'the version check is off (SVC_VERSION_CHECK_URL is empty)' });
  });
});
