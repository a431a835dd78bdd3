// A real OpenID Provider for the SSO tests: the certified `oidc-provider` package (npm), on
// loopback, started by the tests themselves (in the bun test process, or in Playwright's Node).
// Its accounts are given by the test; its sign-in page is a small form (e-mail and password)
// that Chromium fills in like a person, or `signIn()` posts it directly. Consent is implied for
// the one client (svc), as for a first-party application.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

export interface TestAccount {
  sub: string;
  email: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
  /** What the provider asserts about how this sign-in happened. */
  amr?: string[];
  acr?: string;
}

export interface OidcProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  accounts: TestAccount[];
  port?: number;
}

export interface TestOidcProvider {
  issuer: string;
  /** The client's registered callbacks (add to it before the first request reaches the provider). */
  redirectUris: string[];
  port: number;
  accounts: Map<string, TestAccount>;
  /** The password the sign-in form accepts for every account. */
  password: string;
  close(): Promise<void>;
}

export const PROVIDER_PASSWORD = 'provider-password-1';

const ACR_VALUES = ['urn:svc-test:pwd', 'urn:svc-test:mfa'];

function page(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><html><head><title>Test identity provider</title></head><body>${html}</body></html>`);
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startOidcProvider(opts: OidcProviderOptions): Promise<TestOidcProvider> {
  const accounts = new Map(opts.accounts.map((a) => [a.sub, a]));
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
  // Listen first: the issuer names the port.
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  // Built at the first request, so a test may add the callback of an svc started after the provider
  // (its port is known only then) to `redirectUris`.
  const build = () => new Provider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: ['svc-test-provider-cookie-key'] },
    claims: {
      // How the user signed in travels with every id_token (svc reads amr and acr for MFA).
      openid: ['sub', 'acr', 'amr', 'auth_time'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    acrValues: ACR_VALUES,
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx: unknown, id: string) {
      const a = accounts.get(id);
      if (!a) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: a.email, email_verified: a.email_verified ?? true, name: a.name ?? a.email, ...(a.groups ? { groups: a.groups } : {}) };
        },
      };
    },
    // svc is the provider's own application here: consent is implied.
    async loadExistingGrant(ctx: any) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile groups');
      grant.addOIDCClaims(['email', 'email_verified', 'name', 'groups']);
      await grant.save();
      return grant;
    },
  } as never);
  let provider: Provider | null = null;
  let handler: ReturnType<Provider['callback']> | null = null;

  server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    if (!provider) {
      provider = build();
      handler = provider.callback();
    }
    const url = new URL(req.url ?? '/', issuer);
    const m = /^\/interaction\/([A-Za-z0-9_-]+)$/.exec(url.pathname);
    if (!m) return handler!(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (req.method === 'GET') {
        return page(
          res,
          200,
          `<h1>Test identity provider</h1><form method="post" action="/interaction/${escape(details.uid)}">
<label>E-mail <input name="email" type="email" autocomplete="off"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button></form>`,
        );
      }
      const form = await formOf(req);
      const account = [...accounts.values()].find((a) => a.email === form.get('email'));
      if (!account || form.get('password') !== PROVIDER_PASSWORD) return page(res, 401, '<h1>Wrong e-mail or password</h1>');
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: account.sub, ...(account.amr ? { amr: account.amr } : {}), ...(account.acr ? { acr: account.acr } : {}) } },
        { mergeWithLastSubmission: false },
      );
    } catch (e) {
      page(res, 400, `<h1>Interaction failed</h1><p>${escape((e as Error).message)}</p>`);
    }
  });

  return {
    issuer,
    redirectUris: opts.redirectUris,
    port,
    accounts,
    password: PROVIDER_PASSWORD,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** A cookie jar for fetch: what a browser would keep for one site. */
export class Jar {
  private readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0\b/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}

/** Follows the provider's redirects from the authorization URL svc sent the browser to, signs in as
 * `email` on the form, and returns the URL the provider finally sends the browser to (svc's callback). */
export async function signInAtProvider(authorizationUrl: string, email: string, password = PROVIDER_PASSWORD): Promise<string> {
  const jar = new Jar();
  let url = authorizationUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { cookie: jar.header(), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body,
    });
    jar.take(res);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url).toString();
      if (!next.startsWith(new URL(authorizationUrl).origin)) return next;
      url = next;
      method = 'GET';
      body = undefined;
      continue;
    }
    const html = await res.text();
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action) throw new Error(`provider answered ${res.status}: ${html.slice(0, 300)}`);
    url = new URL(action, url).toString();
    method = 'POST';
    body = new URLSearchParams({ email, password }).toString();
  }
  throw new Error('too many redirects at the provider');
}
