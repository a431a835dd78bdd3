// Identity test helpers: a cookie-keeping browser over app.handle(), and
// shortcuts to a signed-in administrator with MFA enrolled.
import { decodeBase32IgnorePadding } from '@oslojs/encoding';
import { generateTOTP } from '@oslojs/otp';
import { mintSetupToken } from '../../src/setup/service.ts';
import type { CallOptions, TestResponse, TestService } from './app.ts';

/** Settings that keep identity tests quick (cheap hashes, no login delay). */
export const FAST_IDENTITY_ENV = {
  SVC_ARGON2_MEMORY_KIB: '8192',
  SVC_ARGON2_TIME_COST: '1',
  SVC_ARGON2_PARALLELISM: '1',
  SVC_LOGIN_MIN_DURATION_MS: '0',
};

export const STRONG_PASSWORD = 'Correct-Horse-Battery-9';

/** Keeps cookies like a browser and sends the CSRF header the dashboard sends. */
export class Browser {
  readonly cookies = new Map<string, string>();
  totpKey: Uint8Array | null = null;
  recoveryCodes: string[] = [];

  constructor(
    readonly svc: TestService,
    readonly userAgent = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0',
  ) {}

  async call<T = any>(method: string, path: string, opts: CallOptions & { csrf?: boolean } = {}): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { 'user-agent': this.userAgent, ...opts.headers };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const csrf = this.cookies.get('svc_csrf');
    if (csrf && opts.csrf !== false && method !== 'GET') headers['x-csrf-token'] ??= csrf;
    const res = await this.svc.call<T>(method, path, { ...opts, headers });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const [name, value] = pair!.split('=');
      const maxAge = attrs.find((a) => a.trim().toLowerCase().startsWith('max-age='));
      if (maxAge && Number(maxAge.split('=')[1]) === 0) this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value!.trim());
    }
    return res;
  }

  async login(email: string, password: string): Promise<TestResponse> {
    return this.call('POST', '/api/v1/auth/login', { body: { email, password } });
  }

  /** Enrols TOTP; keeps the key and recovery codes for later verification. */
  async enrollMfa(): Promise<void> {
    const start = await this.call('POST', '/api/v1/auth/mfa/enroll-start');
    if (start.status !== 200) throw new Error(`enroll-start: ${start.status} ${start.text}`);
    this.totpKey = decodeBase32IgnorePadding(start.body.secret_base32);
    const done = await this.call('POST', '/api/v1/auth/mfa/enroll-complete', { body: { code: this.code() } });
    if (done.status !== 200) throw new Error(`enroll-complete: ${done.status} ${done.text}`);
    this.recoveryCodes = done.body.recovery_codes;
  }

  code(): string {
    if (!this.totpKey) throw new Error('no TOTP key enrolled');
    return generateTOTP(this.totpKey, 30, 6);
  }

  async verifyMfa(opts: { remember_device?: boolean } = {}): Promise<TestResponse> {
    return this.call('POST', '/api/v1/auth/mfa/verify', { body: { code: this.code(), ...opts } });
  }
}

/** Completes first-boot setup through the API; returns the admin's browser (signed in). */
export async function setupAdmin(svc: TestService, email = 'admin@example.com'): Promise<Browser> {
  const minted = await mintSetupToken(svc.ctx);
  const admin = new Browser(svc);
  const res = await admin.call('POST', '/api/v1/setup/complete', { body: { token: minted!.token, email, password: STRONG_PASSWORD, display_name: 'Ada Admin' } });
  if (res.status !== 201) throw new Error(`setup: ${res.status} ${res.text}`);
  return admin;
}

/** A signed-in administrator with MFA enrolled and fresh. */
export async function mfaAdmin(svc: TestService): Promise<Browser> {
  const admin = await setupAdmin(svc);
  await admin.enrollMfa();
  return admin;
}

/** Creates a user through the API as `admin` and returns a browser signed in as them. */
export async function userBrowser(admin: Browser, email: string, extra: Record<string, unknown> = {}): Promise<Browser & { id: string }> {
  const created = await admin.call('POST', '/api/v1/users', { body: { email, password: STRONG_PASSWORD, ...extra } });
  if (created.status !== 201) throw new Error(`create user: ${created.status} ${created.text}`);
  const b = new Browser(admin.svc) as Browser & { id: string };
  b.id = created.body.id;
  const login = await b.login(email, STRONG_PASSWORD);
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
  return b;
}

/** The callers of the role-matrix tables. */
export type MatrixActor = 'anonymous' | 'viewer' | 'operator' | 'project_admin' | 'global_admin' | 'key_with_scope' | 'key_without_scope' | 'other_project';
export const MATRIX_ACTORS: MatrixActor[] = ['anonymous', 'viewer', 'operator', 'project_admin', 'global_admin', 'key_with_scope', 'key_without_scope', 'other_project'];

/** One signed-in caller of each kind: members of `default` with each role, the administrator, an admin of
 * another project (`elsewhere`), and the administrator's API keys with and without the scopes tested. */
export async function matrixCallers(svc: TestService, keyScopes: string[]): Promise<{ admin: Browser; browsers: Partial<Record<MatrixActor, Browser & { id?: string }>>; keys: { with: string; without: string } }> {
  const admin = await mfaAdmin(svc);
  const member = async (email: string, role: string, slug = 'default') => {
    const b = await userBrowser(admin, email);
    const granted = await admin.call('POST', `/api/v1/projects/${slug}/memberships`, { body: { user_id: b.id, role } });
    if (granted.status !== 201) throw new Error(`membership: ${granted.status} ${granted.text}`);
    return b;
  };
  const browsers: Partial<Record<MatrixActor, Browser & { id?: string }>> = { global_admin: admin };
  browsers.viewer = await member('viewer@example.com', 'viewer');
  browsers.operator = await member('operator@example.com', 'operator');
  browsers.project_admin = await member('padmin@example.com', 'admin');
  await admin.call('POST', '/api/v1/projects', { body: { slug: 'elsewhere', name: 'Elsewhere' } });
  browsers.other_project = await member('other@example.com', 'admin', 'elsewhere');
  const key = async (name: string, scopes: string[]) => (await admin.call('POST', '/api/v1/api-keys', { body: { name, scopes } })).body.token as string;
  return { admin, browsers, keys: { with: await key('all', keyScopes), without: await key('narrow', ['tasks:read']) } };
}
