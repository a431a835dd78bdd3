// The pure parts of the optional integrations: redaction, DSN and header
// parsing, the traces URL, and the event an error becomes.
import { describe, expect, test } from 'bun:test';
import { ErrorTracker, parseDsn } from '../../src/telemetry/errortrack.ts';
import { REDACTED, redactor, stackFrames } from '../../src/telemetry/redact.ts';
import { parseHeaders, tracesUrl } from '../../src/telemetry/tracing.ts';

describe('redaction', () => {
  const r = redactor(['minted-secret-value-0123456789']);
  const cases: [string, string[], string[]][] = [
    // input, must not contain, must contain
    ['GET https://hooks.example.com/x?token=abc123&b=2 failed', ['abc123', 'b=2'], ['https://hooks.example.com/x?']],
    ['request /api/v1/invite?code=zzz-123 failed', ['zzz-123'], ['/api/v1/invite?']],
    ['connect postgres://svc:hunter2@db:5432/svc refused', ['hunter2', 'svc:'], ['@db:5432/svc']],
    ['Authorization: Bearer abcdefghijkl', ['abcdefghijkl', 'Bearer'], ['Authorization: ']],
    ['sent with bearer abcdefghijkl0', ['abcdefghijkl0'], ['bearer ']],
    ['cookie: svc_session=abcdef; x=y', ['abcdef'], ['cookie: ']],
    ['body {"password":"hunter2","name":"kept"}', ['hunter2'], ['"name":"kept"']],
    ["password='hunter2' and pwd=hunter3;", ['hunter2', 'hunter3'], ['password=']],
    ['api_key: sk_live_abc123, x-api-key=foo', ['sk_live_abc123', 'foo'], ['api_key: ']],
    ['user bob@example.com not found', ['bob@example.com'], ['[email]']],
    ['leaked minted-secret-value-0123456789 here', ['minted-secret-value-0123456789'], ['leaked', 'here']],
    ['token 9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc', ['9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc'], []],
    ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl', ['eyJhbGciOiJIUzI1NiJ9'], ['jwt ']],
    ['-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----', ['MIIEv'], []],
  ];
  for (const [input, gone, kept] of cases) {
    test(input.split('\n')[0]!, () => {
      const out = r(input);
      for (const g of gone) expect(out).not.toContain(g);
      for (const k of kept) expect(out).toContain(k);
    });
  }

  test('ordinary messages pass unchanged', () => {
    for (const m of ['connect ECONNREFUSED 127.0.0.1:5432', "Cannot read properties of undefined (reading 'id')", 'SQLITE_BUSY: database is locked']) {
      expect(r(m)).toBe(m);
    }
  });

  test('long messages are cut', () => {
    expect(redactor([], 50)('x '.repeat(100)).length).toBeLessThanOrEqual(51);
  });

  test('stack frames: oldest first, message lines dropped', () => {
    const e = new Error('first line password=hunter2');
    const frames = stackFrames(e.stack);
    expect(frames.length).toBeGreaterThan(0);
    expect(JSON.stringify(frames)).not.toContain('hunter2');
    expect(frames.at(-1)!.filename).toContain('telemetry.test.ts');
    expect(stackFrames(undefined)).toEqual([]);
  });
});

describe('DSN', () => {
  test('the envelope endpoint and key of a DSN', () => {
    expect(parseDsn('https://abc123@o1.ingest.example.com/42')).toEqual({
      endpoint: 'https://o1.ingest.example.com/api/42/envelope/',
      publicKey: 'abc123',
      projectId: '42',
    });
    expect(parseDsn('http://key:legacy@errors.internal:9000/sub/path/7/')?.endpoint).toBe('http://errors.internal:9000/sub/path/api/7/envelope/');
  });
  test('what is not a DSN', () => {
    for (const bad of ['', 'not a url', 'https://errors.example.com/42', 'ftp://k@h/1', 'https://k@h/', 'https://k@h/1?x=1']) expect(parseDsn(bad)).toBeNull();
  });
});

describe('OTLP settings', () => {
  test('traces URL: the signal path is appended to a base endpoint', () => {
    expect(tracesUrl('http://127.0.0.1:4318')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(tracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('https://otlp.example.com/prefix')).toBe('https://otlp.example.com/prefix/v1/traces');
    expect(tracesUrl('https://otlp.example.com/v1/traces')).toBe('https://otlp.example.com/v1/traces');
  });
  test('headers: name=value pairs, values URL-decoded, bad names dropped', () => {
    expect(parseHeaders('x-api-key=a%20b, authorization=Bearer%20t,bad name=x,noequals,=v')).toEqual({ 'x-api-key': 'a b', authorization: 'Bearer t' });
    expect(parseHeaders('')).toEqual({});
  });
});

describe('error events', () => {
  const tracker = new ErrorTracker({
    dsn: parseDsn('http://k@127.0.0.1:9/1')!,
    release: 'svc@1.2.3',
    environment: 'dev',
    secrets: ['configured-secret-abcdef'],
  });

  test('an HTTP error: type, redacted message, frames, route, request id; nothing else of the request', () => {
    class QueryFailed extends Error {
      override name = 'QueryFailed';
    }
    const event = tracker.event(new QueryFailed('failed with configured-secret-abcdef and token=t0k3n'), {
      mechanism: 'http',
      method: 'PATCH',
      route: '/api/v1/users/:id',
      requestId: 'rid-1',
    }) as any;
    expect(event.exception.values[0]).toMatchObject({ type: 'QueryFailed', mechanism: { type: 'http', handled: false } });
    expect(event.exception.values[0].value).toBe(`failed with ${REDACTED} and token=${REDACTED}`);
    expect(event).toMatchObject({ release: 'svc@1.2.3', environment: 'dev', transaction: 'PATCH /api/v1/users/:id', request: { method: 'PATCH' } });
    expect(event.tags).toEqual({ mechanism: 'http', request_id: 'rid-1', 'http.route': '/api/v1/users/:id', 'http.method': 'PATCH' });
  });

  test('a thrown non-Error value', () => {
    const event = tracker.event('plain string password=x', { mechanism: 'background', job: 'j' }) as any;
    expect(event.exception.values[0]).toMatchObject({ type: 'NonError', value: `plain string password=${REDACTED}` });
    expect(event.transaction).toBe('job j');
  });

  test('the envelope: header, item header with the payload length, event', () => {
    const { body, eventId } = tracker.envelope(new Error('x'), { mechanism: 'uncaught_exception', level: 'fatal' });
    const [header, item, payload, end] = body.split('\n');
    expect(JSON.parse(header!).event_id).toBe(eventId);
    expect(JSON.parse(item!)).toEqual({ type: 'event', length: Buffer.byteLength(payload!) });
    expect(JSON.parse(payload!).level).toBe('fatal');
    expect(end).toBe('');
  });
});
