// The guarded outbound client against a real receiver: https with a real
// certificate check, Host and SNI, caps, deadlines, redirects, plain http when
// allowed, and the dispatch-time re-check. The receiver lives in a network
// namespace on a public address (tests/helpers/outbound-netns.ts), so nothing
// here relaxes the blocked ranges; only DNS is stood in for, by a resolver
// that maps the test hostname to the receiver.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { guardedFetch, type GuardedResult } from '../../src/outbound/client.ts';
import { checkDestination } from '../../src/outbound/destination.ts';
import type { Resolver } from '../../src/outbound/resolve.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';

const skip = unavailable();
if (skip) console.warn(`SKIPPED tests/api/outbound-delivery.test.ts: ${skip} (run as root with iproute2 installed)`);

let rx: Receiver;
let resolver: Resolver;
let url: (path: string, opts?: { scheme?: 'https' | 'http'; port?: number }) => string;

beforeAll(async () => {
  if (skip) return;
  rx = await startReceiver();
  resolver = async (host) => {
    if (host === rx.hostname) return [rx.address];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  url = (path, { scheme = 'https', port } = {}) => `${scheme}://${rx.hostname}${port ? `:${port}` : ''}${path}`;
}, 30_000);

afterAll(async () => {
  await rx?.stop();
});

const json = (r: GuardedResult): any => {
  if (!r.ok) throw new Error(`expected a response, got ${r.reason}: ${r.message}`);
  return JSON.parse(r.body);
};
const seenPaths = async (): Promise<string[]> => (await rx.log()).map((s) => s.path);

describe.skipIf(skip !== null)('guarded delivery to a real receiver', () => {
  test('https POST: body, headers, Host and SNI carry the hostname while the connection goes to the pinned address', async () => {
    const body = JSON.stringify({ action: 'user.login', id: 'a1' });
    const r = await guardedFetch(url('/echo?token=tok-delivery'), {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-svc-audit-signature': 'sha256=abc',
        'x-svc-audit-timestamp': '1700000000',
        'x-svc-audit-schema': '1',
        host: 'attacker.example', // the configured hostname wins
      },
      ca: rx.goodCert,
      resolver,
    });
    expect(r).toMatchObject({ ok: true, status: 200, truncated: false });
    if (!r.ok) return;
    expect(r.headers.get('x-receiver')).toBe('yes');
    const got = json(r);
    expect(got).toMatchObject({ port: 443, method: 'POST', path: '/echo?token=tok-delivery', host: rx.hostname, sni: rx.hostname, body });
    expect(got.headers).toMatchObject({
      'content-type': 'application/json',
      'x-svc-audit-signature': 'sha256=abc',
      'x-svc-audit-timestamp': '1700000000',
      'x-svc-audit-schema': '1',
      'accept-encoding': 'identity',
    });
    // It came over the veth from the host end, i.e. to the pinned address.
    expect(got.remote.replace(/^::ffff:/, '')).toBe(rx.hostSide);
  });

  test('the certificate is checked against the hostname, not the pinned IP', async () => {
    // :8444 serves a certificate that names the receiver's IP and another
    // hostname. Trusted, and reached by IP literal, it is accepted...
    const byIp = await guardedFetch(`https://${rx.address}:8444/echo`, { ca: rx.noHostCert });
    expect(byIp).toMatchObject({ ok: true, status: 200 });
    expect(json(byIp)).toMatchObject({ port: 8444, sni: null, host: `${rx.address}:8444` });
    // ...but reached by the test hostname, pinned to the same IP, it is refused.
    const byName = await guardedFetch(url('/echo?token=tok-tls', { port: 8444 }), { ca: rx.noHostCert, resolver });
    expect(byName).toMatchObject({ ok: false, reason: 'tls' });
    if (!byName.ok) {
      expect(byName.message).toContain('ALTNAME');
      expect(byName.message).not.toMatch(/tok-tls|hooks\.svc-test|11\.87/);
    }
    expect((await seenPaths()).filter((p) => p.includes('tok-tls'))).toEqual([]);
  });

  test('an untrusted certificate is refused; verification cannot be skipped', async () => {
    const r = await guardedFetch(url('/echo?token=tok-untrusted'), { resolver });
    expect(r).toMatchObject({ ok: false, reason: 'tls' });
    expect((await seenPaths()).filter((p) => p.includes('tok-untrusted'))).toEqual([]);
    // Trusting the wrong certificate does not help either.
    expect(await guardedFetch(url('/echo'), { ca: rx.noHostCert, resolver })).toMatchObject({ ok: false, reason: 'tls' });
  });

  test('pinned IPv6 keeps Host and SNI; with both families IPv4 is used', async () => {
    if (!rx.address6) {
      console.warn('IPv6 is disabled on this host: IPv6 pinning not exercised');
      return;
    }
    const v6only = await guardedFetch(url('/echo?case=v6'), { ca: rx.goodCert, resolver: async () => [rx.address6!] });
    expect(json(v6only)).toMatchObject({ host: rx.hostname, sni: rx.hostname });
    expect(json(v6only).remote).not.toContain('.');
    const both = await guardedFetch(url('/echo?case=both'), { ca: rx.goodCert, resolver: async () => [rx.address6!, rx.address] });
    expect(json(both).remote).toMatch(/^(::ffff:)?11\.87\./);
  });

  test('the response body is capped at 8 KiB by default, or at maxResponseBytes', async () => {
    const big = await guardedFetch(url('/big'), { ca: rx.goodCert, resolver });
    expect(big).toMatchObject({ ok: true, status: 200, truncated: true });
    if (big.ok) expect(big.body).toBe('x'.repeat(8192));
    const small = await guardedFetch(url('/big'), { ca: rx.goodCert, resolver, maxResponseBytes: 100 });
    expect(small).toMatchObject({ ok: true, truncated: true, body: 'x'.repeat(100) });
    const exact = await guardedFetch(url('/exact'), { ca: rx.goodCert, resolver });
    expect(exact).toMatchObject({ ok: true, truncated: false, body: 'y'.repeat(8192) });
  });

  test('a receiver that never answers, or stalls mid-body, ends at the deadline', async () => {
    let started = Date.now();
    const hang = await guardedFetch(url('/hang?token=tok-hang'), { ca: rx.goodCert, resolver, timeoutMs: 400 });
    expect(hang).toMatchObject({ ok: false, reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2000);
    if (!hang.ok) expect(hang.message).not.toContain('tok-hang');
    started = Date.now();
    const stall = await guardedFetch(url('/stall-body'), { ca: rx.goodCert, resolver, timeoutMs: 400 });
    expect(stall).toMatchObject({ ok: false, reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('redirects are returned as they are, never followed', async () => {
    const r = await guardedFetch(url('/redirect'), { ca: rx.goodCert, resolver });
    expect(r).toMatchObject({ ok: true, status: 302, body: 'moved' });
    if (r.ok) expect(r.headers.get('location')).toBe(`https://${rx.address}/echo?followed=1`);
    expect((await seenPaths()).filter((p) => p.includes('followed'))).toEqual([]);
  });

  test('a non-2xx answer is a response, not a failure', async () => {
    const r = await guardedFetch(url('/status'), { ca: rx.goodCert, resolver });
    expect(r).toMatchObject({ ok: true, status: 503, body: 'unavailable' });
  });

  test('http:// is refused unless allowHttp, then delivered over plain http', async () => {
    const refused = await guardedFetch(url('/echo?case=http-refused', { scheme: 'http' }), { resolver });
    expect(refused).toMatchObject({ ok: false, reason: 'scheme' });
    expect((await seenPaths()).filter((p) => p.includes('http-refused'))).toEqual([]);
    const r = await guardedFetch(url('/echo?case=http', { scheme: 'http' }), { resolver, allowHttp: true, method: 'POST', body: 'plain' });
    expect(json(r)).toMatchObject({ port: 80, method: 'POST', host: rx.hostname, sni: null, body: 'plain' });
  });

  test('a closed port is reason connect', async () => {
    const r = await guardedFetch(url('/x', { port: 9 }), { ca: rx.goodCert, resolver, timeoutMs: 3000 });
    expect(r).toMatchObject({ ok: false, reason: 'connect' });
  });

  test('DNS failure at dispatch is reason dns', async () => {
    expect(await guardedFetch('https://unknown.svc-test.example/echo', { ca: rx.goodCert, resolver })).toMatchObject({
      ok: false,
      reason: 'dns',
    });
  });

  test('DNS rebinding: checked good at configuration, blocked at dispatch, never delivered', async () => {
    let answer = [rx.address];
    const rebinding: Resolver = async () => answer;
    const configured = await checkDestination(url('/echo?case=rebind'), { resolver: rebinding });
    expect(configured).toMatchObject({ ok: true, address: rx.address, hostname: rx.hostname });
    expect(json(await guardedFetch(url('/echo?case=rebind-1'), { ca: rx.goodCert, resolver: rebinding }))).toMatchObject({
      path: '/echo?case=rebind-1',
    });

    answer = ['169.254.169.254'];
    expect(await guardedFetch(url('/echo?case=rebind-2'), { ca: rx.goodCert, resolver: rebinding })).toMatchObject({
      ok: false,
      reason: 'blocked_address',
      range: 'link_local',
    });
    answer = [rx.address, '10.0.0.7'];
    expect(await guardedFetch(url('/echo?case=rebind-3'), { ca: rx.goodCert, resolver: rebinding })).toMatchObject({
      ok: false,
      reason: 'blocked_address',
      range: 'private',
    });
    const paths = await seenPaths();
    expect(paths).toContain('/echo?case=rebind-1');
    expect(paths.filter((p) => p === '/echo?case=rebind-2' || p === '/echo?case=rebind-3')).toEqual([]);
  });
});
