// Per-request context every route sees: request id, client address and a
// logger bound to the request id. Areas `.use(requestPlugin(ctx))` for the
// types; Elysia de-duplicates the named plugin within one app.
import { Elysia } from 'elysia';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { clientIp } from './client-ip.ts';

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const requestIds = new WeakMap<Request, string>();

/** The request's id: the caller's X-Request-Id when short and plain, else a
 * fresh one; the same value for the whole life of the request. */
export function requestIdOf(request: Request): string {
  let id = requestIds.get(request);
  if (!id) {
    const given = request.headers.get('x-request-id');
    id = given && REQUEST_ID_RE.test(given) ? given : crypto.randomUUID();
    requestIds.set(request, id);
  }
  return id;
}

/** The client address, after trusted-proxy resolution. */
export function requestIpOf(ctx: AppContext, request: Request): string | null {
  return clientIp(ctx.peerAddress(request), request.headers.get('x-forwarded-for'), ctx.trustedProxies);
}

const seeds = new WeakMap<AppContext, string>();
const seedOf = (ctx: AppContext): string => {
  let id = seeds.get(ctx);
  if (!id) seeds.set(ctx, (id = crypto.randomUUID()));
  return id;
};

export const requestPlugin = (ctx: AppContext) =>
  new Elysia({ name: 'svc.request', seed: seedOf(ctx) }).derive({ as: 'global' }, ({ request }) => {
    const requestId = requestIdOf(request);
    return { requestId, ip: requestIpOf(ctx, request), log: logger('http').child({ request_id: requestId }) };
  });
