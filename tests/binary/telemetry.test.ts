// The optional integrations in the compiled binary: `dist/svc serve` with
// SVC_OTEL_EXPORTER_OTLP_ENDPOINT exports real OTLP/HTTP traces to a receiver
// on loopback (the OpenTelemetry SDK bundled by `bun build --compile`, loaded
// on demand), flushes the last spans at shutdown, and sends nothing when the
// setting is empty, even with the standard OTEL_ variables set. The DSN and
// the exporter headers are masked by `svc config show`.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cleanEnv, eventually, runSvc, startSvc } from '../helpers/binary.ts';
import { startTelemetryReceiver, type TelemetryReceiver } from '../helpers/telemetry-receiver.ts';

let rx: TelemetryReceiver;

beforeAll(() => {
  rx = startTelemetryReceiver();
});
afterAll(() => rx.stop());

describe('dist/svc with telemetry', () => {
  test('serve exports spans of its requests over OTLP/HTTP, and the rest at shutdown', async () => {
    const svc = await startSvc(
      cleanEnv({
        SVC_OTEL_EXPORTER_OTLP_ENDPOINT: `${rx.url}/`,
        SVC_OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token',
        OTEL_SERVICE_NAME: 'svc-binary-test',
      }),
      ['--host', '127.0.0.1'],
    );
    try {
      const res = await fetch(`${svc.url}/api/v1/health`, { headers: { 'x-request-id': 'bin-req-1' } });
      expect(res.status).toBe(200);
      // The batch processor exports on its own (every 5 s).
      await eventually(() => rx.spans().some((s) => s.attributes['svc.request_id'] === 'bin-req-1'), 15_000, 'the first span');
      const first = rx.spans().find((s) => s.attributes['svc.request_id'] === 'bin-req-1')!;
      expect(first.name).toBe('GET /api/v1/health');
      expect(first.attributes).toMatchObject({ 'http.route': '/api/v1/health', 'http.response.status_code': 200 });
      expect(first.resource['service.name']).toBe('svc-binary-test');
      expect(rx.traceHeaders[0]!.authorization).toBe('Bearer collector-token');

      expect((await fetch(`${svc.url}/api/v1/projects/abc`, { headers: { 'x-request-id': 'bin-req-2' } })).status).toBe(401);
    } finally {
      expect(await svc.stop()).toBe(0);
    }
    // Still queued at SIGTERM: flushed by the shutdown hook.
    const last = rx.spans().find((s) => s.attributes['svc.request_id'] === 'bin-req-2');
    expect(last?.name).toBe('GET /api/v1/projects/:slug');
  }, 30_000);

  test('with the settings empty, serve sends nothing (standard OTEL_ variables alone do not turn tracing on)', async () => {
    const before = rx.requests.length;
    const svc = await startSvc(cleanEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${rx.url}/v1/traces` }), ['--host', '127.0.0.1']);
    try {
      for (let i = 0; i < 5; i++) expect((await fetch(`${svc.url}/api/v1/health`)).status).toBe(200);
    } finally {
      expect(await svc.stop()).toBe(0);
    }
    expect(rx.requests.slice(before)).toEqual([]);
  }, 30_000);

  test('config show masks the DSN and the exporter headers', async () => {
    const env = cleanEnv({
      SVC_ERRORTRACK_DSN: 'https://dsn-public-key-123@errors.example.com/42',
      SVC_OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=otlp-key-456',
      SVC_OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com:4318',
    });
    const shown = await runSvc(['config', 'show'], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('SVC_ERRORTRACK_DSN');
    expect(shown.stdout).not.toContain('dsn-public-key-123');
    expect(shown.stdout).not.toContain('otlp-key-456');
    expect(shown.stdout).toContain('https://otel.example.com:4318');
    const bad = await runSvc(['config', 'show'], { ...env, SVC_OTEL_EXPORTER_OTLP_ENDPOINT: 'https://user:pw@otel.example.com' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('SVC_OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(bad.stderr + bad.stdout).not.toContain('dsn-public-key-123');
  });
});
