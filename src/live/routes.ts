// GET /api/v1/live: the dashboard's live update stream, a WebSocket beside the
// agents' /ws/agent on the same server (Elysia hands each upgraded socket the
// handlers in its data). Refusals are plain HTTP answers before the upgrade:
// no session 401, an API key or another site's page 403, the per-user cap 429.
//
// A WebSocket rather than Server-Sent Events: the client subscribes to projects
// and pings over the same connection (SSE would need a second channel for
// that), and an EventSource holds one of the browser's six HTTP/1.1
// connections per host for as long as a tab is open (with a few tabs open the
// pages' own requests would queue behind them); WebSockets have a limit of
// their own, far larger.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { callerOf, guarded } from '../access/guard.ts';
import { isSecureRequest } from '../auth/cookies.ts';
import { ApiError, forbidden } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { liveOf } from './index.ts';

export const LIVE_ROUTE = '/api/v1/live';

/** Browsers send Origin on every WebSocket handshake: it must be this service's own origin (the request's Host
 * over its scheme, on the host allow-list) or SVC_PUBLIC_URL's. A client with no Origin is not a browser page,
 * so no other site can be using a visitor's cookie through it; it is let through (the session still decides). */
export function originAllowed(ctx: AppContext, request: Request): boolean {
  const origin = request.headers.get('origin');
  if (origin === null) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (ctx.config.SVC_PUBLIC_URL !== '' && new URL(ctx.config.SVC_PUBLIC_URL).origin === url.origin) return true;
  const host = request.headers.get('host');
  const scheme = isSecureRequest(ctx, request) ? 'https:' : 'http:';
  return host !== null && url.protocol === scheme && url.host === host.toLowerCase() && ctx.hosts.allows(url.host);
}

export const liveRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['live updates'] } }).get(
    LIVE_ROUTE,
    ({ request, server }) => {
      const who = callerOf(request);
      const srv = server ?? ctx.server;
      if (!srv || request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
        throw new ApiError(426, 'upgrade_required', 'this endpoint speaks WebSocket', {}, { upgrade: 'websocket' });
      }
      if (!originAllowed(ctx, request)) throw forbidden('origin_not_allowed', 'a page of another site may not open the live stream');
      const { hub } = liveOf(ctx);
      const limit = ctx.config.SVC_LIVE_MAX_CONNECTIONS_PER_USER;
      if (hub.countOf(who.user.id) >= limit) {
        throw new ApiError(429, 'too_many_connections', `at most ${limit} live connections per user; close a tab`, { limit }, { 'retry-after': '30' });
      }
      const conn = hub.accept(who);
      if (srv.upgrade(request, { data: conn.handlers() })) return undefined as unknown as Response;
      hub.release(conn);
      throw new ApiError(400, 'upgrade_failed', 'the WebSocket upgrade failed');
    },
    guarded(ctx, {
      summary: 'Live updates (WebSocket): subscribe to projects, receive small notices of what changed (docs/live-updates.md)',
      description:
        'Session cookie only. Client messages: {"type":"subscribe","project":"<slug>|*","types":["task","command","agent","activity"]}, ' +
        '{"type":"unsubscribe","project":"<slug>"}, {"type":"ping"}. Server messages: ready, subscribed, unsubscribed, error, pong, resync, ' +
        'and notices {"type":"task|command|agent|activity","project":"<slug>","project_id":"<uuid>","ids":[...],"more":true?,"at":"<time>"}. ' +
        'Close codes: 1001 stopping, 4400 bad message, 4401 session ended, 4408 idle.',
      access: { user: {} },
      ok: Type.Null(),
      status: 101,
      errors: { 400: ['upgrade_failed'], 403: ['origin_not_allowed'], 426: ['upgrade_required'], 429: ['too_many_connections'] },
    }),
  );
