// OpenTelemetry traces over OTLP/HTTP (JSON), with the OpenTelemetry SDK
// (@opentelemetry/sdk-trace) and its OTLP exporter. Loaded only by
// src/telemetry/index.ts, with import(), when SVC_OTEL_EXPORTER_OTLP_ENDPOINT
// is set: an unconfigured svc never evaluates this file or the libraries.
//
// Spans: one SERVER span per HTTP request (`<METHOD> <route pattern>`, the
// request id, the status), a child span per long-poll upload and a span per
// WebSocket frame from an agent (`agent.upload`, agent and project id). A
// request with a W3C `traceparent` header joins its caller's trace. Spans carry
// no path, query, header or body. Traces only: no OTel metrics or logs, no
// global provider, no context manager, no patched modules.
//
// The exporter sends with its own HTTP client (node:http in Bun), not the
// outbound guard: the collector is infrastructure named in the operator's
// environment (never through the API), and it is usually on loopback or the
// private network, which the guard refuses by design. docs/spec-deviations.md.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { logger } from '../lib/log.ts';
import type { AgentUpload, Tracing, UploadSpan } from './index.ts';

const log = logger('tracing');

export interface TracingOptions {
  endpoint: string;
  headers: Record<string, string>;
  sampleRatio: number;
  serviceName: string;
  version: string;
  environment: string;
  /** Milliseconds between batch exports (tests shorten it). */
  scheduledDelayMs?: number;
}

/** OTLP/HTTP appends the signal path to a base endpoint; a full traces URL is used as it is. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (!/\/v1\/traces\/?$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/+$/, '')}/v1/traces`;
  return u.href;
}

/** `a=1,b=x%20y` as OTEL_EXPORTER_OTLP_HEADERS reads it. */
export function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const name = part.slice(0, at).trim();
    let value = part.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // kept as written
    }
    if (/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) out[name] = value;
  }
  return out;
}

const headerGetter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

/** Logs failed exports, at most once a minute, without the URL or headers. */
function loggingExporter(inner: SpanExporter): SpanExporter {
  let lastWarn = 0;
  let failed = 0;
  return {
    export(spans: ReadableSpan[], done) {
      inner.export(spans, (result) => {
        if (result.code !== 0) {
          failed += spans.length;
          const now = Date.now();
          if (now - lastWarn > 60_000) {
            lastWarn = now;
            const code = (result.error as { code?: unknown } | undefined)?.code;
            log.warn({ spans_lost_total: failed, err: typeof code === 'string' ? code : result.error?.name }, 'trace export failed; spans dropped');
          }
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

export function createTracing(options: TracingOptions): Tracing {
  const exporter = new OTLPTraceExporter({
    url: tracesUrl(options.endpoint),
    headers: options.headers,
    timeoutMillis: 10_000,
    concurrencyLimit: 4,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': options.version,
      'deployment.environment.name': options.environment,
      'process.pid': process.pid,
    }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio) }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: loggingExporter(exporter),
        // Bounded: past 2048 waiting spans new ones are dropped rather than held.
        maxQueueSize: 2048,
        maxExportBatchSize: 512,
        scheduledDelayMillis: options.scheduledDelayMs ?? 5000,
      }),
    ],
  });
  const tracer = provider.getTracer('svc', options.version);
  const propagator = new W3CTraceContextPropagator();
  const requests = new WeakMap<Request, Span>();

  return {
    requestStarted(request, requestId) {
      const parent = request.headers.has('traceparent') ? propagator.extract(ROOT_CONTEXT, request.headers, headerGetter) : ROOT_CONTEXT;
      const span = tracer.startSpan(
        request.method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'svc.request_id': requestId } },
        parent,
      );
      requests.set(request, span);
    },

    requestFinished(request, route, status) {
      const span = requests.get(request);
      if (!span) return;
      requests.delete(request);
      span.updateName(`${request.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },

    agentUpload(request, upload: AgentUpload): UploadSpan {
      const parent = request ? requests.get(request) : undefined;
      const attributes: Attributes = {
        'svc.agent.transport': upload.transport,
        'svc.agent_id': upload.agentId,
        'svc.project_id': upload.projectId,
        'svc.request_id': upload.requestId,
        'svc.frames': upload.frames,
      };
      if (upload.frameType !== undefined) attributes['svc.frame.type'] = upload.frameType;
      const span = tracer.startSpan(
        'agent.upload',
        // A WebSocket frame arrives long after its upgrade request ended: it starts a trace of its own.
        { kind: parent ? SpanKind.INTERNAL : SpanKind.SERVER, attributes },
        parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
      );
      return {
        end(outcome) {
          if (outcome) span.setAttributes(outcome);
          span.end();
        },
        fail() {
          span.setStatus({ code: SpanStatusCode.ERROR });
        },
      };
    },

    async flush() {
      await provider.forceFlush();
    },

    async shutdown() {
      await provider.shutdown();
    },
  };
}
