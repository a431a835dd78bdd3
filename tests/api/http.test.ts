// The HTTP layer every area stands on: error envelope, request ids, Host
// allow-list, body limits, health, readiness, OpenAPI, metrics gate.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { healthRoutes } from '../../src/health/routes.ts';
import { openapiDocument } from '../../src/http/openapi.ts';
import { Body } from '../../src/http/schemas.ts';
import { metricsRoutes } from '../../src/metrics/routes.ts';
import { testService, type TestService } from '../helpers/app.ts';

// A route with a body schema, as areas declare them, to exercise parsing and
// validation through the real app assembly.
const echo = () =>
  new Elysia()
    .post('/api/v1/test-echo', ({ body }) => ({ got: body }), {
      body: Body({ name: Type.String({ minLength: 1, maxLength: 5 }), count: Type.Integer({ minimum: 1, maximum: 10 }) }),
    })
    .get('/api/v1/test-echo/:id', ({ params }) => ({ id: params.id }));

const expectEnvelope = (body: any, error: string) => {
  expect(body.error).toBe(error);
  expect(typeof body.message).toBe('string');
  expect(typeof body.details).toBe('object');
  expect(typeof body.request_id).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/); // no stack trace
};

let svc: TestService;
beforeAll(async () => {
  svc = await testService({ modules: [healthRoutes, metricsRoutes, echo] });
});
afterAll(() => svc.close());

describe('error envelope', () => {
  test('unknown route: 404 not_found', async () => {
    const r = await svc.call('GET', '/api/v1/no-such-thing');
    expect(r.status).toBe(404);
    expectEnvelope(r.body, 'not_found');
  });

  test('wrong method: 405 with Allow', async () => {
    const r = await svc.call('DELETE', '/api/v1/test-echo');
    expect(r.status).toBe(405);
    expectEnvelope(r.body, 'method_not_allowed');
    expect(r.headers.get('allow')).toBe('POST');
  });

  test('malformed JSON: 400 invalid_json', async () => {
    const r = await svc.call('POST', '/api/v1/test-echo', { raw: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expectEnvelope(r.body, 'invalid_json');
  });

  test('validation failure: 422 naming the fields, never echoing values', async () => {
    const r = await svc.call('POST', '/api/v1/test-echo', { body: { name: 'much-too-long-secret-value', count: '7' } });
    expect(r.status).toBe(422);
    expectEnvelope(r.body, 'validation_failed');
    const paths = r.body.details.fields.map((f: any) => f.path).sort();
    expect(paths).toEqual(['/count', '/name']);
    expect(r.text).not.toContain('much-too-long-secret-value');
  });

  test('wrong types are refused, not coerced', async () => {
    const r = await svc.call('POST', '/api/v1/test-echo', { body: { name: 'ok', count: '3' } });
    expect(r.status).toBe(422);
  });

  test('a valid body passes; an unknown field is a 422 naming it', async () => {
    const ok = await svc.call('POST', '/api/v1/test-echo', { body: { name: 'ok', count: 3 } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ got: { name: 'ok', count: 3 } });
    const r = await svc.call('POST', '/api/v1/test-echo', { body: { name: 'ok', count: 3, extra: true } });
    expect(r.status).toBe(422);
    expect(r.body.details.fields).toEqual([{ location: 'body', path: '/extra', message: 'unexpected property' }]);
  });

  test('non-JSON content type: 415', async () => {
    const r = await svc.call('POST', '/api/v1/test-echo', { raw: 'name=ok&count=3', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(r.status).toBe(415);
    expectEnvelope(r.body, 'unsupported_media_type');
  });

  test('oversize body by Content-Length: 413 before the handler', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(70_000), count: 1 });
    const r = await svc.call('POST', '/api/v1/test-echo', { raw: big, headers: { 'content-type': 'application/json', 'content-length': String(big.length) } });
    expect(r.status).toBe(413);
    expectEnvelope(r.body, 'payload_too_large');
  });

  test('oversize chunked body without Content-Length: 413', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(16_384));
    let sent = 0;
    const stream = new ReadableStream({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const r = await svc.call('POST', '/api/v1/test-echo', { raw: stream, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
    expectEnvelope(r.body, 'payload_too_large');
  });
});

describe('request ids', () => {
  test('a plain X-Request-Id is echoed in the header and the envelope', async () => {
    const r = await svc.call('GET', '/api/v1/missing', { headers: { 'x-request-id': 'trace-123' } });
    expect(r.headers.get('x-request-id')).toBe('trace-123');
    expect(r.body.request_id).toBe('trace-123');
  });

  test('an unsafe X-Request-Id is replaced', async () => {
    const r = await svc.call('GET', '/api/v1/health', { headers: { 'x-request-id': 'bad id <script>' } });
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('Host allow-list', () => {
  test('a foreign Host is refused before any route runs', async () => {
    for (const path of ['/api/v1/health', '/api/v1/test-echo', '/anything']) {
      const r = await svc.call('GET', path, { headers: { host: 'attacker.example' } });
      expect(r.status).toBe(400);
      expectEnvelope(r.body, 'host_not_allowed');
      expect(r.text).not.toContain('attacker.example');
    }
  });

  test('loopback names with ports are accepted', async () => {
    for (const host of ['localhost:7700', '127.0.0.1', '[::1]:7700']) {
      expect((await svc.call('GET', '/api/v1/health', { headers: { host } })).status).toBe(200);
    }
  });
});

describe('health', () => {
  test('liveness answers exactly {"status":"ok"}', async () => {
    const r = await svc.call('GET', '/api/v1/health');
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"status":"ok"}');
  });

  test('readiness: 503 starting until startup finished, then 200', async () => {
    svc.ctx.lifecycle.ready = false;
    let r = await svc.call('GET', '/api/v1/health/ready');
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ status: 'unready', reason: 'starting' });
    // Other API routes are held back while starting.
    r = await svc.call('POST', '/api/v1/test-echo', { body: { name: 'a', count: 1 } });
    expect(r.status).toBe(503);
    expectEnvelope(r.body, 'starting');
    svc.ctx.lifecycle.ready = true;
    r = await svc.call('GET', '/api/v1/health/ready');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ready' });
  });

  test('readiness: 503 database when the database does not answer', async () => {
    const other = await testService({ modules: [healthRoutes] });
    await other.ctx.db.close();
    const r = await other.call('GET', '/api/v1/health/ready');
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ status: 'unready', reason: 'database' });
  });
});

describe('metrics', () => {
  test('/metrics needs the bearer token', async () => {
    expect((await svc.call('GET', '/metrics')).status).toBe(401);
    expect((await svc.call('GET', '/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const r = await svc.call('GET', '/metrics', { headers: { authorization: `Bearer ${svc.ctx.config.SVC_METRICS_AUTH_TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
  });

  test('request counts carry the route pattern and the status actually sent, refusals before routing included', async () => {
    const own = await testService({ modules: [healthRoutes, metricsRoutes, echo] });
    try {
      const big = JSON.stringify({ name: 'x'.repeat(70_000), count: 1 });
      const calls: [string, string, Parameters<TestService['call']>[2], number][] = [
        ['GET', '/api/v1/test-echo/41', {}, 200],
        ['GET', '/api/v1/test-echo/42', {}, 200],
        ['POST', '/api/v1/test-echo', { body: { name: 'much-too-long', count: 1 } }, 422],
        ['GET', '/api/v1/no-such-thing', {}, 404],
        ['DELETE', '/api/v1/test-echo', {}, 405],
        ['GET', '/api/v1/health', { headers: { host: 'attacker.example' } }, 400],
        ['POST', '/api/v1/test-echo', { raw: big, headers: { 'content-type': 'application/json', 'content-length': String(big.length) } }, 413],
      ];
      for (const [method, path, options, status] of calls) expect({ method, path, status: (await own.call(method, path, options)).status }).toEqual({ method, path, status });
      own.ctx.lifecycle.ready = false;
      expect((await own.call('POST', '/api/v1/test-echo', { body: { name: 'a', count: 1 } })).status).toBe(503);
      own.ctx.lifecycle.ready = true;

      const bearer = { authorization: `Bearer ${own.ctx.config.SVC_METRICS_AUTH_TOKEN}` };
      const counts = async () => {
        const text = (await own.call('GET', '/metrics', { headers: bearer })).text;
        return Object.fromEntries(
          [...text.matchAll(/^svc_http_requests_total\{method="(\w+)",route="([^"]+)",status="(\d+)"\} (\d+)$/gm)]
            .filter(([, , route]) => route !== '/metrics')
            .map(([, method, route, status, n]) => [`${method} ${route} ${status}`, Number(n)]),
        );
      };
      // Counted once the answer is sent (Elysia's onAfterResponse runs on a later tick).
      let seen = await counts();
      for (const end = Date.now() + 5000; Object.keys(seen).length < 7 && Date.now() < end; seen = await counts()) await Bun.sleep(20);
      expect(seen).toEqual({
        'GET /api/v1/test-echo/:id 200': 2,
        'POST /api/v1/test-echo 422': 1,
        'GET unmatched 404': 1,
        'DELETE unmatched 405': 1,
        'GET unmatched 400': 1,
        'POST unmatched 413': 1,
        'POST unmatched 503': 1,
      });
    } finally {
      await own.close();
    }
  });
});

describe('full service', () => {
  test('OpenAPI describes the routes', async () => {
    const full = await testService();
    try {
      const r = await full.call('GET', '/api/v1/openapi.json');
      expect(r.status).toBe(200);
      expect(r.body.openapi).toMatch(/^3\./);
      expect(Object.keys(r.body.paths)).toEqual(expect.arrayContaining(['/api/v1/health', '/api/v1/health/ready', '/metrics']));
      // Unknown non-API paths get the dashboard, API paths never do.
      const page = await full.call('GET', '/projects/demo/agents');
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect((await full.call('GET', '/api/v1/nope')).headers.get('content-type')).toContain('json');
    } finally {
      await full.close();
    }
  });

  test('every route is in the OpenAPI document; a route without a contract fails it rather than going missing', async () => {
    const full = await testService();
    try {
      const doc = (await full.call('GET', '/api/v1/openapi.json')).body;
      const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`));
      const routes = full.app.routes.map((r) => `${r.method} ${r.path.replace(/:([^/]+)/g, '{$1}')}`);
      expect(documented.sort()).toEqual(routes.sort());
    } finally {
      await full.close();
    }
    expect(() => openapiDocument(new Elysia().get('/api/v1/bare', () => 'bare').routes)).toThrow('GET /api/v1/bare');
  });
});
