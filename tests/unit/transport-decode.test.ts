// Frame decoding in worker threads gives what decoding inline gives: the same
// decoded frames (big integers, refusals, handshakes and event records
// included), admitted by the same replay guard with the same answers.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { resetClock, setClock, nowMicros } from '../../src/lib/clock.ts';
import { setLogDestination, setLogLevel } from '../../src/lib/log.ts';
import { DecodePool, fromWire, toWire, type Decoded, type DecodedUpload } from '../../src/transport/decode-pool.ts';
import { FrameError } from '../../src/transport/errors.ts';
import { OUTBOUND_SIGNED_TYPES } from '../../src/transport/frames.ts';
import { FrameVerifier } from '../../src/transport/verifier.ts';
import { agentFrame, BINDING, newClock, SECRET } from './transport-fixtures.ts';

beforeEach(() => setClock(newClock()));
afterEach(() => resetClock());

const event = (taskId: string) => ({
  id: '5f0c6c1e-9a57-4f7e-8d43-1c2b3a4d5e6f',
  kind: 'task.succeeded',
  engine: 'celery',
  task_id: taskId,
  occurred_at: '2026-05-01T12:00:00.000000+00:00',
  data: { task_name: 'app.add', result: 3, big: 2n ** 70n, text: 'caf\u00e9 \u2028', nested: { list: [1, 2.5, null, true] } },
});

/** A mix of everything an upload can hold. */
function upload(): string[] {
  return [
    agentFrame({ type: 'event_batch', id: 'ev_1', seq: 1, payload: { events: [event('t-1'), event('t-2'), { kind: 'task.sent' }] } }),
    agentFrame({ seq: 2, payload: { buffer_size: 2n ** 64n, adapter_health: {} } }), // a big integer in the payload
    agentFrame({ type: 'event_batch', id: 'ev_3', seq: 3, payload: { events: 'not a list' } }),
    'not json',
    JSON.stringify({ v: 2, id: 'hello_0123456789abcdef', ts: null, type: 'hello', payload: { protocol_version: '2' } }),
    agentFrame({ seq: 4 }, { hmac: 'ab'.repeat(32) }),
    agentFrame({ seq: '5' }), // a seq the replay guard refuses
    agentFrame({ type: 'event_batch', id: 'ev_6', seq: 6, payload: { events: [event('t-6')], note: 'kept' } }),
  ];
}

/** Admits each decoded frame in order with a fresh guard; refusals become their messages. */
function admitAll(decoded: Decoded[]): unknown[] {
  const verifier = new FrameVerifier(SECRET, BINDING);
  return decoded.map((d) => {
    try {
      if (d instanceof FrameError) throw d;
      return verifier.admit(d);
    } catch (e) {
      if (e instanceof FrameError) return `${e.kind}: ${e.message}`;
      throw e;
    }
  });
}

describe('the thread wire', () => {
  const decodeAll = (texts: string[]) => {
    const verifier = new FrameVerifier(SECRET, BINDING);
    const now = nowMicros();
    return texts.map((text) => {
      try {
        return verifier.decode(text, now);
      } catch (e) {
        const error = e as FrameError;
        return { kind: 'refused' as const, error: error.kind, message: error.message };
      }
    });
  };

  test('toWire then fromWire gives the decoded frames back exactly', () => {
    const results = decodeAll(upload());
    const { wire, cloned } = toWire(results);
    // Only what JSON cannot carry as is goes by structured clone: the big-integer
    // heartbeat, the refusals, the handshake and the string seq.
    expect(cloned.map((r) => r.kind)).toEqual(['decoded', 'refused', 'handshake', 'refused', 'decoded']);
    expect(fromWire(wire, structuredClone(cloned))).toEqual(results);
  });

  test('an upload without big integers is written in one go, the same way', () => {
    const results = decodeAll(upload().filter((_, i) => i !== 1));
    const { wire, cloned } = toWire(results);
    expect(cloned.map((r) => r.kind)).toEqual(['refused', 'handshake', 'refused', 'decoded']);
    expect(wire.startsWith('[["event_batch","ev_1","1",')).toBe(true);
    expect(fromWire(wire, structuredClone(cloned))).toEqual(results);
  });
});

describe('the pool', () => {
  test('decodes an upload in a thread exactly as inline, and the guard answers the same', async () => {
    const pool = new DecodePool(1);
    pool.minFrames = 1;
    const texts = upload();
    const verifier = new FrameVerifier(SECRET, BINDING);
    const now = nowMicros();
    const all = (get: DecodedUpload) => texts.map((_, k) => get(k));
    const inThread = all(await pool.decodeUpload(verifier, texts, 'session-a', now));
    expect(pool.threaded).toBe(1);
    pool.minFrames = Infinity;
    const inline = all(await pool.decodeUpload(verifier, texts, 'session-a', now));
    expect(pool.threaded).toBe(1);
    expect(inThread).toEqual(inline);
    const admitted = admitAll(inThread);
    expect(admitted).toEqual(admitAll(inline));
    // Spot checks of what the router gets.
    expect(admitted[0]).toMatchObject({ kind: 'signed', type: 'event_batch', seq: 1n, payload: {}, batch: { dropped: 1 } });
    expect((admitted[0] as { batch: { records: { taskId: string; data: unknown }[] } }).batch.records.map((r) => r.taskId)).toEqual(['t-1', 't-2']);
    expect((admitted[0] as { batch: { records: { data: { big: unknown } }[] } }).batch.records[0]!.data.big).toBe('1180591620717411303424');
    expect(admitted[1]).toMatchObject({ type: 'heartbeat', payload: { buffer_size: 2n ** 64n } });
    expect(admitted[2]).toMatchObject({ type: 'event_batch', batch: null });
    expect(admitted[3]).toMatch(/^malformed: frame is not valid JSON/);
    expect(admitted[4]).toMatchObject({ kind: 'handshake', type: 'hello' });
    expect(admitted[5]).toBe('signature: hmac signature mismatch');
    expect(admitted[6]).toBe('replay: frame envelope missing valid seq');
    expect(admitted[7]).toMatchObject({ seq: 6n, payload: { note: 'kept' }, batch: { records: [{ taskId: 't-6' }] } });
    pool.close();
  });

  test("a thread decodes with the verifier's options (here: the frame types a server sends)", async () => {
    const pool = new DecodePool(1);
    pool.minFrames = 1;
    const verifier = new FrameVerifier(SECRET, BINDING, { accept: OUTBOUND_SIGNED_TYPES });
    const texts = [agentFrame({ type: 'command', id: 'cmd_1', payload: { action: 'cancel_task' } }), agentFrame({ seq: 2 })];
    const get = await pool.decodeUpload(verifier, texts, 'session-d', nowMicros());
    expect(pool.threaded).toBe(1);
    expect(get(0)).toMatchObject({ kind: 'decoded', type: 'command' });
    expect(get(1)).toMatchObject({ kind: 'protocol', message: 'unexpected frame type for this direction' });
    pool.close();
  });

  test('inline, a frame is decoded only when asked for', async () => {
    const pool = new DecodePool(1);
    const verifier = new FrameVerifier(SECRET, BINDING);
    const decodedTexts: string[] = [];
    const decode = verifier.decode.bind(verifier);
    verifier.decode = (text, now) => {
      decodedTexts.push(text);
      return decode(text, now);
    };
    const texts = upload();
    const get = await pool.decodeUpload(verifier, texts, 'session-c', nowMicros());
    expect(decodedTexts).toEqual([]);
    expect(get(5)).toBeInstanceOf(FrameError);
    expect(decodedTexts).toEqual([texts[5]!]);
    expect(pool.threaded).toBe(0);
    pool.close();
  });

  test('a thread that ends under an upload: that upload and later ones decode inline', async () => {
    const pool = new DecodePool(1);
    pool.minFrames = 1;
    const verifier = new FrameVerifier(SECRET, BINDING);
    const texts = upload();
    const all = (get: DecodedUpload) => texts.map((_, k) => get(k));
    const expected = all(await pool.decodeUpload(verifier, texts, 's', nowMicros()));
    expect(pool.threaded).toBe(1);
    const lines: string[] = [];
    setLogDestination({ write: (l: string) => void lines.push(l) } as never);
    setLogLevel('error');
    const pending = pool.decodeUpload(verifier, texts, 's', nowMicros());
    (pool as unknown as { workers: Worker[] }).workers[0]!.terminate(); // not through close()
    const summary = (ds: Decoded[]) => ds.map((d) => (d instanceof FrameError ? d.message : d.kind));
    try {
      expect(summary(all(await pending))).toEqual(summary(expected));
    } finally {
      setLogLevel('silent');
    }
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['a frame decoding thread failed; decoding inline from now on']);
    expect(all(await pool.decodeUpload(verifier, texts, 's', nowMicros()))).toHaveLength(texts.length);
    expect(pool.threaded).toBe(1);
  });

  test('a closed pool (or one whose thread failed) decodes inline', async () => {
    const pool = new DecodePool(1);
    pool.minFrames = 1;
    pool.close();
    const texts = upload();
    const verifier = new FrameVerifier(SECRET, BINDING);
    const get = await pool.decodeUpload(verifier, texts, 'session-b', nowMicros());
    const decoded = texts.map((_, k) => get(k));
    expect(pool.threaded).toBe(0);
    expect(admitAll(decoded)[7]).toMatchObject({ seq: 6n, batch: { records: [{ taskId: 't-6' }] } });
  });
});
