// Optional integrations, off until configured (spec: Health and monitoring):
// OpenTelemetry trace export over OTLP/HTTP (SVC_OTEL_EXPORTER_OTLP_ENDPOINT,
// traces only) and error tracking to a Sentry-format DSN (SVC_ERRORTRACK_DSN,
// events redacted before sending).
//
// This file is all an unconfigured svc loads: each hook below is one branch on
// a module variable that stays null. The implementations (and the OpenTelemetry
// libraries) are reached only through import() in startTelemetry, when their
// setting is set. Measured on dist/svc built with and without the OpenTelemetry
// SDK compiled in: while unconfigured, no idle RSS difference beyond noise
// (docs/operations.md). State is per process: `svc serve --workers N` starts
// one per worker process.
import type { Config } from '../config/load.ts';
import { isSecretSetting } from '../config/mask.ts';
import { SETTING_NAMES } from '../config/settings.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { VERSION } from '../version.ts';
import type { ErrorScope, ErrorTracker } from './errortrack.ts';

const log = logger('telemetry');

export interface AgentUpload {
  transport: 'longpoll' | 'ws';
  agentId: string;
  projectId: string;
  /** The upload's request id; for WebSocket frames, the upgrade request's. */
  requestId: string;
  frames: number;
  frameType?: string;
}

export interface UploadSpan {
  /** Ends the span, with attributes describing the outcome. */
  end(outcome?: Record<string, string | number | boolean>): void;
  /** Marks the span failed (end() still ends it). */
  fail(): void;
}

/** What src/telemetry/tracing.ts provides. */
export interface Tracing {
  requestStarted(request: Request, requestId: string): void;
  requestFinished(request: Request, route: string, status: number): void;
  agentUpload(request: Request | null, upload: AgentUpload): UploadSpan;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let tracing: Tracing | null = null;
let tracker: ErrorTracker | null = null;
let handlersInstalled = false;

// --- hooks (one branch each while unconfigured) ---------------------------------

export function traceRequestStart(request: Request, requestId: string): void {
  if (tracing !== null) tracing.requestStarted(request, requestId);
}

export function traceRequestEnd(request: Request, route: string, status: number): void {
  if (tracing !== null) tracing.requestFinished(request, route, status);
}

/** A span for one agent upload, or null when tracing is off. */
export function traceAgentUpload(request: Request | null, upload: AgentUpload): UploadSpan | null {
  return tracing !== null ? tracing.agentUpload(request, upload) : null;
}

/** Sends an unhandled error to the error tracker, when one is configured. Never throws. */
export function reportError(error: unknown, scope: ErrorScope): void {
  if (tracker !== null) tracker.capture(error, scope);
}

export const tracingEnabled = (): boolean => tracing !== null;
export const errorTrackingEnabled = (): boolean => tracker !== null;

// --- start and stop ------------------------------------------------------------------

export interface TelemetryOptions {
  /** Report uncaught exceptions and unhandled rejections, then exit 1 as Bun would (`svc serve`). */
  processHandlers?: boolean;
  /** Milliseconds between span batch exports (tests shorten it). */
  traceExportDelayMs?: number;
  env?: Record<string, string | undefined>;
}

/** Every configured secret value (masked settings), for redaction. */
function secretValues(config: Config): string[] {
  return SETTING_NAMES.filter(isSecretSetting).flatMap((name) => {
    const v = config[name] as unknown;
    return Array.isArray(v) ? v.map(String) : typeof v === 'string' && v !== '' ? [v] : [];
  });
}

/** Starts what is configured; a no-op (no import) when neither setting is set. */
export async function startTelemetry(config: Config, options: TelemetryOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  if (config.SVC_OTEL_EXPORTER_OTLP_ENDPOINT !== '' && tracing === null) {
    const { createTracing, parseHeaders } = await import('./tracing.ts');
    tracing = createTracing({
      endpoint: config.SVC_OTEL_EXPORTER_OTLP_ENDPOINT,
      headers: parseHeaders(config.SVC_OTEL_EXPORTER_OTLP_HEADERS),
      sampleRatio: config.SVC_OTEL_TRACES_SAMPLE_RATIO,
      serviceName: env.OTEL_SERVICE_NAME?.trim() || 'svc',
      version: VERSION,
      environment: config.SVC_ENVIRONMENT,
      scheduledDelayMs: options.traceExportDelayMs,
    });
    log.info({ sample_ratio: config.SVC_OTEL_TRACES_SAMPLE_RATIO }, 'trace export over OTLP/HTTP on');
  }
  if (config.SVC_ERRORTRACK_DSN !== '' && tracker === null) {
    const { ErrorTracker, parseDsn } = await import('./errortrack.ts');
    const dsn = parseDsn(config.SVC_ERRORTRACK_DSN);
    if (!dsn) {
      // The setting's pattern admits only DSN-shaped values; this is the belt to those braces.
      log.error({}, 'SVC_ERRORTRACK_DSN is not a usable DSN; error tracking stays off');
    } else {
      tracker = new ErrorTracker({ dsn, release: `svc@${VERSION}`, environment: config.SVC_ENVIRONMENT, secrets: secretValues(config) });
      log.info({}, 'error tracking on');
    }
  }
  if (tracker !== null && options.processHandlers && !handlersInstalled) {
    handlersInstalled = true;
    process.on('uncaughtException', (e) => void die(e, 'uncaught_exception'));
    process.on('unhandledRejection', (e) => void die(e, 'unhandled_rejection'));
  }
}

/** Flushes and stops both integrations (shutdown), at most `timeoutMs`. */
export async function stopTelemetry(timeoutMs = 5000): Promise<void> {
  const t = tracing;
  const e = tracker;
  tracing = null;
  tracker = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const work = Promise.allSettled([t?.shutdown(), e?.flush(timeoutMs)]);
  await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
  clearTimeout(timer);
}

/** Waits until what was captured so far has been sent (tests, fatal exits). */
export async function flushTelemetry(timeoutMs = 2000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const work = Promise.allSettled([tracing?.flush(), tracker?.flush(timeoutMs)]);
  await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
  clearTimeout(timer);
}

let dying = false;

/** With a handler installed Bun no longer exits on its own: report, flush (2 s at most), then exit 1 as it would have. */
async function die(error: unknown, mechanism: 'uncaught_exception' | 'unhandled_rejection'): Promise<void> {
  if (dying) return;
  dying = true;
  const what = mechanism === 'uncaught_exception' ? 'uncaught exception' : 'unhandled promise rejection';
  log.fatal({ err: describeError(error) }, what);
  process.stderr.write(`svc: ${what}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  reportError(error, { mechanism, level: 'fatal' });
  await flushTelemetry(2000);
  process.exit(1);
}
