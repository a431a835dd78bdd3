// Single sign-on in the compiled binary: dist/svc against a real OpenID Provider (oidc-provider) on
// loopback. The JOSE library is imported at the first SSO login inside the binary; this shows it is
// there and works: discovery, PKCE code exchange, id_token verification, userinfo, a session. And the
// trusted-proxy header over a real socket: believed from a listed socket peer only, whatever
// X-Forwarded-For says (the in-process tests substitute the peer address).
import { afterAll, describe, expect, test } from 'bun:test';
import { createServer } from 'node:net';
import { cleanEnv, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';
import { Jar, signInAtProvider, startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.ts';

const running: { svc?: RunningSvc; op?: TestOidcProvider; proxied: RunningSvc[] } = { proxied: [] };
afterAll(async () => {
  await running.svc?.stop('SIGKILL');
  await running.op?.close();
  for (const svc of running.proxied) await svc.stop('SIGKILL');
});

/** A loopback port nobody listens on now (svc needs it before the provider can list its callback). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('dist/svc signs in through OpenID Connect', () => {
  test('button to provider to callback: a session for the bootstrap admin, then for a provisioned account', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const secret = 'binary-test-client-secret-0123456789abcdef';
    running.op = await startOidcProvider({
      clientId: 'svc-binary',
      clientSecret: secret,
      redirectUris: [`${base}/api/v1/auth/sso/callback`],
      accounts: [
        { sub: 'admin-1', email: 'admin@example.com' },
        { sub: 'new-1', email: 'newcomer@example.com', groups: ['svc-viewers'] },
      ],
    });
    running.svc = await startSvc(
      cleanEnv({
        ...FAST_IDENTITY_ENV,
        SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
        SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD,
        SVC_OIDC_ISSUER: running.op.issuer,
        SVC_OIDC_CLIENT_ID: 'svc-binary',
        SVC_OIDC_CLIENT_SECRET: secret,
        SVC_OIDC_ALLOW_HTTP: 'true',
        SVC_OIDC_ALLOW_PRIVATE_PROVIDER: 'true',
        SVC_OIDC_SCOPES: 'openid email profile groups',
        SVC_OIDC_PROJECT_ROLES: 'svc-viewers:default:operator',
        SVC_SSO_AUTO_PROVISION: 'true',
      }),
      ['--host', '127.0.0.1', '--port', String(port)],
    );

    const config = await (await fetch(`${base}/api/v1/auth/sso/config`)).json();
    expect(config.oidc.enabled).toBe(true);

    async function signIn(email: string): Promise<Jar> {
      const jar = new Jar();
      const start = await fetch(`${base}/api/v1/auth/sso/login?next=/activity`, { redirect: 'manual' });
      expect(start.status).toBe(302);
      jar.take(start);
      const back = await signInAtProvider(start.headers.get('location')!, email);
      expect(back.startsWith(`${base}/api/v1/auth/sso/callback?`)).toBe(true);
      const done = await fetch(back, { redirect: 'manual', headers: { cookie: jar.header() } });
      expect(done.status).toBe(302);
      expect(done.headers.get('location')).toBe('/activity');
      jar.take(done);
      return jar;
    }

    const admin = await signIn('admin@example.com');
    const me = await (await fetch(`${base}/api/v1/auth/me`, { headers: { cookie: admin.header() } })).json();
    expect(me).toMatchObject({ email: 'admin@example.com', is_admin: true });

    const newcomer = await signIn('newcomer@example.com');
    const them = await (await fetch(`${base}/api/v1/auth/me`, { headers: { cookie: newcomer.header() } })).json();
    expect(them.email).toBe('newcomer@example.com');
    expect(them.memberships.map((m: any) => [m.project_slug, m.role])).toEqual([['default', 'operator']]);
  });
});

describe('dist/svc trusted-proxy header', () => {
  /** svc on 127.0.0.1 taking the e-mail header from `proxies`; X-Forwarded-For from loopback is
   * believed for the client address, so only the socket peer check stands between it and a session. */
  async function proxiedSvc(proxies: string): Promise<RunningSvc> {
    const svc = await startSvc(
      cleanEnv({
        ...FAST_IDENTITY_ENV,
        SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com',
        SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD,
        SVC_AUTH_PROXY_HEADER: 'X-Forwarded-Email',
        SVC_AUTH_PROXY_ADDRESSES: proxies,
        SVC_TRUSTED_PROXIES: '127.0.0.1',
      }),
      ['--host', '127.0.0.1'],
    );
    running.proxied.push(svc);
    return svc;
  }
  const headers = { 'x-forwarded-email': 'admin@example.com', 'x-forwarded-for': '10.0.0.5' };

  test('from a peer not in SVC_AUTH_PROXY_ADDRESSES: 403 proxy_not_trusted, even with X-Forwarded-For naming a listed address', async () => {
    const svc = await proxiedSvc('10.0.0.0/8');
    const res = await fetch(`${svc.url}/api/v1/auth/proxy/login?next=/activity`, { redirect: 'manual', headers });
    expect(res.status).toBe(403);
    expect((await res.json()).error).toBe('proxy_not_trusted');
    expect(res.headers.getSetCookie().filter((c) => c.startsWith('svc_session='))).toEqual([]);
  });

  test('from a listed peer: the header signs the user in', async () => {
    const svc = await proxiedSvc('10.0.0.0/8,127.0.0.1');
    const res = await fetch(`${svc.url}/api/v1/auth/proxy/login?next=/activity`, { redirect: 'manual', headers });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/activity');
    const jar = new Jar();
    jar.take(res);
    const me = await fetch(`${svc.url}/api/v1/auth/me`, { headers: { cookie: jar.header() } });
    expect(me.status).toBe(200);
    expect((await me.json()).email).toBe('admin@example.com');
  });
});
