// The outbound destination policy without a network: URL rules, the blocked
// ranges (as IP literals and as DNS answers), DNS failures and the re-check at
// dispatch. Delivery to a real receiver is in tests/api/outbound-delivery.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { checkAddress, unwrapMapped, type BlockedRange } from '../../src/outbound/blocked.ts';
import { guardedFetch } from '../../src/outbound/client.ts';
import { checkDestination } from '../../src/outbound/destination.ts';
import type { Resolver } from '../../src/outbound/resolve.ts';

const HOST = 'hooks.svc-test.example';
const answers = (...addresses: string[]): Resolver => async () => addresses;
const nxdomain: Resolver = async () => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${HOST}`), { code: 'ENOTFOUND' });
};
const literalUrl = (ip: string) => `https://${ip.includes(':') ? `[${ip}]` : ip}/hook`;

// [address, range it must be refused as]
const BLOCKED: Array<[string, BlockedRange]> = [
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.0.1', 'private'],
  ['192.168.255.255', 'private'],
  ['fc00::1', 'private'],
  ['fd00:ec2::254', 'private'], // AWS metadata over IPv6
  ['fdff:ffff::1', 'private'],
  ['fec0::1', 'private'],
  ['169.254.169.254', 'link_local'], // cloud metadata
  ['169.254.0.1', 'link_local'],
  ['fe80::1', 'link_local'],
  ['febf::1', 'link_local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['198.18.0.1', 'benchmark'],
  ['198.19.255.255', 'benchmark'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['ff0e::1', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['192.0.0.170', 'reserved'],
  ['::ffff:127.0.0.1', 'ipv4_mapped'],
  ['::ffff:7f00:1', 'ipv4_mapped'],
  ['::ffff:a9fe:a9fe', 'ipv4_mapped'],
  ['0:0:0:0:0:ffff:a00:1', 'ipv4_mapped'],
  ['::ffff:8.8.8.8', 'ipv4_mapped'], // refused even when the IPv4 inside is public
  ['::127.0.0.1', 'ipv4_compatible'],
  ['::8.8.8.8', 'ipv4_compatible'],
  ['2002::1', '6to4'],
  ['2002:7f00:1::1', '6to4'],
  ['2002:a9fe:a9fe::1', '6to4'],
  ['64:ff9b::7f00:1', 'nat64'],
  ['64:ff9b::a9fe:a9fe', 'nat64'],
  ['64:ff9b:1::1', 'nat64'],
  ['2001::1', 'teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
];

// Just outside the blocked ranges, plus documentation ranges (not blocked by design).
const ALLOWED = [
  '8.8.8.8',
  '1.1.1.1',
  '11.87.0.2',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '192.167.255.255',
  '192.169.0.0',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
  '192.0.2.1',
  '203.0.113.5',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2001:db8::1',
  '2001:1::1',
  '2003::1',
  '64:ff9b:2::1',
  'fbff::1',
];

describe('blocked ranges', () => {
  test.each(BLOCKED)('%s is refused as %s', (ip, range) => {
    const v = checkAddress(ip);
    expect(v.blocked).toBe(true);
    if (v.blocked) expect(v.range).toBe(range);
  });

  test.each(ALLOWED)('%s is allowed', (ip) => {
    expect(checkAddress(ip)).toEqual({ blocked: false });
  });

  test('IPv4-mapped addresses are unwrapped and the IPv4 inside is checked too', () => {
    expect(unwrapMapped('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(unwrapMapped('::FFFF:169.254.169.254')).toBe('169.254.169.254');
    expect(unwrapMapped('0:0:0:0:0:ffff:0808:0808')).toBe('8.8.8.8');
    expect(unwrapMapped('2001:db8::1')).toBeNull();
    expect(unwrapMapped('8.8.8.8')).toBeNull();
    expect(checkAddress('::ffff:127.0.0.1')).toEqual({ blocked: true, range: 'ipv4_mapped', embedded: 'loopback' });
    expect(checkAddress('::ffff:a9fe:a9fe')).toEqual({ blocked: true, range: 'ipv4_mapped', embedded: 'link_local' });
    expect(checkAddress('::ffff:8.8.8.8')).toEqual({ blocked: true, range: 'ipv4_mapped' });
  });

  test('anything that is not a plain address is refused, zones are ignored', () => {
    for (const bad of ['', 'localhost', '127.1', '010.0.0.1', '1.2.3.4.5', 'fe80::1::2']) {
      expect(checkAddress(bad)).toEqual({ blocked: true, range: 'not_an_address' });
    }
    expect(checkAddress('fe80::1%eth0')).toEqual({ blocked: true, range: 'link_local' });
    expect(checkAddress('[::1]')).toEqual({ blocked: true, range: 'loopback' });
  });
});

describe('checkDestination: URL rules', () => {
  const ok = answers('8.8.8.8');

  test('https is accepted and pinned to the resolved address', async () => {
    const d = await checkDestination(`https://${HOST}/hook?token=abc`, { resolver: ok });
    expect(d).toMatchObject({ ok: true, hostname: HOST, literal: false, address: '8.8.8.8', family: 4, addresses: ['8.8.8.8'] });
  });

  test('http only with allowHttp, and allowHttp changes nothing else', async () => {
    expect(await checkDestination(`http://${HOST}/`, { resolver: ok })).toMatchObject({ ok: false, reason: 'scheme' });
    expect(await checkDestination(`http://${HOST}/`, { resolver: ok, allowHttp: true })).toMatchObject({ ok: true });
    expect(await checkDestination('http://127.0.0.1/', { allowHttp: true })).toMatchObject({ ok: false, reason: 'blocked_address' });
    expect(await checkDestination(`http://${HOST}/`, { resolver: answers('10.1.2.3'), allowHttp: true })).toMatchObject({
      ok: false,
      reason: 'blocked_address',
    });
    for (const u of ['ftp://example.com/', 'file:///etc/passwd', 'ws://example.com/', 'gopher://example.com/', 'data:text/plain,x']) {
      expect(await checkDestination(u, { resolver: ok, allowHttp: true })).toMatchObject({ ok: false, reason: 'scheme' });
    }
  });

  test('credentials in the URL are refused and never echoed', async () => {
    for (const u of [`https://user:hunter2@${HOST}/`, `https://user@${HOST}/`, `https://:hunter2@${HOST}/`]) {
      const d = await checkDestination(u, { resolver: ok });
      expect(d).toMatchObject({ ok: false, reason: 'userinfo' });
      expect(JSON.stringify(d)).not.toContain('hunter2');
    }
  });

  test('unparseable URLs are refused', async () => {
    for (const u of ['not a url', 'https://', '/relative/path', 'https://exa mple.com/']) {
      expect(await checkDestination(u, { resolver: ok })).toMatchObject({ ok: false, reason: 'invalid_url' });
    }
  });

  test('IPv4 is preferred when a name has both families', async () => {
    const d = await checkDestination(`https://${HOST}/`, { resolver: answers('2606:4700::1111', '1.1.1.1') });
    expect(d).toMatchObject({ ok: true, address: '1.1.1.1', family: 4, addresses: ['2606:4700::1111', '1.1.1.1'] });
    const v6 = await checkDestination(`https://${HOST}/`, { resolver: answers('2606:4700::1111') });
    expect(v6).toMatchObject({ ok: true, address: '2606:4700::1111', family: 6 });
  });

  test('IP literals skip the resolver', async () => {
    let calls = 0;
    const d = await checkDestination('https://[2606:4700::1111]:8443/x', {
      resolver: async () => {
        calls++;
        return ['10.0.0.1'];
      },
    });
    expect(d).toMatchObject({ ok: true, literal: true, hostname: '2606:4700::1111', address: '2606:4700::1111', family: 6 });
    expect(calls).toBe(0);
  });
});

describe('checkDestination: blocked destinations', () => {
  test.each(BLOCKED.filter(([ip]) => !ip.includes('%')))('%s as an IP literal', async (ip, range) => {
    const d = await checkDestination(literalUrl(ip));
    expect(d).toMatchObject({ ok: false, reason: 'blocked_address', range });
  });

  test.each(BLOCKED)('%s as a DNS answer', async (ip, range) => {
    const d = await checkDestination(`https://${HOST}/hook`, { resolver: answers(ip) });
    expect(d).toMatchObject({ ok: false, reason: 'blocked_address', range });
    // The address a name resolved to is not disclosed to whoever configured the URL.
    if (!d.ok) expect(d.message).not.toContain(ip);
  });

  test('other spellings of loopback and metadata that the URL parser normalises', async () => {
    for (const u of [
      'https://2130706433/',
      'https://0x7f.1/',
      'https://017700000001/',
      'https://127.1/',
      'https://[::ffff:127.0.0.1]/',
      'https://[0:0:0:0:0:ffff:a9fe:a9fe]/',
      'https://0xa9fea9fe/',
      'https://[::]/',
      'https://0/',
    ]) {
      expect(await checkDestination(u)).toMatchObject({ ok: false, reason: 'blocked_address' });
    }
  });

  test('one blocked address among good ones refuses the destination', async () => {
    for (const set of [
      ['8.8.8.8', '10.0.0.1'],
      ['10.0.0.1', '8.8.8.8'],
      ['8.8.8.8', '1.1.1.1', '169.254.169.254'],
      ['2606:4700::1111', '::ffff:127.0.0.1'],
      ['8.8.8.8', 'garbage'],
    ]) {
      expect(await checkDestination(`https://${HOST}/`, { resolver: answers(...set) })).toMatchObject({
        ok: false,
        reason: 'blocked_address',
      });
    }
  });

  test('the real system resolver: localhost is refused', async () => {
    const d = await checkDestination('https://localhost/hook');
    expect(d).toMatchObject({ ok: false, reason: 'blocked_address', range: 'loopback' });
  });
});

describe('checkDestination: DNS failures', () => {
  test('NXDOMAIN, an empty answer and a stuck lookup are reason dns', async () => {
    expect(await checkDestination(`https://${HOST}/`, { resolver: nxdomain })).toMatchObject({ ok: false, reason: 'dns' });
    expect(await checkDestination(`https://${HOST}/`, { resolver: answers() })).toMatchObject({ ok: false, reason: 'dns' });
    const started = Date.now();
    const stuck = await checkDestination(`https://${HOST}/`, { resolver: () => new Promise(() => {}), dnsTimeoutMs: 100 });
    expect(stuck).toMatchObject({ ok: false, reason: 'dns' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test('messages carry the error code, not the hostname', async () => {
    const d = await checkDestination(`https://${HOST}/`, { resolver: nxdomain });
    expect(d).toMatchObject({ ok: false, reason: 'dns' });
    if (!d.ok) {
      expect(d.message).toContain('ENOTFOUND');
      expect(d.message).not.toContain(HOST);
    }
  });

  test('the real system resolver: a .invalid name is reason dns', async () => {
    expect(await checkDestination('https://no-such-host.svc-test.invalid/', { dnsTimeoutMs: 2000 })).toMatchObject({
      ok: false,
      reason: 'dns',
    });
  });
});

describe('guardedFetch refuses before connecting', () => {
  // A server on loopback that counts what reaches it: a refused destination
  // must never produce a connection, not even one that fails later.
  let hits = 0;
  let server: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (hits++, new Response('reached')) });
  });
  afterAll(() => server.stop(true));

  test('loopback as a literal and as a DNS answer', async () => {
    const port = server.port;
    const results = [
      await guardedFetch(`http://127.0.0.1:${port}/`, { allowHttp: true }),
      await guardedFetch(`http://[::ffff:127.0.0.1]:${port}/`, { allowHttp: true }),
      await guardedFetch(`http://${HOST}:${port}/`, { allowHttp: true, resolver: answers('127.0.0.1') }),
      await guardedFetch(`http://${HOST}:${port}/`, { allowHttp: true, resolver: answers('8.8.8.8', '127.0.0.1') }),
      await guardedFetch(`http://localhost:${port}/`, { allowHttp: true }),
    ];
    for (const r of results) expect(r).toMatchObject({ ok: false, reason: 'blocked_address' });
    expect(hits).toBe(0);
  });

  test.each(BLOCKED)('%s via guardedFetch', async (ip, range) => {
    expect(await guardedFetch(`https://${HOST}/`, { resolver: answers(ip) })).toMatchObject({ ok: false, reason: 'blocked_address', range });
    if (!ip.includes('%')) {
      expect(await guardedFetch(literalUrl(ip))).toMatchObject({ ok: false, reason: 'blocked_address', range });
    }
  });

  test('URL rules apply at dispatch too', async () => {
    expect(await guardedFetch(`http://${HOST}/`, { resolver: answers('8.8.8.8') })).toMatchObject({ ok: false, reason: 'scheme' });
    const r = await guardedFetch(`https://u:hunter2@${HOST}/?token=s3cret`, { resolver: answers('8.8.8.8') });
    expect(r).toMatchObject({ ok: false, reason: 'userinfo' });
    expect(JSON.stringify(r)).not.toMatch(/hunter2|s3cret/);
    expect(await guardedFetch(`https://${HOST}/`, { resolver: nxdomain })).toMatchObject({ ok: false, reason: 'dns' });
  });

  test('DNS rebinding: allowed at configuration, blocked at dispatch', async () => {
    let answer = '8.8.8.8';
    let calls = 0;
    const flipping: Resolver = async () => {
      calls++;
      return [answer];
    };
    expect(await checkDestination(`https://${HOST}/`, { resolver: flipping })).toMatchObject({ ok: true, address: '8.8.8.8' });
    answer = '169.254.169.254';
    expect(await guardedFetch(`https://${HOST}/`, { resolver: flipping })).toMatchObject({
      ok: false,
      reason: 'blocked_address',
      range: 'link_local',
    });
    expect(calls).toBe(2);
  });

  test('a stuck lookup ends at the request deadline or the caller abort', async () => {
    const stuck: Resolver = () => new Promise(() => {});
    let started = Date.now();
    expect(await guardedFetch(`https://${HOST}/`, { resolver: stuck, timeoutMs: 150 })).toMatchObject({ ok: false, reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1000);
    started = Date.now();
    const r = await guardedFetch(`https://${HOST}/`, { resolver: stuck, signal: AbortSignal.timeout(100) });
    expect(r).toMatchObject({ ok: false, reason: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
