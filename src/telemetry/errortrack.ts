// Error tracking (SVC_ERRORTRACK_DSN): unhandled errors as Sentry envelopes
// sent to the DSN's ingest endpoint (`<scheme>://<host>[/<path>]/api/<project>/envelope/`,
// authenticated by the X-Sentry-Auth header with the DSN's public key).
//
// Why not @sentry/bun or @sentry/node: @sentry/bun 11.8.0 works in the
// compiled binary, but measured with Bun 1.4.5 on dist/svc built with and
// without it (imported only behind the unset DSN, never called), it adds
// about 4.5 MB of idle RSS and 2.7 MB of binary (85 MB of node_modules, ~530
// more bundled modules); it takes ~270 ms to import from source; its default
// integrations instrument globals (http, fetch, console) for breadcrumbs and
// spans, which svc must not have; and it sends messages unredacted unless a
// beforeSend hook rewrites them. Everything svc needs is one JSON document in
// one POST: this file, with the redaction done before anything is built
// (src/telemetry/redact.ts). docs/spec-deviations.md.
//
// What an event holds: exception type, redacted message, stack frames
// (function, file, line, column), mechanism (http, background,
// uncaught_exception, unhandled_rejection), request method + route pattern
// (never the URL, query, headers, cookies or body), request id or job name,
// release = svc@<version>, environment = SVC_ENVIRONMENT, the runtime version.
//
// Sending never blocks the caller and never throws: at most 8 envelopes in
// flight (more are dropped), one event per distinct error per minute, and a
// 429 from the tracker pauses sending for its Retry-After.
import { rootCause } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { redactor, stackFrames, type Redactor } from './redact.ts';

const log = logger('errortrack');

export type Mechanism = 'http' | 'background' | 'uncaught_exception' | 'unhandled_rejection';

export interface ErrorScope {
  mechanism: Mechanism;
  level?: 'error' | 'fatal';
  /** HTTP: method and route pattern (`/api/v1/projects/:slug`), never the path itself. */
  method?: string;
  route?: string;
  requestId?: string;
  /** Background job name. */
  job?: string;
}

export interface Dsn {
  /** Where envelopes go. */
  endpoint: string;
  publicKey: string;
  projectId: string;
}

/** Reads a Sentry DSN (`https://<public key>[:<legacy secret>]@<host>[:port][/<path>]/<project id>`); null when it is not one. */
export function parseDsn(dsn: string): Dsn | null {
  let u: URL;
  try {
    u = new URL(dsn);
  } catch {
    return null;
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username === '' || u.search !== '' || u.hash !== '') return null;
  const path = u.pathname.replace(/\/+$/, '');
  const cut = path.lastIndexOf('/');
  const projectId = path.slice(cut + 1);
  if (!/^[0-9A-Za-z_-]+$/.test(projectId)) return null;
  return {
    endpoint: `${u.protocol}//${u.host}${path.slice(0, cut)}/api/${projectId}/envelope/`,
    publicKey: decodeURIComponent(u.username),
    projectId,
  };
}

export interface TrackerOptions {
  dsn: Dsn;
  release: string;
  environment: string;
  /** Configured secret values, replaced wherever they appear. */
  secrets: readonly string[];
  timeoutMs?: number;
}

const MAX_IN_FLIGHT = 8;
const SAME_ERROR_INTERVAL_MS = 60_000;
const WARN_INTERVAL_MS = 60_000;

const hex32 = (): string => crypto.randomUUID().replace(/-/g, '');
const safeName = (s: unknown): string => (typeof s === 'string' && /^[A-Za-z0-9_.$]{1,100}$/.test(s) ? s : 'Error');
const tag = (s: string): string => s.slice(0, 200);

export class ErrorTracker {
  private readonly redact: Redactor;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly lastSent = new Map<string, number>();
  private pausedUntil = 0;
  private lastWarn = 0;
  private dropped = 0;
  /** Envelopes handed to fetch (tests). */
  sent = 0;

  constructor(private readonly options: TrackerOptions) {
    this.redact = redactor(options.secrets);
  }

  /** Builds the event for `e`; exported for tests through `envelope`. */
  event(e: unknown, scope: ErrorScope, eventId = hex32()): Record<string, unknown> {
    const cause = rootCause(e);
    const err = cause instanceof Error ? cause : null;
    const type = err ? safeName(err.name !== 'Error' ? err.name : err.constructor?.name) : 'NonError';
    const value = this.redact(err ? err.message : typeof cause === 'string' ? cause : 'a non-Error value was thrown');
    const frames = stackFrames(err?.stack).map((f) => ({
      ...f,
      ...(f.function !== undefined ? { function: this.redact(f.function) } : {}),
      ...(f.filename !== undefined ? { filename: this.redact(f.filename) } : {}),
    }));
    const tags: Record<string, string> = { mechanism: scope.mechanism };
    if (scope.requestId) tags.request_id = tag(scope.requestId);
    if (scope.route) tags['http.route'] = tag(scope.route);
    if (scope.method) tags['http.method'] = tag(scope.method);
    if (scope.job) tags.job = tag(scope.job);
    const transaction = scope.route ? `${scope.method ?? ''} ${scope.route}`.trim() : scope.job ? `job ${scope.job}` : undefined;
    return {
      event_id: eventId,
      timestamp: Date.now() / 1000,
      platform: 'node',
      level: scope.level ?? 'error',
      logger: 'svc',
      release: this.options.release,
      environment: this.options.environment,
      ...(transaction ? { transaction: tag(transaction) } : {}),
      ...(scope.method ? { request: { method: scope.method } } : {}),
      tags,
      exception: {
        values: [
          {
            type,
            value,
            ...(frames.length > 0 ? { stacktrace: { frames } } : {}),
            mechanism: { type: scope.mechanism, handled: false },
          },
        ],
      },
      contexts: { runtime: { name: 'bun', version: Bun.version } },
      sdk: { name: 'svc.errortrack', version: this.options.release.replace(/^svc@/, '') },
    };
  }

  /** The envelope text for `e` (header, item header, event). */
  envelope(e: unknown, scope: ErrorScope): { eventId: string; body: string; fingerprint: string } {
    const eventId = hex32();
    const event = this.event(e, scope, eventId);
    const payload = JSON.stringify(event);
    const header = JSON.stringify({ event_id: eventId, sent_at: new Date().toISOString() });
    const item = JSON.stringify({ type: 'event', length: Buffer.byteLength(payload) });
    const ex = (event.exception as { values: { type: string; value: string }[] }).values[0]!;
    const fingerprint = [scope.mechanism, scope.route ?? scope.job ?? '', ex.type, ex.value].join('\u0000');
    return { eventId, body: `${header}\n${item}\n${payload}\n`, fingerprint };
  }

  /** Queues `e` for sending; returns at once. */
  capture(e: unknown, scope: ErrorScope): void {
    try {
      const now = Date.now();
      if (now < this.pausedUntil) return this.drop('rate limited by the tracker');
      if (this.inFlight.size >= MAX_IN_FLIGHT) return this.drop('too many events in flight');
      const { body, fingerprint } = this.envelope(e, scope);
      const last = this.lastSent.get(fingerprint);
      if (last !== undefined && now - last < SAME_ERROR_INTERVAL_MS) return;
      if (this.lastSent.size > 1000) this.lastSent.clear();
      this.lastSent.set(fingerprint, now);
      const p = this.send(body).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    } catch (err) {
      // Reporting must never turn one failure into two.
      this.warn(`building an error event failed: ${(err as Error)?.name ?? 'error'}`);
    }
  }

  /** Waits for envelopes in flight, at most `timeoutMs`. */
  async flush(timeoutMs = 2000): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  private async send(body: string): Promise<void> {
    const { dsn, release } = this.options;
    this.sent++;
    try {
      // The tracker is named by the operator's environment, like the database: plain fetch, no
      // redirects, one deadline; see docs/spec-deviations.md for why not the outbound guard.
      const res = await fetch(dsn.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-sentry-envelope',
          'x-sentry-auth': `Sentry sentry_version=7, sentry_client=${release.replace('@', '/')}, sentry_key=${dsn.publicKey}`,
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
      void res.body?.cancel().catch(() => {});
      if (res.status === 429) {
        const after = Number(res.headers.get('retry-after') ?? (res.headers.get('x-sentry-rate-limits') ?? '').split(':')[0]);
        this.pausedUntil = Date.now() + (Number.isFinite(after) && after > 0 ? Math.min(after, 3600) : 60) * 1000;
        this.warn('the error tracker asked svc to slow down (429); events are dropped meanwhile');
      } else if (res.status < 200 || res.status > 299) {
        this.warn(`the error tracker answered ${res.status}`);
      }
    } catch (e) {
      const code = (e as { code?: unknown; name?: unknown })?.code ?? (e as { name?: unknown })?.name;
      this.warn(`sending an error event failed (${typeof code === 'string' ? code.slice(0, 64) : 'network'})`);
    }
  }

  private drop(why: string): void {
    this.dropped++;
    this.warn(`an error event was dropped: ${why}`);
  }

  private warn(msg: string): void {
    const now = Date.now();
    if (now - this.lastWarn < WARN_INTERVAL_MS) return;
    this.lastWarn = now;
    log.warn({ dropped_total: this.dropped }, msg);
  }
}
