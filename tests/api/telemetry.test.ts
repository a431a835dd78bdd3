// Optional integrations against real receivers on loopback: the OTLP/HTTP
// exporter of the OpenTelemetry SDK posting to a collector stand-in, and the
// error tracker posting Sentry envelopes. Nothing is mocked on svc's side: the
// in-process service, a long-poll and a WebSocket agent, a route that throws,
// a failing background job, and child processes for what needs a fresh one.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { join } from 'node:path';
import { every } from '../../src/server/schedule.ts';
import { flushTelemetry, startTelemetry, stopTelemetry } from '../../src/telemetry/index.ts';
import { VERSION } from '../../src/version.ts';
import { insertProject, liveService, mintTestAgent, type LiveService } from '../helpers/agents.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { startTelemetryReceiver, type SeenEnvelope, type SeenSpan, type TelemetryReceiver } from '../helpers/telemetry-receiver.ts';
import { taskEvent, type TestAgent } from '../helpers/test-agent.ts';

const CHILD = join(import.meta.dir, '../helpers/telemetry-child.ts');

let rx: TelemetryReceiver;
let svc: LiveService;
let boom: TestService;
let agent: TestAgent;
let dsn: string;

async function waitFor<T>(what: string, find: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    await flushTelemetry();
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}
const span = (what: string, match: (s: SeenSpan) => boolean) => waitFor(what, () => rx.spans().find(match));
const envelope = (what: string, match: (e: SeenEnvelope) => boolean) => waitFor(what, () => rx.envelopes.find(match));

beforeAll(async () => {
  rx = startTelemetryReceiver();
  dsn = `http://svc-test-public-key@127.0.0.1:${rx.port}/42`;
  const env = {
    SVC_OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    SVC_OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=key%20one,x-tenant=t1',
    SVC_ERRORTRACK_DSN: dsn,
  };
  svc = await liveService({ env });
  await startTelemetry(svc.ctx.config, { traceExportDelayMs: 50 });
  // A service whose one route throws, to force the 500 path of the app's error handler.
  boom = await testService({
    env,
    modules: [
      () =>
        new Elysia().post('/api/v1/boom/:id', ({ request, body }) => {
          // A careless error: it quotes the URL, credentials and the body it was given.
          throw new Error(
            `could not handle ${request.url} body ${JSON.stringify(body)} auth=${request.headers.get('authorization')} cookie: ${request.headers.get('cookie')}`,
          );
        }),
    ],
  });
  const project = await insertProject(svc.ctx.db);
  agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  expect((await agent.probe()).status).toBe(200);
});

afterAll(async () => {
  await stopTelemetry();
  await boom?.close();
  await svc?.close();
  rx?.stop();
});

describe('traces (OTLP/HTTP)', () => {
  test('a request becomes a SERVER span named by method and route pattern, with the request id and status', async () => {
    const res = await fetch(`${svc.baseUrl}/api/v1/health`, { headers: { 'x-request-id': 'req-health-1' } });
    expect(res.status).toBe(200);
    const s = await span('the health span', (x) => x.attributes['svc.request_id'] === 'req-health-1');
    expect(s.name).toBe('GET /api/v1/health');
    expect(s.kind).toBe(2); // SERVER in OTLP JSON
    expect(s.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/api/v1/health', 'http.response.status_code': 200 });
    expect(s.resource).toMatchObject({ 'service.name': 'svc', 'service.version': VERSION, 'deployment.environment.name': 'production' });
    // The exporter's headers came from SVC_OTEL_EXPORTER_OTLP_HEADERS, values URL-decoded.
    expect(rx.traceHeaders.at(-1)).toMatchObject({ 'x-collector-key': 'key one', 'x-tenant': 't1', 'content-type': 'application/json' });
  });

  test('the name is the route pattern, never the path; a caller traceparent is the parent', async () => {
    const traceId = 'a'.repeat(31) + '1';
    const parentId = 'b'.repeat(15) + '2';
    const res = await fetch(`${svc.baseUrl}/api/v1/projects/secret-project-slug?token=qs-token-1`, {
      headers: { 'x-request-id': 'req-pattern-1', traceparent: `00-${traceId}-${parentId}-01` },
    });
    expect(res.status).toBe(401);
    const s = await span('the project span', (x) => x.attributes['svc.request_id'] === 'req-pattern-1');
    expect(s.name).toBe('GET /api/v1/projects/:slug');
    expect(s.traceId).toBe(traceId);
    expect(s.parentSpanId).toBe(parentId);
    expect(s.attributes['http.response.status_code']).toBe(401);
    expect(rx.traceBodies.join('\n')).not.toContain('secret-project-slug');
    expect(rx.traceBodies.join('\n')).not.toContain('qs-token-1');
  });

  test('answers of the error handler and refusals before routing end their span with the status sent', async () => {
    const big = 'x'.repeat(svc.ctx.config.SVC_MAX_PAYLOAD_SIZE_BYTES + 1);
    const cases: [string, string, RequestInit, number, string][] = [
      ['req-404-1', '/api/v1/no-such-thing', {}, 404, 'GET unmatched'],
      ['req-405-1', '/api/v1/health', { method: 'DELETE' }, 405, 'DELETE unmatched'],
      ['req-host-1', '/api/v1/health', { headers: { host: 'attacker.example' } }, 400, 'GET unmatched'],
      ['req-413-1', '/api/v1/auth/login', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } }, 413, 'POST unmatched'],
    ];
    for (const [id, path, init, status, name] of cases) {
      const res = await fetch(`${svc.baseUrl}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-request-id': id } });
      expect({ id, status: res.status }).toEqual({ id, status });
      const s = await span(`the ${id} span`, (x) => x.attributes['svc.request_id'] === id);
      expect({ id, name: s.name, status: s.attributes['http.response.status_code'], route: s.attributes['http.route'] }).toEqual({ id, name, status, route: 'unmatched' });
    }
  });

  test('a long-poll upload is a child span of its request, with agent, project and request id', async () => {
    const up = await agent.upload([agent.eventBatch([taskEvent({ task_id: 'traced-1' })]), agent.heartbeat()], { 'x-request-id': 'req-upload-1' });
    expect(up.status).toBe(200);
    expect(up.body.accepted).toBe(2);
    const upload = await span('the upload span', (x) => x.name === 'agent.upload' && x.attributes['svc.request_id'] === 'req-upload-1');
    expect(upload.attributes).toMatchObject({
      'svc.agent.transport': 'longpoll',
      'svc.agent_id': agent.agentId,
      'svc.project_id': agent.projectId,
      'svc.frames': 2,
      'svc.frames.accepted': 2,
      'svc.frames.rejected': 0,
    });
    const request = await span('the upload request span', (x) => x.name === 'POST /api/v1/agent/events' && x.attributes['svc.request_id'] === 'req-upload-1');
    expect(upload.traceId).toBe(request.traceId);
    expect(upload.parentSpanId).toBe(request.spanId);
    // The bearer token and the frames' content never reach the collector.
    const all = rx.traceBodies.join('\n');
    expect(all).not.toContain(agent.token);
    expect(all).not.toContain('traced-1');
  });

  test('a WebSocket event frame is a span with the agent, project and the upgrade request id', async () => {
    const ws = await agent.connect({ headers: { 'x-request-id': 'req-ws-1' } });
    try {
      ws.send('event_batch', { events: [taskEvent({ task_id: 'traced-ws-1' })] });
      const ack = await ws.nextSigned();
      expect(ack.type).toBe('event_batch_ack');
      const s = await span('the ws frame span', (x) => x.name === 'agent.upload' && x.attributes['svc.agent.transport'] === 'ws');
      expect(s.attributes).toMatchObject({
        'svc.agent_id': agent.agentId,
        'svc.project_id': agent.projectId,
        'svc.request_id': 'req-ws-1',
        'svc.frame.type': 'event_batch',
        'svc.frame.outcome': 'durable',
      });
      expect(s.kind).toBe(2);
    } finally {
      ws.close();
    }
  });
});

describe('error tracking (Sentry envelopes)', () => {
  test('a forced 500 sends the exception, redacted, with route pattern, request id, release and environment', async () => {
    const secrets = ['qs-secret-123', 'bearer-secret-456', 'cookie-secret-789', 'pw-secret-000'];
    const res = await boom.call('POST', '/api/v1/boom/7?token=qs-secret-123', {
      headers: { 'x-request-id': 'req-boom-1', authorization: 'Bearer bearer-secret-456', cookie: 'svc_session=cookie-secret-789' },
      body: { password: 'pw-secret-000', note: 'visible-note' },
    });
    expect(res.status).toBe(500);
    expect(res.body.error).toBe('internal_error');
    const e = await envelope('the 500 envelope', (x) => x.event?.tags?.request_id === 'req-boom-1');
    expect(e.path).toBe('/api/42/envelope/');
    expect(e.headers['content-type']).toBe('application/x-sentry-envelope');
    expect(e.headers['x-sentry-auth']).toContain('sentry_key=svc-test-public-key');
    expect(e.item).toMatchObject({ type: 'event' });
    expect(e.header.event_id).toBe(e.event.event_id);
    const ex = e.event.exception.values[0];
    expect(ex.type).toBe('Error');
    expect(ex.value).toContain('could not handle');
    expect(ex.value).toContain('visible-note');
    expect(ex.mechanism).toEqual({ type: 'http', handled: false });
    expect(ex.stacktrace.frames.length).toBeGreaterThan(0);
    expect(e.event).toMatchObject({
      level: 'error',
      release: `svc@${VERSION}`,
      environment: 'production',
      transaction: 'POST /api/v1/boom/:id',
      request: { method: 'POST' },
      tags: { request_id: 'req-boom-1', 'http.route': '/api/v1/boom/:id', 'http.method': 'POST', mechanism: 'http' },
    });
    // Only what is needed: no URL, headers, cookies or body of the request.
    expect(Object.keys(e.event.request)).toEqual(['method']);
    for (const s of secrets) expect(e.raw).not.toContain(s);
    // Nothing but the (redacted) message quotes the path: svc itself names only the route pattern.
    expect(e.raw.replace(ex.value.replace(/[\\"]/g, (c: string) => `\\${c}`), '')).not.toContain('/api/v1/boom/7');
    // The same request's span is an error span.
    await waitFor('the 500 span', () => rx.spans().find((x) => x.attributes['svc.request_id'] === 'req-boom-1'));
    const s = rx.spans().find((x) => x.attributes['svc.request_id'] === 'req-boom-1')!;
    expect(s.name).toBe('POST /api/v1/boom/:id');
    expect(s.status).toBe(2); // ERROR
    expect(s.attributes['error.type']).toBe('500');
  });

  test('a failing background job is reported with its name; configured secrets are redacted', async () => {
    const secret = svc.ctx.config.SVC_METRICS_AUTH_TOKEN;
    let runs = 0;
    every(svc.ctx, 'telemetry-test-job', 60_000, async () => {
      runs++;
      throw new Error(`job broke, password=job-secret-111 metrics token ${secret}`);
    }, 0);
    const e = await envelope('the job envelope', (x) => x.event?.tags?.job === 'telemetry-test-job');
    expect(runs).toBe(1);
    expect(e.event.tags.mechanism).toBe('background');
    expect(e.event.transaction).toBe('job telemetry-test-job');
    expect(e.event.exception.values[0].value).toContain('job broke');
    expect(e.raw).not.toContain('job-secret-111');
    expect(e.raw).not.toContain(secret);
  });

  for (const mode of ['uncaught', 'rejection'] as const) {
    test(`an ${mode === 'uncaught' ? 'uncaught exception' : 'unhandled rejection'} is sent as fatal, then the process exits 1`, async () => {
      const before = rx.envelopes.length;
      const child = Bun.spawn([process.execPath, CHILD, mode, dsn], { stdout: 'pipe', stderr: 'pipe' });
      const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect(code).toBe(1);
      expect(err).toContain(mode === 'uncaught' ? 'svc: uncaught exception' : 'svc: unhandled promise rejection');
      const ready = JSON.parse(out.split('\n').find((l) => l.includes('"ready":true'))!);
      // Error tracking alone loads no OpenTelemetry module.
      expect(ready.loaded.filter((m: string) => m.includes('@opentelemetry'))).toEqual([]);
      const e = rx.envelopes.slice(before).find((x) => x.event?.tags?.mechanism === (mode === 'uncaught' ? 'uncaught_exception' : 'unhandled_rejection'));
      expect(e).toBeDefined();
      expect(e!.event.level).toBe('fatal');
      expect(e!.event.exception.values[0].type).toBe(mode === 'uncaught' ? 'TypeError' : 'RangeError');
      expect(e!.event.exception.values[0].value).toContain('exploded with');
      for (const s of [ready.secret, 'child-token-9876', 'child-cookie-1234']) expect(e!.raw).not.toContain(s);
    });
  }
});

test('with the settings empty nothing is sent and no telemetry library is loaded (standard OTEL_/SENTRY_ variables do not turn it on)', async () => {
  const before = rx.requests.length;
  const child = Bun.spawn([process.execPath, CHILD, 'disabled'], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${rx.url}/v1/traces`, SENTRY_DSN: dsn },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect(code, err).toBe(0);
  const result = JSON.parse(out.trim().split('\n').at(-1)!);
  expect(result.statuses).toEqual([200, 200, 404, 401, 401]);
  expect(result).toMatchObject({ loaded: [], tracing: false, errors: false });
  await Bun.sleep(300);
  expect(rx.requests.slice(before)).toEqual([]);
});
