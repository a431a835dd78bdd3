import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { resetClock, setClock, type ManualClock } from '../../src/lib/clock.ts';
import { frameHmac, OUTBOUND_SIGNED_TYPES, signingEnvelope, type FrameBinding } from '../../src/transport/frames.ts';
import { jsonFloat, toJsonValue } from '../../src/transport/json-convert.ts';
import { canonicalJson, parseJson, type JsonObject } from '../../src/transport/json.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { FrameVerifier } from '../../src/transport/verifier.ts';
import { BINDING, HEARTBEAT_PAYLOAD, newClock, SECRET } from './transport-fixtures.ts';

const HEARTBEAT_CANONICAL =
  '{"agent_id":"6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b","id":"hb_0123456789ab","nonce":"AAAAAAAAAAAAAAAAAAAAAA",' +
  '"payload":{"adapter_health":{},"buffer_size":0,"dropped_events":0,"last_flush_at":null},' +
  '"project_id":"0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2f","seq":1,"session_id":"5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716",' +
  '"ts":"2026-05-01T12:00:00.123456Z","type":"heartbeat","v":2}';
const HEARTBEAT_HMAC = '8214456d1180e1dd5a0a2f0bfb8ce10930d60eabc4be318440af4c5f24c38353';

const COMMAND_ID = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
const COMMAND_PAYLOAD = {
  action: 'cancel_task',
  target: { type: 'task', id: 'celery:abc' },
  parameters: { engine: 'celery', task_id: 'abc' },
  timeout_seconds: 60,
  issued_by: null,
};
const COMMAND_CANONICAL =
  '{"agent_id":"6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b","id":"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","nonce":"BBBBBBBBBBBBBBBBBBBBBB",' +
  '"payload":{"action":"cancel_task","issued_by":null,"parameters":{"engine":"celery","task_id":"abc"},' +
  '"target":{"id":"celery:abc","type":"task"},"timeout_seconds":60},' +
  '"project_id":"0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2f","seq":1,"session_id":"5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716",' +
  '"ts":"2026-05-01T12:00:01.000000Z","type":"command","v":2}';
const COMMAND_HMAC = '8d736f9f6b5f4bb3c794aacd37c541c2a85ac1079781ae54cf3aad576f6df222';

const heartbeatFrame = (): JsonObject =>
  toJsonValue({
    v: 2,
    id: 'hb_0123456789ab',
    ts: '2026-05-01T12:00:00.123456Z',
    nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
    seq: 1,
    type: 'heartbeat',
    payload: HEARTBEAT_PAYLOAD,
  }) as JsonObject;

let clock: ManualClock;
beforeEach(() => {
  clock = newClock();
  setClock(clock);
});
afterEach(() => resetClock());

describe('§8.4 signed envelopes', () => {
  test('heartbeat: canonical bytes and HMAC', () => {
    expect(canonicalJson(signingEnvelope(heartbeatFrame(), BINDING))).toBe(HEARTBEAT_CANONICAL);
    expect(frameHmac(SECRET, heartbeatFrame(), BINDING)).toBe(HEARTBEAT_HMAC);
  });

  test('heartbeat: the vector frame verifies at its own instant', () => {
    // As a 1.6 agent puts it on the wire (Pydantic field order, no binding fields).
    const wire =
      '{"v":2,"id":"hb_0123456789ab","ts":"2026-05-01T12:00:00.123456Z","nonce":"AAAAAAAAAAAAAAAAAAAAAA","seq":1,' +
      `"hmac":"${HEARTBEAT_HMAC}","type":"heartbeat",` +
      '"payload":{"buffer_size":0,"last_flush_at":null,"dropped_events":0,"adapter_health":{}}}';
    const verified = new FrameVerifier(SECRET, BINDING).verify(wire);
    expect(verified.kind).toBe('signed');
    if (verified.kind !== 'signed') return;
    expect(verified.type).toBe('heartbeat');
    expect(verified.id).toBe('hb_0123456789ab');
    expect(verified.seq).toBe(1n);
    expect(verified.nonce).toBe('AAAAAAAAAAAAAAAAAAAAAA');
    expect(verified.tsMicros).toBe(Date.UTC(2026, 4, 1, 12, 0, 0, 123) * 1000 + 456);
    expect(verified.payload).toEqual({ buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} });
  });

  test('command: canonical bytes and HMAC', () => {
    const frame = toJsonValue({
      v: 2,
      id: COMMAND_ID,
      ts: '2026-05-01T12:00:01.000000Z',
      nonce: 'BBBBBBBBBBBBBBBBBBBBBB',
      seq: 1,
      type: 'command',
      payload: COMMAND_PAYLOAD,
    }) as JsonObject;
    expect(canonicalJson(signingEnvelope(frame, BINDING))).toBe(COMMAND_CANONICAL);
    expect(frameHmac(SECRET, frame, BINDING)).toBe(COMMAND_HMAC);
  });

  test('command: FrameSigner reproduces the vector', () => {
    clock.advance(876.544); // to 12:00:01.000000
    const signer = new FrameSigner(SECRET, BINDING, { nonce: () => 'BBBBBBBBBBBBBBBBBBBBBB' });
    const text = signer.sign('command', COMMAND_ID, COMMAND_PAYLOAD);
    expect(text).toBe(
      `{"v":2,"id":"${COMMAND_ID}","ts":"2026-05-01T12:00:01.000000Z","nonce":"BBBBBBBBBBBBBBBBBBBBBB","seq":1,` +
        `"hmac":"${COMMAND_HMAC}","type":"command","payload":{"action":"cancel_task","target":{"type":"task","id":"celery:abc"},` +
        '"parameters":{"engine":"celery","task_id":"abc"},"timeout_seconds":60,"issued_by":null}}',
    );
  });
});

describe('signing envelope', () => {
  test('binding fields overwrite same-named wire keys and hmac is dropped', () => {
    const frame = heartbeatFrame();
    frame.agent_id = 'someone-else';
    frame.session_id = 'old-session';
    frame.hmac = 'f'.repeat(64);
    expect(canonicalJson(signingEnvelope(frame, BINDING))).toBe(HEARTBEAT_CANONICAL);
    expect(frameHmac(SECRET, frame, BINDING)).toBe(HEARTBEAT_HMAC);
    expect(frame.agent_id).toBe('someone-else'); // the input is not modified
  });

  test('unknown keys and nulls are signed too', () => {
    const withExtra = heartbeatFrame();
    withExtra.extra = null;
    expect(frameHmac(SECRET, withExtra, BINDING)).not.toBe(HEARTBEAT_HMAC);
    expect(canonicalJson(signingEnvelope(withExtra, BINDING))).toContain('"extra":null,"id"');
  });

  test('each binding field changes the HMAC', () => {
    const others: FrameBinding[] = [
      { ...BINDING, agentId: '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4c' },
      { ...BINDING, projectId: '0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e30' },
      { ...BINDING, sessionId: '' },
      { ...BINDING, agentId: BINDING.agentId.toUpperCase() },
    ];
    const hmacs = new Set(others.map((b) => frameHmac(SECRET, heartbeatFrame(), b)));
    expect(hmacs.size).toBe(4);
    expect(hmacs.has(HEARTBEAT_HMAC)).toBe(false);
  });
});

describe('FrameSigner', () => {
  test('one seq counter from 1 across all outbound types; fresh 22-char nonces; ts in UTC with microseconds', () => {
    const signer = new FrameSigner(SECRET, BINDING);
    expect(signer.lastSeq).toBe(0);
    const texts = [
      signer.sign('command', COMMAND_ID, COMMAND_PAYLOAD),
      signer.sign('event_batch_ack', 'eba_ev_0123456789ab', { acked_id: 'ev_0123456789ab', received: 1, accepted: 1, rejected: 0 }),
      signer.sign('error', 'err_x', { code: 'scheduler_upgrade_required', message: 'upgrade', fatal: true }),
    ];
    expect(signer.lastSeq).toBe(3);
    const frames = texts.map((t) => parseJson(t) as JsonObject);
    expect(frames.map((f) => f.seq)).toEqual([1n, 2n, 3n]);
    expect(frames.map((f) => f.type)).toEqual([...OUTBOUND_SIGNED_TYPES]);
    const nonces = frames.map((f) => f.nonce as string);
    for (const nonce of nonces) expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(nonces).size).toBe(3);
    for (const f of frames) {
      expect(f.v).toBe(2n);
      expect(f.ts).toBe('2026-05-01T12:00:00.123456Z');
      expect(Object.keys(f)).toEqual(['v', 'id', 'ts', 'nonce', 'seq', 'hmac', 'type', 'payload']);
      expect(f.hmac).toBe(frameHmac(SECRET, f, BINDING));
    }
  });

  test('payload numbers: integral -> int, fractional -> float, jsonFloat -> float', () => {
    const signer = new FrameSigner(SECRET, BINDING, { nonce: () => 'n'.repeat(22) });
    const text = signer.sign('error', 'err_1', { a: 60, b: 0.000085, c: jsonFloat(60), big: 2n ** 64n });
    expect(text).toContain('"payload":{"a":60,"b":8.5e-05,"c":60.0,"big":18446744073709551616}');
  });

  test('what the signer sends, an agent-side verifier accepts, in order', () => {
    const signer = new FrameSigner(SECRET, BINDING);
    const agentSide = new FrameVerifier(SECRET, BINDING, { accept: OUTBOUND_SIGNED_TYPES });
    const first = signer.sign('command', COMMAND_ID, COMMAND_PAYLOAD);
    clock.advance(10);
    const second = signer.sign('event_batch_ack', 'eba_1', { acked_id: 'ev_1', received: 0, accepted: 0, rejected: 0 });
    const a = agentSide.verify(first);
    const b = agentSide.verify(second);
    expect(a.kind === 'signed' && a.seq).toBe(1n);
    expect(b.kind === 'signed' && b.seq).toBe(2n);
    expect(a.kind === 'signed' && a.payload).toEqual(COMMAND_PAYLOAD);
    expect(agentSide.lastSeq).toBe(2n);
  });

  test('refuses short secrets, bad ids and non-object payloads without consuming a seq', () => {
    expect(() => new FrameSigner(SECRET.subarray(0, 31), BINDING)).toThrow(RangeError);
    const signer = new FrameSigner(SECRET, BINDING);
    expect(() => signer.sign('command', '', {})).toThrow(RangeError);
    expect(() => signer.sign('command', 'x'.repeat(65), {})).toThrow(RangeError);
    expect(() => signer.sign('command', 'ok', [] as never)).toThrow(TypeError);
    expect(() => signer.sign('command', 'ok', { n: Number.NaN })).toThrow();
    expect(signer.lastSeq).toBe(0);
    expect(signer.sign('command', '\u{1F600}'.repeat(64), {})).toContain('"seq":1,');
  });
});
