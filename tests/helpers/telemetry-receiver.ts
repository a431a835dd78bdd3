// A real OTLP/HTTP trace receiver and a Sentry-style envelope receiver in one
// loopback server: POST /v1/traces (OTLP JSON, as svc's exporter sends it) and
// POST /api/<project>/envelope/ (Sentry envelopes). Everything else is 404.
// Requests are kept whole so tests can look for what must not be there.

export interface SeenSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  status: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
}

export interface SeenEnvelope {
  path: string;
  headers: Record<string, string>;
  /** The raw body as sent. */
  raw: string;
  header: any;
  item: any;
  event: any;
}

export interface TelemetryReceiver {
  url: string;
  port: number;
  /** Every request body that reached /v1/traces, raw. */
  traceBodies: string[];
  traceHeaders: Record<string, string>[];
  envelopes: SeenEnvelope[];
  /** Any request at all (paths), to prove nothing was sent. */
  requests: string[];
  spans(): SeenSpan[];
  stop(): void;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const value = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ''));
const attrs = (list: { key: string; value: AnyValue }[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map((a) => [a.key, value(a.value)]));

export function startTelemetryReceiver(): TelemetryReceiver {
  const traceBodies: string[] = [];
  const traceHeaders: Record<string, string>[] = [];
  const envelopes: SeenEnvelope[] = [];
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      requests.push(`${req.method} ${path}`);
      const body = await req.text();
      const headers = Object.fromEntries(req.headers.entries());
      if (req.method === 'POST' && path === '/v1/traces') {
        traceBodies.push(body);
        traceHeaders.push(headers);
        return Response.json({ partialSuccess: {} });
      }
      if (req.method === 'POST' && /^\/api\/[^/]+\/envelope\/$/.test(path)) {
        const [header, item, event] = body.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
        envelopes.push({ path, headers, raw: body, header, item, event });
        return Response.json({ id: header?.event_id });
      }
      return new Response('not found', { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    traceBodies,
    traceHeaders,
    envelopes,
    requests,
    spans() {
      return traceBodies.flatMap((b) =>
        (JSON.parse(b).resourceSpans ?? []).flatMap((rs: any) =>
          (rs.scopeSpans ?? []).flatMap((ss: any) =>
            (ss.spans ?? []).map(
              (s: any): SeenSpan => ({
                name: s.name,
                kind: s.kind,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                status: s.status?.code ?? 0,
                attributes: attrs(s.attributes),
                resource: attrs(rs.resource?.attributes),
              }),
            ),
          ),
        ),
      );
    },
    stop: () => void server.stop(true),
  };
}
