// The long-poll session registry (caps, leases, idle expiry, invalidation
// markers), the long-poll header parsers and the WebSocket hello reader.
import { afterEach, describe, expect, test } from 'bun:test';
import { ManualClock, resetClock, setClock } from '../../src/lib/clock.ts';
import { parseRetryContracts, parseRuntimeFeatures, parseSessionNonce } from '../../src/transport/headers.ts';
import { helloAck, readHello } from '../../src/transport/hello.ts';
import { SESSION_LIMITS, SessionRegistry } from '../../src/transport/sessions.ts';

afterEach(() => resetClock());

const clock = () => {
  const c = new ManualClock();
  setClock(c);
  return c;
};

describe('session registry', () => {
  test('the spec limits: 4096 in all, 16 per agent, five minutes idle', () => {
    expect(SESSION_LIMITS).toEqual({ total: 4096, perAgent: 16, idleSeconds: 300 });
  });

  test('the same (agent, nonce) gets the same session; a lease keeps it from eviction', () => {
    const reg = new SessionRegistry<number>({ total: 3, perAgent: 2, idleSeconds: 300 });
    let made = 0;
    const a1 = reg.acquire('a', 'n1', () => ++made);
    const again = reg.acquire('a', 'n1', () => ++made);
    expect('session' in a1 && 'session' in again && a1.session === again.session).toBe(true);
    expect(made).toBe(1);
    const a2 = reg.acquire('a', 'n2', () => ++made);
    expect('session' in a2).toBe(true);
    // Both of a's sessions are leased: a third nonce has nowhere to go.
    expect(reg.acquire('a', 'n3', () => ++made)).toEqual({ full: true });
    if ('session' in a2) reg.release(a2.session);
    // Now a's idle session is evicted for the new one (self-eviction).
    expect('session' in reg.acquire('a', 'n3', () => ++made)).toBe(true);
    expect(reg.size).toBe(2);
  });

  test('a full registry: only expired sessions of others, or idle ones of the same agent, make room; otherwise full', () => {
    const c = clock();
    const reg = new SessionRegistry<string>({ total: 2, perAgent: 16, idleSeconds: 300 });
    const x = reg.acquire('x', 'n', () => 'x');
    const y = reg.acquire('y', 'n', () => 'y');
    if ('session' in x) reg.release(x.session);
    if ('session' in y) reg.release(y.session);
    // z has no session of its own to evict, and the others are fresh.
    expect(reg.acquire('z', 'n', () => 'z')).toEqual({ full: true });
    c.advance(301_000);
    expect('session' in reg.acquire('z', 'n', () => 'z')).toBe(true);
    expect(reg.size).toBe(1);
  });

  test('invalidation markers: 409 for every nonce of the agent until a probe under a fresh nonce; they expire after five idle minutes', () => {
    const c = clock();
    const reg = new SessionRegistry<string>();
    const got = reg.acquire('a', 'bad', () => 's');
    if (!('session' in got)) throw new Error('no session');
    reg.invalidate(got.session);
    expect(reg.size).toBe(0);
    expect(reg.blocked('a', 'bad', false)).toBe(true);
    expect(reg.blocked('a', 'other', false)).toBe(true);
    expect(reg.blocked('a', 'bad', true)).toBe(true); // a probe under the invalidated nonce does not clear it
    expect(reg.blocked('b', 'bad', false)).toBe(false); // other agents are not affected
    expect(reg.blocked('a', 'fresh', true)).toBe(false);
    expect(reg.blocked('a', 'bad', false)).toBe(false);

    const again = reg.acquire('a', 'bad2', () => 's');
    if ('session' in again) reg.invalidate(again.session);
    c.advance(301_000);
    expect(reg.blocked('a', 'anything', false)).toBe(false);
  });

  test('dropAgent forgets sessions and markers (revocation)', () => {
    const reg = new SessionRegistry<string>();
    reg.acquire('a', '1', () => 's');
    const b = reg.acquire('a', '2', () => 's');
    if ('session' in b) reg.invalidate(b.session);
    reg.dropAgent('a');
    expect(reg.size).toBe(0);
    expect(reg.blocked('a', '1', false)).toBe(false);
  });
});

describe('long-poll headers', () => {
  test('retry contracts: engine=1 pairs; any malformed part empties the set', () => {
    expect([...parseRetryContracts('celery=1, rq=1')]).toEqual(['celery', 'rq']);
    for (const bad of [null, '', 'celery=2', 'celery', 'celery=1,', 'celery=1,=1', `${'e'.repeat(65)}=1`]) expect(parseRetryContracts(bad).size).toBe(0);
  });

  test('runtime features: trimmed, de-duplicated, at most 64 names of at most 64 characters; absent is null', () => {
    expect(parseRuntimeFeatures(null)).toBeNull();
    expect(parseRuntimeFeatures(' a, b ,a,,' + 'x'.repeat(65))).toEqual(['a', 'b']);
    expect(parseRuntimeFeatures(Array.from({ length: 70 }, (_, i) => `f${i}`).join(','))).toHaveLength(64);
  });

  test('session nonce: absent is the legacy session; unusable values are refused', () => {
    expect(parseSessionNonce(null)).toBe('');
    expect(parseSessionNonce('AbC_-123')).toBe('AbC_-123');
    for (const bad of ['', 'has space', 'x'.repeat(129), 'é']) expect(parseSessionNonce(bad)).toBeNull();
  });
});

describe('hello', () => {
  const hello = (payload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ v: 2, id: 'hello_0123456789abcdef', ts: null, type: 'hello', payload: { protocol_version: '2', agent_version: '1.6.7', framework: 'bare', ...payload }, ...extra });

  test('the 1.6 example hello reads into what is recorded', () => {
    const r = readHello(
      hello({ engines: ['celery'], schedulers: [], capabilities: { celery: ['bulk_retry', 'cancel_task', 'retry_task'] }, host: { name: 'w1' }, worker_id: 'bare-4242-1777636800000', worker_role: null, worker_pid: 4242, worker_started_at: '2026-05-01T12:00:00.123456Z' }),
    );
    expect(r).toEqual({
      ok: true,
      facts: {
        protocolVersion: '2',
        framework: 'bare',
        engines: ['celery'],
        schedulers: [],
        capabilities: { celery: ['bulk_retry', 'cancel_task', 'retry_task'] },
        runtimeFeatures: null,
        metadata: { host_name: 'w1', agent_version: '1.6.7', worker_role: null },
        worker: { workerId: 'bare-4242-1777636800000', role: null, pid: 4242, startedAt: '2026-05-01T12:00:00.123456Z' },
      },
    });
  });

  test('refusals: 4400 for garbage and wrong types, 4426 for other protocol versions', () => {
    expect(readHello('nope')).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({}, { type: 'heartbeat' }))).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({}, { v: '2' }))).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({ engines: 'celery' }))).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({ worker_pid: 1.5 }))).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({ capabilities: { celery: [1] } }))).toMatchObject({ ok: false, code: 4400 });
    expect(readHello(hello({ protocol_version: '3' }))).toEqual({ ok: false, code: 4426, reason: 'unsupported protocol version', protocolVersion: '3' });
  });

  test('hello_ack carries JSON integers and the bound strings', () => {
    const text = helloAck({ brainVersion: '0.1.0', agentId: 'a', projectId: 'p', sessionId: 's', maxFrameBytes: 1048576 });
    expect(text).toContain('"heartbeat_interval_seconds":10,');
    expect(text).toContain('"max_frame_size_bytes":1048576}');
    expect(JSON.parse(text)).toMatchObject({ v: 2, type: 'hello_ack', payload: { protocol_version: '2', agent_id: 'a', project_id: 'p', session_id: 's' } });
  });
});
