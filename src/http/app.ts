// Assembles the Elysia app: the Host allow-list and body-size gate before any
// route, JSON body parsing with a size cap, the one error envelope for every
// failure, security headers, access logs, then each area's routes.
import { Elysia } from 'elysia';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { ApiError, errorResponse, jsonResponse, tooLarge, validationFailed } from './errors.ts';
import { requestIdOf } from './request.ts';
import { methodsFor } from './routes-index.ts';
import { readBodyLimited } from './body.ts';
import { validationFields } from './validation.ts';
import { contract, isStartGated } from './contract.ts';
import { reportError, traceRequestEnd, traceRequestStart } from '../telemetry/index.ts';
import { openapiContract, openapiDocument } from './openapi.ts';

const log = logger('http');

export type RouteModule = (ctx: AppContext) => Elysia<any, any, any, any, any, any, any>;

/** Paths that always answer JSON (never the dashboard's index.html). */
export const API_PREFIXES = ['/api/', '/ws/', '/metrics'];
const isApiPath = (path: string): boolean => API_PREFIXES.some((p) => path === p.replace(/\/$/, '') || path.startsWith(p));

export interface AppOptions {
  /** Answers GET requests no route claimed (the dashboard); null falls through to 404. */
  fallback?: (request: Request, path: string) => Promise<Response | null>;
}

export function bodyLimitFor(ctx: AppContext, path: string): number {
  return path === '/api/v1/agent/events' ? ctx.config.SVC_AGENT_EVENTS_MAX_BODY_BYTES : ctx.config.SVC_MAX_PAYLOAD_SIZE_BYTES;
}

/** How long a shutdown waits for answered requests' after-response work (long-polls cut off may never get it). */
const SHUTDOWN_SETTLE_MS = 500;

export function buildApp(ctx: AppContext, modules: RouteModule[], options: AppOptions = {}) {
  const started = new WeakMap<Request, number>();
  // What the error handler answered, and for which route: Elysia passes its Response on to neither `set`
  // nor `responseValue`, and a request refused before routing, or that no route matched, has no pattern.
  const answered = new WeakMap<Request, { status: number; route: string }>();
  // Requests answered or being answered whose after-response work (the request count, the trace span) has
  // not run yet: Elysia runs it in a later turn, which a shutdown right after the answer could overtake,
  // flushing the traces without the last span. WebSocket upgrades have no such turn and are not held.
  const unfinished = new Set<Request>();
  let settled: (() => void) | null = null;
  ctx.lifecycle.onShutdown('requests', async () => {
    if (unfinished.size === 0) return;
    const timer = new Promise<void>((done) => setTimeout(done, SHUTDOWN_SETTLE_MS));
    await Promise.race([new Promise<void>((done) => (settled = done)), timer]);
    settled = null;
  });
  async function answerError(code: string | number, error: unknown, request: Request, route: string | undefined): Promise<Response> {
    const requestId = requestIdOf(request);
    if (error instanceof ApiError) return errorResponse(error, requestId);
    // Errors thrown by our body parser arrive wrapped in Elysia's ParseError.
    const cause = (error as { cause?: unknown }).cause;
    if (code === 'PARSE' && cause instanceof ApiError) return errorResponse(cause, requestId);
    if (code === 'VALIDATION') return errorResponse(validationFailed(validationFields(error)), requestId);
    if (code === 'PARSE') return errorResponse(new ApiError(400, 'invalid_json', 'request body is not valid JSON'), requestId);
    if (code === 'NOT_FOUND') {
      const url = new URL(request.url);
      const allowed = methodsFor(app, url.pathname);
      if (allowed.length > 0 && !allowed.includes(request.method)) {
        return errorResponse(
          new ApiError(405, 'method_not_allowed', `${request.method} is not allowed on ${url.pathname}`, { allowed }, { allow: allowed.join(', ') }),
          requestId,
        );
      }
      if ((request.method === 'GET' || request.method === 'HEAD') && !isApiPath(url.pathname) && options.fallback) {
        const page = await options.fallback(request, url.pathname);
        if (page) {
          answered.set(request, { status: page.status, route: 'dashboard' });
          return page;
        }
      }
      return errorResponse(new ApiError(404, 'not_found', `no route for ${request.method} ${url.pathname}`), requestId);
    }
    if (isDatabaseUnavailable(error)) {
      log.warn({ request_id: requestId, err: describeError(error).code }, 'database unavailable');
      return errorResponse(new ApiError(503, 'database_unavailable', 'the database is not answering; try again shortly', {}, { 'retry-after': '2' }), requestId);
    }
    log.error({ request_id: requestId, err: describeError(error), code }, 'unhandled error');
    reportError(error, { mechanism: 'http', method: request.method, route: route || 'unmatched', requestId });
    return errorResponse(new ApiError(500, 'internal_error', 'internal error; the request id identifies it in the logs'), requestId);
  }

  // normalize off: Elysia would strip unknown body fields before validation,
  // hiding them from the closed schemas of http/schemas.ts.
  const app = new Elysia({ normalize: false })
    // The early refusals below are thrown, not returned: Elysia hands a Response returned here straight to
    // the client, past onError and onAfterResponse, so it would be neither counted nor its span ended.
    .onRequest(({ request, set }) => {
      started.set(request, performance.now());
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') unfinished.add(request);
      const requestId = requestIdOf(request);
      traceRequestStart(request, requestId);
      set.headers['x-request-id'] = requestId;
      set.headers['x-content-type-options'] = 'nosniff';
      set.headers['x-frame-options'] = 'DENY';
      set.headers['referrer-policy'] = 'same-origin';
      set.headers['cross-origin-opener-policy'] = 'same-origin';
      if (ctx.worker.count > 1) set.headers['x-svc-worker'] = String(ctx.worker.index);
      if (!ctx.hosts.allows(request.headers.get('host'))) {
        const details: Record<string, unknown> = ctx.config.SVC_DEBUG_HOST_ERRORS
          ? { host: request.headers.get('host'), allow_list_file: ctx.paths.allowedHosts }
          : {};
        throw new ApiError(400, 'host_not_allowed', 'the Host header names a host this service does not accept', details);
      }
      const path = new URL(request.url).pathname;
      if (!ctx.lifecycle.ready && isStartGated(path)) {
        throw new ApiError(503, 'starting', 'svc is starting; try again shortly', {}, { 'retry-after': '1' });
      }
      const length = request.headers.get('content-length');
      const limit = bodyLimitFor(ctx, path);
      if (length !== null && Number(length) > limit) throw tooLarge(limit);
    })
    .onParse(async ({ request, contentType, path }) => {
      const text = await readBodyLimited(request, bodyLimitFor(ctx, path));
      if (text === '') return {};
      const type = (contentType ?? '').toLowerCase();
      if (type !== '' && !/^application\/([a-z0-9.+-]*\+)?json\b/.test(type)) {
        throw new ApiError(415, 'unsupported_media_type', 'request bodies must be JSON (Content-Type: application/json)');
      }
      try {
        return JSON.parse(text);
      } catch {
        throw new ApiError(400, 'invalid_json', 'request body is not valid JSON');
      }
    })
    .onError(async ({ code, error, request, route }) => {
      const response = await answerError(code, error, request, route);
      if (!answered.has(request)) answered.set(request, { status: response.status, route: route || 'unmatched' });
      return response;
    })
    .onAfterResponse((context) => {
      const { request, set, responseValue } = context;
      const answer = answered.get(request);
      const status = answer?.status ?? (responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200));
      // The route's pattern, never the raw path (unbounded label values); the dashboard's files are one route.
      const route = answer?.route ?? (context as { route?: string }).route ?? 'unmatched';
      ctx.metrics.observeRequest(request.method, route, status, (performance.now() - (started.get(request) ?? performance.now())) / 1000);
      traceRequestEnd(request, route, status);
      unfinished.delete(request);
      if (unfinished.size === 0) settled?.();
      log.debug({ request_id: requestIdOf(request), method: request.method, path: new URL(request.url).pathname, status }, 'request');
    });
  for (const module of modules) app.use(module(ctx));
  // The document of every route above, written once from their contracts.
  let document: unknown = null;
  app.get('/api/v1/openapi.json', () => (document ??= openapiDocument(app.routes)), { detail: { ...contract(openapiContract).detail, tags: ['meta'] } });
  return app;
}

export type App = ReturnType<typeof buildApp>;
export { jsonResponse };
