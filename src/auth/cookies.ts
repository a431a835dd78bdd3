// The browser cookies: the session (HttpOnly), the CSRF token the dashboard
// echoes in X-CSRF-Token (readable by scripts, SameSite=Strict), and the
// remembered-device cookie. Secure whenever the request came over https
// (directly or through a trusted proxy).
import type { AppContext } from '../server/context.ts';
import { CSRF_HEADER_NAME, SESSION_COOKIE_NAME } from '../http/names.ts';
import { listHas } from '../lib/net.ts';

export const SESSION_COOKIE = SESSION_COOKIE_NAME;
export const CSRF_COOKIE = 'svc_csrf';
export const TRUST_COOKIE = 'svc_mfa_trust';
export const CSRF_HEADER = CSRF_HEADER_NAME;

export function readCookie(request: Request, name: string): string | null {
  const header = request.headers.get('cookie');
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{1,256}$/.test(value) ? value : null;
    }
  }
  return null;
}

export function isSecureRequest(ctx: AppContext, request: Request): boolean {
  if (new URL(request.url).protocol === 'https:') return true;
  const peer = ctx.peerAddress(request);
  return Boolean(ctx.trustedProxies && peer && listHas(ctx.trustedProxies, peer) && request.headers.get('x-forwarded-proto') === 'https');
}

export interface CookieSpec {
  name: string;
  value: string;
  maxAgeSeconds: number;
  httpOnly: boolean;
  sameSite: 'Lax' | 'Strict';
}

export function cookieHeader(spec: CookieSpec, secure: boolean): string {
  return [
    `${spec.name}=${spec.value}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(spec.maxAgeSeconds))}`,
    `SameSite=${spec.sameSite}`,
    ...(spec.httpOnly ? ['HttpOnly'] : []),
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export const clearCookie = (name: string, secure: boolean): string =>
  cookieHeader({ name, value: '', maxAgeSeconds: 0, httpOnly: true, sameSite: 'Lax' }, secure);

/** A JSON response carrying Set-Cookie headers. */
export function withCookies(status: number, body: unknown, cookies: string[]): Response {
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8' });
  for (const c of cookies) headers.append('set-cookie', c);
  return new Response(body === null ? null : JSON.stringify(body), { status, headers });
}
