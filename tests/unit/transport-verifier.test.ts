import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { resetClock, setClock } from '../../src/lib/clock.ts';
import { FrameError } from '../../src/transport/errors.ts';
import { frameHmac, OUTBOUND_SIGNED_TYPES, quickEnvelopeText, signingEnvelope, type FrameBinding } from '../../src/transport/frames.ts';
import { canonicalJson, parseJson, type JsonObject } from '../../src/transport/json.ts';
import { formatFrameTimestamp } from '../../src/transport/timestamp.ts';
import { hmacHex } from '../../src/lib/crypto.ts';
import { nowMicros } from '../../src/lib/clock.ts';
import { jsonFloat } from '../../src/transport/json-convert.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { FrameVerifier, type VerifiedSignedFrame } from '../../src/transport/verifier.ts';
import { agentFrame, BINDING, expectFrameError, HEARTBEAT_PAYLOAD, newClock, randomJsonWriter, SECRET } from './transport-fixtures.ts';

let verifier: FrameVerifier;
beforeEach(() => {
  setClock(newClock());
  verifier = new FrameVerifier(SECRET, BINDING);
});
afterEach(() => resetClock());

function verifySigned(text: string, v: FrameVerifier = verifier): VerifiedSignedFrame {
  const frame = v.verify(text);
  if (frame.kind !== 'signed') throw new Error('expected a signed frame');
  return frame;
}

const LOSS = {
  buffer_id: 'buf-1',
  runtime_id: '0123456789abcdef0123456789abcdef',
  capacity_evicted_frames: 0,
  content_rejected_frames: 1,
  event_records: 2,
  command_results: 3,
  other_frames: 4,
  unclassified_frames: 2 ** 53 - 1,
  adapter_events: { celery: 5 },
};
const withLoss = (loss: unknown, type = 'heartbeat', seq = 1): string =>
  agentFrame({ type, seq, nonce: `loss-nonce-${seq}`, payload: { ...HEARTBEAT_PAYLOAD, telemetry_loss: loss as never } });

describe('round trip', () => {
  test('an agent-signed heartbeat verifies and comes back as plain values', () => {
    const agent = new FrameSigner(SECRET, BINDING);
    const payload = { ...HEARTBEAT_PAYLOAD, buffer_size: 3, adapter_health: { 'celery.queue_depths': '{"default":2}' }, big: 2n ** 70n };
    const frame = verifySigned(agent.sign('heartbeat', 'hb_aaaaaaaaaaaa', payload));
    expect(frame.type).toBe('heartbeat');
    expect(frame.id).toBe('hb_aaaaaaaaaaaa');
    expect(frame.seq).toBe(1n);
    expect(frame.ts).toBe('2026-05-01T12:00:00.123456Z');
    expect(frame.payload).toEqual({ ...payload, big: 1180591620717411303424n });
    expect(verifier.lastSeq).toBe(1n);
    expect(verifySigned(agent.sign('agent_status', 'as_1', { current_session_age_seconds: 0.000085 })).payload).toEqual({
      current_session_age_seconds: 0.000085,
    });
    expect(verifier.lastSeq).toBe(2n);
  });

  test('all seven inbound signed types are accepted', () => {
    const agent = new FrameSigner(SECRET, BINDING);
    const payloads = {
      event_batch: { events: [] },
      heartbeat: HEARTBEAT_PAYLOAD,
      agent_status: {},
      command_ack: {},
      command_result: { status: 'failed', result: null, error: 'boom' },
      registry_delta: { engine: 'celery', added: [], removed: [], updated: [] },
      error: { code: 'x', message: 'y', fatal: false },
    } as const;
    for (const [type, payload] of Object.entries(payloads)) {
      expect(verifySigned(agent.sign(type as keyof typeof payloads, 'id-1', payload)).type).toBe(type as keyof typeof payloads);
    }
    expect(verifier.lastSeq).toBe(7n);
  });

  test('absent or null payload reads as {}', () => {
    expect(verifySigned(agentFrame({ payload: undefined, seq: 1 })).payload).toEqual({});
    expect(verifySigned(agentFrame({ payload: null, seq: 2 })).payload).toEqual({});
  });

  test('a non-string id is passed through as null, not refused', () => {
    expect(verifySigned(agentFrame({ id: 7 })).id).toBeNull();
  });
});

describe('shape and version', () => {
  test('not JSON, NaN, 1e999 and lone surrogates are malformed', () => {
    expectFrameError(() => verifier.verify('{"v":2,'), 'malformed', /^frame is not valid JSON/);
    expectFrameError(() => verifier.verify('{"v":2,"type":"heartbeat","payload":{"x":NaN}}'), 'malformed');
    expectFrameError(() => verifier.verify('{"v":2,"type":"heartbeat","payload":{"x":1e999}}'), 'malformed');
    expectFrameError(() => verifier.verify('{"v":2,"type":"heartbeat","payload":{"x":"\\udead"}}'), 'malformed');
  });

  test('must be an object with a string type', () => {
    expectFrameError(() => verifier.verify('[]'), 'protocol', /JSON object/);
    expectFrameError(() => verifier.verify('"heartbeat"'), 'protocol', /JSON object/);
    expectFrameError(() => verifier.verify('{}'), 'protocol', /missing required type/);
    expectFrameError(() => verifier.verify(agentFrame({ type: undefined })), 'protocol', /type/);
    expectFrameError(() => verifier.verify(agentFrame({ type: 5 })), 'protocol', /type/);
  });

  test('v: integer other than 2 is a version error; any other v is a protocol error', () => {
    expectFrameError(() => verifier.verify(agentFrame({ v: 3 })), 'version', /unsupported frame version/);
    expectFrameError(() => verifier.verify(agentFrame({ v: 1 })), 'version');
    // Version is checked before type, so a newer peer's new frame type is still a version error.
    expectFrameError(() => verifier.verify(agentFrame({ v: 3, type: 'brand_new' })), 'version');
    expectFrameError(() => verifier.verify(agentFrame({ v: '2' })), 'protocol', /integer/);
    expectFrameError(() => verifier.verify(agentFrame({ v: 2.5 })), 'protocol', /integer/);
    expectFrameError(() => verifier.verify('{"v":2.0,"type":"heartbeat"}'), 'protocol', /integer/);
    expectFrameError(() => verifier.verify(agentFrame({ v: true })), 'protocol', /integer/);
    expectFrameError(() => verifier.verify(agentFrame({ v: undefined })), 'protocol', /v missing/);
    expectFrameError(() => verifier.verify(agentFrame({ v: null })), 'protocol', /v missing/);
    expect(verifier.lastSeq).toBe(0n);
  });

  test('unknown types, and outbound types sent inbound, are protocol errors', () => {
    expectFrameError(() => verifier.verify(agentFrame({ type: 'telepathy' })), 'protocol', /unknown frame type/);
    expectFrameError(() => verifier.verify(agentFrame({ type: 'command' })), 'protocol', /unexpected/);
    expectFrameError(() => verifier.verify(agentFrame({ type: 'event_batch_ack' })), 'protocol', /unexpected/);
    const agentSide = new FrameVerifier(SECRET, BINDING, { accept: OUTBOUND_SIGNED_TYPES });
    expect(verifySigned(agentFrame({ type: 'command' }), agentSide).type).toBe('command');
    expectFrameError(() => agentSide.verify(agentFrame({ type: 'heartbeat', seq: 2 })), 'protocol', /unexpected/);
  });

  test('payload must be an object when present', () => {
    for (const payload of [[], 'x', 1, true]) {
      expectFrameError(() => verifier.verify(agentFrame({ payload })), 'protocol', /payload must be a JSON object/);
    }
  });

  test('hello and hello_ack skip the HMAC and come back as handshake frames', () => {
    const hello =
      '{"v":2,"id":"hello_0123456789abcdef","ts":null,"type":"hello","payload":{"protocol_version":"2","agent_version":"1.6.7",' +
      '"framework":"bare","engines":["celery"],"worker_pid":4242}}';
    const frame = verifier.verify(hello);
    expect(frame).toMatchObject({ kind: 'handshake', type: 'hello', id: 'hello_0123456789abcdef' });
    expect(frame.payload).toEqual({
      protocol_version: '2',
      agent_version: '1.6.7',
      framework: 'bare',
      engines: ['celery'],
      worker_pid: 4242,
    });
    expect(verifier.verify('{"id":"hack_1","type":"hello_ack","payload":{}}')).toMatchObject({ kind: 'handshake', type: 'hello_ack' });
    expectFrameError(() => verifier.verify('{"v":3,"type":"hello"}'), 'version');
    expectFrameError(() => verifier.verify('{"v":null,"type":"hello"}'), 'protocol');
    expectFrameError(() => verifier.verify('{"v":"2","type":"hello"}'), 'protocol');
    expect(verifier.lastSeq).toBe(0n);
  });
});

describe('signature', () => {
  test('a flipped, uppercased or foreign-key hmac is a mismatch', () => {
    const good = agentFrame();
    const hmac = /"hmac":"([0-9a-f]{64})"/.exec(good)?.[1] ?? '';
    const flipped = hmac.slice(0, -1) + (hmac.endsWith('0') ? '1' : '0');
    expectFrameError(() => verifier.verify(good.replace(hmac, flipped)), 'signature', /^hmac signature mismatch$/);
    expectFrameError(() => verifier.verify(good.replace(hmac, hmac.toUpperCase())), 'signature', /mismatch/);
    expectFrameError(() => verifier.verify(agentFrame({}, { secret: Buffer.alloc(32, 7) })), 'signature', /mismatch/);
    expect(verifySigned(good).seq).toBe(1n);
  });

  test('tampering with any signed field breaks the signature', () => {
    const good = agentFrame({ payload: { ...HEARTBEAT_PAYLOAD, buffer_size: 5 } });
    expectFrameError(() => verifier.verify(good.replace('"buffer_size":5', '"buffer_size":6')), 'signature', /mismatch/);
    expectFrameError(() => verifier.verify(good.replace('"buffer_size":5', '"buffer_size":5.0')), 'signature', /mismatch/);
    expectFrameError(() => verifier.verify(good.replace('"seq":1', '"seq":2')), 'signature', /mismatch/);
    expectFrameError(() => verifier.verify(good.replace('{"v":2,', '{"v":2,"extra":1,')), 'signature', /mismatch/);
  });

  test('key order, whitespace, escapes and duplicate keys on the wire do not matter', () => {
    const good = agentFrame({ payload: { ...HEARTBEAT_PAYLOAD, note: 'é/' } });
    const reshaped = good.replace('{"v":2,', '{ "v" : 1 , "v":2 ,').replace('"note":"é/"', '"note":"\\u00e9\\/"');
    expect(verifySigned(reshaped).payload.note).toBe('é/');
  });

  test('missing, empty or wrong-length hmac', () => {
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: undefined })), 'signature', /^missing hmac signature$/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: null })), 'signature', /missing/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: '' })), 'signature', /missing/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: 'a'.repeat(63) })), 'signature', /^invalid hmac signature length$/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: 'a'.repeat(65) })), 'signature', /length/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: 12345 })), 'signature', /length/);
    expectFrameError(() => verifier.verify(agentFrame({}, { hmac: 'é'.repeat(64) })), 'signature', /mismatch/);
  });

  test('a frame bound to another agent, project or session fails', () => {
    const others: FrameBinding[] = [
      { ...BINDING, agentId: '00000000-0000-4000-8000-000000000001' },
      { ...BINDING, projectId: '00000000-0000-4000-8000-000000000002' },
      { ...BINDING, sessionId: '00000000-0000-4000-8000-000000000003' },
    ];
    for (const binding of others) {
      expectFrameError(() => verifier.verify(agentFrame({}, { binding })), 'signature', /mismatch/);
      // ...and verifies on a verifier bound to that session.
      expect(verifySigned(agentFrame({}, { binding }), new FrameVerifier(SECRET, binding)).seq).toBe(1n);
    }
    // Claiming the other identity inside the frame does not help: the bound values win.
    expectFrameError(() => verifier.verify(agentFrame({ session_id: others[2]?.sessionId }, { binding: others[2] })), 'signature');
  });

  test('error messages carry no secrets or signatures', () => {
    const good = agentFrame();
    const hmac = /"hmac":"([0-9a-f]{64})"/.exec(good)?.[1] ?? '';
    const error = expectFrameError(() => verifier.verify(good.replace(hmac, 'f'.repeat(64))), 'signature');
    expect(error.message).not.toContain(hmac);
    expect(error.message).not.toContain(SECRET.toString('hex'));
    expect(error.message).not.toContain('f'.repeat(64));
  });

  test('short secrets are refused at construction', () => {
    expect(() => new FrameVerifier(Buffer.alloc(31), BINDING)).toThrow(RangeError);
  });
});

describe('content rules after the HMAC', () => {
  test('command_result status must be exactly success or failed', () => {
    const result = (status: unknown, seq: number): string =>
      agentFrame({ type: 'command_result', id: 'c1', seq, payload: { status: status as never, result: null, error: null } });
    for (const status of ['timeout', 'cancelled', 'Success', 'success ', '', null, 1, ['success']]) {
      expectFrameError(() => verifier.verify(result(status, 1)), 'protocol', /status must be 'success' or 'failed'/);
    }
    expectFrameError(() => verifier.verify(agentFrame({ type: 'command_result', payload: {} })), 'protocol', /status/);
    expectFrameError(() => verifier.verify(agentFrame({ type: 'command_result', payload: undefined })), 'protocol', /status/);
    expect(verifySigned(result('success', 1)).payload.status).toBe('success');
    expect(verifySigned(result('failed', 2)).payload.status).toBe('failed');
  });

  test('command_result status is checked only after the HMAC', () => {
    const forged = agentFrame({ type: 'command_result', payload: { status: 'timeout' } }, { hmac: '0'.repeat(64) });
    expectFrameError(() => verifier.verify(forged), 'signature');
  });

  test('valid telemetry_loss, null, and absent are accepted on heartbeat and agent_status', () => {
    expect(verifySigned(withLoss(LOSS)).payload.telemetry_loss).toEqual(LOSS);
    expect(verifySigned(withLoss(null, 'heartbeat', 2)).payload.telemetry_loss).toBeNull();
    expect(verifySigned(withLoss({ buffer_id: 'b', runtime_id: 'r' }, 'agent_status', 3)).type).toBe('agent_status');
    const thirtyTwo = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`adapter-${i}`, i]));
    expect(verifySigned(withLoss({ ...LOSS, adapter_events: thirtyTwo, extra_key: 'ignored' }, 'heartbeat', 4)).seq).toBe(4n);
    // Only heartbeat and agent_status are checked.
    expect(verifySigned(withLoss({ bogus: true }, 'event_batch', 5)).seq).toBe(5n);
  });

  test('invalid telemetry_loss is a protocol error', () => {
    const thirtyThree = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`adapter-${i}`, i]));
    const bad: unknown[] = [
      { ...LOSS, event_records: true },
      { ...LOSS, event_records: -1 },
      { ...LOSS, other_frames: 2n ** 53n },
      { ...LOSS, command_results: 1.5 },
      { ...LOSS, command_results: null },
      { ...LOSS, command_results: '3' },
      { ...LOSS, adapter_events: thirtyThree },
      { ...LOSS, adapter_events: { '': 1 } },
      { ...LOSS, adapter_events: { ['a'.repeat(65)]: 1 } },
      { ...LOSS, adapter_events: { celery: false } },
      { ...LOSS, adapter_events: { celery: 2n ** 53n } },
      { ...LOSS, adapter_events: [] },
      { ...LOSS, adapter_events: null },
      { ...LOSS, buffer_id: '' },
      { ...LOSS, buffer_id: 'b'.repeat(65) },
      { ...LOSS, runtime_id: 7 },
      { ...LOSS, buffer_id: undefined },
      [],
      'loss',
      0,
    ];
    for (const loss of bad) {
      expectFrameError(() => verifier.verify(withLoss(loss)), 'protocol', /^invalid telemetry loss counters$/);
      expectFrameError(() => verifier.verify(withLoss(loss, 'agent_status')), 'protocol', /^invalid telemetry loss counters$/);
    }
    expect(verifier.lastSeq).toBe(0n);
  });

  test('a float counter is refused even when integral (1.0 on the wire)', () => {
    const frame = withLoss({ ...LOSS, event_records: jsonFloat(1) });
    expect(frame).toContain('"event_records":1.0,');
    expectFrameError(() => verifier.verify(frame), 'protocol', /telemetry/);
    const adapter = withLoss({ ...LOSS, adapter_events: { celery: jsonFloat(0) } });
    expect(adapter).toContain('"celery":0.0');
    expectFrameError(() => verifier.verify(adapter), 'protocol', /telemetry/);
  });

  test('lengths count code points: 64 astral characters fit', () => {
    const wide = '\u{1F600}'.repeat(64);
    expect(verifySigned(withLoss({ ...LOSS, buffer_id: wide, adapter_events: { [wide]: 1 } })).seq).toBe(1n);
    expectFrameError(() => verifier.verify(withLoss({ ...LOSS, buffer_id: '\u{1F600}'.repeat(65) }, 'heartbeat', 2)), 'protocol');
  });

  test('a frame refused for content does not consume its seq or nonce', () => {
    expectFrameError(() => verifier.verify(withLoss({ ...LOSS, event_records: true }, 'heartbeat', 1)), 'protocol');
    expectFrameError(() => verifier.verify(withLoss({ ...LOSS, adapter_events: {}, other_frames: -5 }, 'heartbeat', 1)), 'protocol');
    expect(verifier.lastSeq).toBe(0n);
    // Same seq, same nonce, fixed content: accepted.
    expect(verifySigned(withLoss(LOSS, 'heartbeat', 1)).seq).toBe(1n);
    const status = (s: string): string =>
      agentFrame({ type: 'command_result', seq: 2, nonce: 'status-nonce-xxxxxxxxx', payload: { status: s } });
    expectFrameError(() => verifier.verify(status('timeout')), 'protocol');
    expect(verifySigned(status('success')).seq).toBe(2n);
  });

  test('a frame refused for its signature does not consume its seq or nonce', () => {
    const forged = agentFrame({ seq: 1, nonce: 'same-nonce-xxxxxxxxxxx' }, { hmac: 'a'.repeat(64) });
    expectFrameError(() => verifier.verify(forged), 'signature');
    expect(verifySigned(agentFrame({ seq: 1, nonce: 'same-nonce-xxxxxxxxxxx' })).seq).toBe(1n);
  });
});

describe('errors are typed', () => {
  test('FrameError carries kind and a name', () => {
    const error = expectFrameError(() => verifier.verify('nope'), 'malformed');
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(FrameError);
    expect(error.name).toBe('FrameError');
  });
});

describe('the quick path for event batches', () => {
  // Frames signed as agents sign them (over the canonical text), with random
  // data: decode (quick path first) and decodeFully give the same frames, or
  // the same refusals. Values compared as storage writes them (-0 as 0).
  const { wire } = randomJsonWriter(11);
  const outcome = (f: () => unknown): string => {
    try {
      return JSON.stringify(f(), (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
    } catch (e) {
      if (e instanceof FrameError) return `${e.kind}: ${e.message}`;
      throw e;
    }
  };
  /** The frame text with an hmac over its canonical envelope appended (null: Python could not sign it). */
  const signed = (text: string): string | null => {
    let frame: JsonObject;
    try {
      frame = parseJson(text) as JsonObject;
    } catch {
      return null;
    }
    return `${text.slice(0, -1)},"hmac":"${frameHmac(SECRET, frame, BINDING)}"}`;
  };

  test('3,000 random event batches, and each with a wrong hmac: decode and decodeFully agree', () => {
    let quick = 0;
    let compared = 0;
    for (let i = 0; i < 3000; i++) {
      const ts = formatFrameTimestamp(nowMicros());
      const event = `{"kind":"task.succeeded","engine":"celery","task_id":"t-${i}","occurred_at":"2026-05-01T12:00:00+00:00","data":${wire(1)}}`;
      const text = signed(`{"v":2,"type":"event_batch","id":"ev_${i}","seq":${i + 1},"nonce":"n-${i}","ts":"${ts}","payload":{"events":[${event}],"extra":${wire(2)}}}`);
      if (text === null) continue;
      const quickText = (): string | null => {
        try {
          return quickEnvelopeText(JSON.parse(text) as Record<string, unknown>, BINDING);
        } catch {
          return null; // a large integer
        }
      };
      if (quickText() === canonicalJson(signingEnvelope(parseJson(text) as JsonObject, BINDING))) quick++;
      expect(outcome(() => verifier.decode(text))).toBe(outcome(() => verifier.decodeFully(text)));
      const tampered = text.replace(/"hmac":"(.)/, (_, c: string) => `"hmac":"${c === '0' ? '1' : '0'}`);
      expect(outcome(() => verifier.decode(tampered))).toBe(outcome(() => verifier.decodeFully(tampered)));
      compared++;
    }
    // Both paths were taken: frames whose quick text is the canonical one, and the others.
    expect(compared).toBeGreaterThan(2900);
    expect(quick).toBeGreaterThan(300);
    expect(quick).toBeLessThan(compared - 300);
  });

  test('numbers and keys JSON.stringify writes otherwise than Python take the full path, with the same result', () => {
    const data = ['{"10":1,"9":2}', '{"f":12.0}', '{"f":1e-05}', '{"f":1e21}', '{"n":1234567890123456789}', '{"n":9007199254740994}', '{"z":-0}', '{"s":"\\ud83d\\ude00 \\u00e9"}'];
    for (const d of data) {
      const text = signed(`{"v":2,"type":"event_batch","id":"ev_x","seq":1,"nonce":"n-1","ts":"${formatFrameTimestamp(nowMicros())}","payload":{"events":[{"kind":"task.sent","engine":"celery","task_id":"t","data":${d}}]}}`)!;
      const decoded = verifier.decode(text);
      expect(outcome(() => decoded)).toBe(outcome(() => verifier.decodeFully(text)));
      expect(decoded.kind).toBe('decoded');
    }
    // 2^53 + 2 is exact in a double, yet the full path keeps it as a big integer (stored as text).
    const big = verifier.decode(signed(`{"v":2,"type":"event_batch","id":"ev_b","seq":1,"nonce":"n-b","ts":"${formatFrameTimestamp(nowMicros())}","payload":{"events":[{"kind":"task.sent","engine":"celery","task_id":"t","data":{"n":9007199254740994}}]}}`)!);
    expect(big.kind === 'decoded' && big.batch!.records[0]!.data).toEqual({ n: '9007199254740994' });
    // A float seq is refused, written 1e21 or otherwise.
    for (const seq of ['1e21', '5.0']) {
      const text = signed(`{"v":2,"type":"event_batch","id":"ev_s","seq":${seq},"nonce":"n-s","ts":"${formatFrameTimestamp(nowMicros())}","payload":{"events":[]}}`)!;
      expect(outcome(() => verifier.verify(text))).toBe('replay: frame envelope missing valid seq');
    }
  });

  test('nesting around the 512-level limit and numbers out of range: both paths answer alike', () => {
    // Signed over a text that is canonical by construction (keys in order, compact).
    const signedOver = (data: string, wireData = data): string => {
      const ts = formatFrameTimestamp(nowMicros());
      const event = `{"data":${data},"engine":"celery","kind":"task.sent","task_id":"t"}`;
      const envelope = `{"agent_id":"${BINDING.agentId}","id":"ev_d","nonce":"n-d","payload":{"events":[${event}]},"project_id":"${BINDING.projectId}","seq":1,"session_id":"${BINDING.sessionId}","ts":"${ts}","type":"event_batch","v":2}`;
      const hmac = hmacHex(SECRET, envelope);
      return `{"v":2,"type":"event_batch","id":"ev_d","seq":1,"nonce":"n-d","ts":"${ts}","payload":{"events":[${event.replace(data, wireData)}]},"hmac":"${hmac}"}`;
    };
    const answers = new Set<string>();
    for (let depth = 505; depth <= 512; depth++) {
      const text = signedOver(`${'['.repeat(depth)}${']'.repeat(depth)}`);
      const answer = outcome(() => verifier.decode(text));
      expect(answer).toBe(outcome(() => verifier.decodeFully(text)));
      answers.add(answer.startsWith('malformed') ? 'refused' : 'decoded');
    }
    expect([...answers].sort()).toEqual(['decoded', 'refused']); // the limit lies inside the range
    // 1e400 parses as Infinity, which JSON.stringify writes as null: signed over that, still refused.
    const overflow = signedOver('{"x":null}', '{"x":1e400}');
    expect(outcome(() => verifier.decode(overflow))).toMatch(/^malformed: .*out of float range/);
  });

  test('a frame signed over the quick text where the canonical one differs (12 for 12.0) passes, and reads the same', () => {
    const frame = { v: 2, type: 'event_batch', id: 'ev_q', seq: 1, nonce: 'n-q', ts: formatFrameTimestamp(nowMicros()), payload: { events: [{ kind: 'task.sent', engine: 'celery', task_id: 't', data: { f: 12.0 } }] } };
    const hmac = hmacHex(SECRET, quickEnvelopeText(frame, BINDING));
    const text = JSON.stringify({ ...frame, hmac }).replace('"f":12', '"f":12.0');
    const decoded = verifier.decode(text);
    if (decoded.kind !== 'decoded') throw new Error('expected a decoded frame');
    expect(decoded.batch!.records[0]!.data).toEqual({ f: 12 });
    expectFrameError(() => verifier.decodeFully(text), 'signature', /mismatch/);
  });
});
