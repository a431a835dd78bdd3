// A cookie-keeping API client for a real svc server over HTTP(S), as a
// browser would call it: cookies kept, the CSRF header sent on writes.
import { decodeBase32IgnorePadding } from '@oslojs/encoding';
import { generateTOTP } from '@oslojs/otp';

export class Api {
  cookies = new Map<string, string>();
  constructor(
    readonly base: string,
    /** The certificate to trust (a self-signed svc), if any. */
    readonly ca?: string,
    readonly headers: Record<string, string> = {},
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...this.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET' && this.cookies.has('svc_csrf')) headers['x-csrf-token'] = this.cookies.get('svc_csrf')!;
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body), ...(this.ca ? { tls: { ca: this.ca } } : {}) };
    const res = await fetch(this.base + path, init as RequestInit);
    for (const c of res.headers.getSetCookie()) {
      const [k, v] = c.split(';')[0]!.split('=');
      this.cookies.set(k!, v!);
    }
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  /** Signs in; fails the test unless the answer is 200. */
  async login(email: string, password: string): Promise<void> {
    const r = await this.call('POST', '/api/v1/auth/login', { email, password });
    if (r.status !== 200) throw new Error(`login of ${email}: ${r.status} ${JSON.stringify(r.body)}`);
  }

  /** Enrols an authenticator for the signed-in user (the session's MFA is then fresh); returns its key. */
  async enrolMfa(): Promise<Uint8Array> {
    const start = await this.call('POST', '/api/v1/auth/mfa/enroll-start');
    const key = decodeBase32IgnorePadding(start.body.secret_base32);
    const done = await this.call('POST', '/api/v1/auth/mfa/enroll-complete', { code: generateTOTP(key, 30, 6) });
    if (done.status !== 200) throw new Error(`MFA enrolment: ${done.status} ${JSON.stringify(done.body)}`);
    return key;
  }

  /** The headers a non-browser client sends to act as this session (cookies and the CSRF header). */
  sessionHeaders(): Record<string, string> {
    return { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'x-csrf-token': this.cookies.get('svc_csrf') ?? '' };
  }
}
