import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { resetClock, setClock, type ManualClock } from '../../src/lib/clock.ts';
import { toJsonValue } from '../../src/transport/json-convert.ts';
import type { JsonObject } from '../../src/transport/json.ts';
import { MAX_NONCE_ENTRIES, ReplayGuard } from '../../src/transport/replay.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { formatFrameTimestamp, parseFrameTimestamp } from '../../src/transport/timestamp.ts';
import { FrameVerifier } from '../../src/transport/verifier.ts';
import { agentFrame, BINDING, expectFrameError, HEARTBEAT_PAYLOAD, newClock, SECRET, T0 } from './transport-fixtures.ts';

let clock: ManualClock;
let verifier: FrameVerifier;
beforeEach(() => {
  clock = newClock();
  setClock(clock);
  verifier = new FrameVerifier(SECRET, BINDING);
});
afterEach(() => resetClock());

const seqOf = (text: string): bigint | null => {
  const frame = verifier.verify(text);
  return frame.kind === 'signed' ? frame.seq : null;
};
const SECOND = 1_000_000;

describe('frame timestamps', () => {
  test('parses offsets, Z and fractions to epoch microseconds', () => {
    const base = Date.UTC(2026, 4, 1, 12, 0, 0) * 1000;
    const cases: [string, number][] = [
      ['2026-05-01T12:00:00Z', base],
      ['2026-05-01T12:00:00.123456Z', base + 123456],
      ['2026-05-01T12:00:00.123Z', base + 123000],
      ['2026-05-01T12:00:00.1234567891Z', base + 123456],
      ['2026-05-01T12:00:00,5+00:00', base + 500000],
      ['2026-05-01T12:00:00.123456+00:00', base + 123456],
      ['2026-05-01 12:00:00+0000', base],
      ['2026-05-01t12:00:00Z', base],
      ['2026-05-01T14:30:00+02:30', base],
      ['2026-05-01T09:00:00-03', base],
      ['2026-05-01T11:59:59.5-00:00:00.5', base],
      ['2026-05-01T12:00Z', base],
      ['2026-05-01T12Z', base],
      ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29) * 1000],
      ['0001-01-01T00:00:00Z', -62135596800 * SECOND],
    ];
    for (const [text, micros] of cases) expect([text, parseFrameTimestamp(text)]).toEqual([text, micros]);
  });

  test('naive, invalid and unsupported forms are null', () => {
    const bad = [
      '2026-05-01T12:00:00',
      '2026-05-01T12:00:00.123456',
      '2026-05-01',
      '2026-05-01T24:00:00Z',
      '2026-02-30T00:00:00Z',
      '2027-02-29T00:00:00Z',
      '2026-05-01T12:00:60Z',
      '2026-05-01T12:60:00Z',
      '2026-13-01T12:00:00Z',
      '2026-05-01T12:00:00+24:00',
      '2026-05-01T12:00:00+01:60',
      '2026-05-01T12:00:00z',
      '2026-05-01T12:00:00 Z',
      '0000-01-01T00:00:00Z',
      '20260501T120000Z',
      '1777636800',
      '',
    ];
    for (const text of bad) expect([text, parseFrameTimestamp(text)]).toEqual([text, null]);
  });

  test('formats UTC with six fractional digits and Z', () => {
    expect(formatFrameTimestamp(T0)).toBe('2026-05-01T12:00:00.123456Z');
    expect(formatFrameTimestamp(Date.UTC(2026, 4, 1) * 1000)).toBe('2026-05-01T00:00:00.000000Z');
    expect(formatFrameTimestamp(Date.UTC(2026, 4, 1) * 1000 + 7)).toBe('2026-05-01T00:00:00.000007Z');
    expect(parseFrameTimestamp(formatFrameTimestamp(T0 + 1))).toBe(T0 + 1);
  });
});

describe('freshness', () => {
  test('ts within 60 s either way is accepted, beyond is refused', () => {
    expect(seqOf(agentFrame({ seq: 1, ts: formatFrameTimestamp(T0 - 60 * SECOND) }))).toBe(1n);
    expect(seqOf(agentFrame({ seq: 2, ts: formatFrameTimestamp(T0 + 60 * SECOND) }))).toBe(2n);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 3, ts: formatFrameTimestamp(T0 - 60 * SECOND - 1) })), 'replay', /skew/);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 3, ts: formatFrameTimestamp(T0 + 60 * SECOND + 1) })), 'replay', /skew/);
    expect(verifier.lastSeq).toBe(2n);
  });

  test('a frame held back for 61 s goes stale', () => {
    const agent = new FrameSigner(SECRET, BINDING);
    const held = agent.sign('heartbeat', 'hb_1', HEARTBEAT_PAYLOAD);
    clock.advance(61_000);
    expectFrameError(() => verifier.verify(held), 'replay', /^frame ts outside the skew window$/);
    expect(seqOf(agent.sign('heartbeat', 'hb_2', HEARTBEAT_PAYLOAD))).toBe(2n);
  });

  test('other offsets count by instant, not by text', () => {
    expect(seqOf(agentFrame({ ts: '2026-05-01T14:00:00.123456+02:00' }))).toBe(1n);
  });

  test('ts must be present, a string, and carry an offset', () => {
    expectFrameError(() => verifier.verify(agentFrame({ ts: undefined })), 'replay', /missing ts/);
    expectFrameError(() => verifier.verify(agentFrame({ ts: null })), 'replay', /missing ts/);
    expectFrameError(() => verifier.verify(agentFrame({ ts: 1777636800 })), 'replay', /string/);
    expectFrameError(() => verifier.verify(agentFrame({ ts: '2026-05-01T12:00:00.123456' })), 'replay', /offset/);
    expectFrameError(() => verifier.verify(agentFrame({ ts: 'yesterday' })), 'replay', /offset/);
    expect(verifier.lastSeq).toBe(0n);
  });
});

describe('seq', () => {
  test('must be an integer >= 1', () => {
    for (const seq of [0, -1, '1', 1.5, true, null, undefined]) {
      expectFrameError(() => verifier.verify(agentFrame({ seq })), 'replay', /^frame envelope missing valid seq$/);
    }
    expectFrameError(() => verifier.verify(agentFrame({}).replace('"seq":1,', '"seq":1.0,')), 'signature');
    expect(verifier.lastSeq).toBe(0n);
  });

  test('must strictly increase; gaps are fine', () => {
    expect(seqOf(agentFrame({ seq: 1 }))).toBe(1n);
    expect(seqOf(agentFrame({ seq: 5 }))).toBe(5n);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 5 })), 'replay', /^frame seq not greater than the last accepted$/);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 4 })), 'replay', /seq/);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 1 })), 'replay', /seq/);
    expect(seqOf(agentFrame({ seq: 6 }))).toBe(6n);
  });

  test('seq beyond 2^64 is compared exactly', () => {
    expect(seqOf(agentFrame({ seq: 2n ** 64n + 1n }))).toBe(18446744073709551617n);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 2n ** 64n })), 'replay', /seq/);
    expect(seqOf(agentFrame({ seq: 2n ** 64n + 2n }))).toBe(18446744073709551618n);
  });

  test('replaying the exact same text is refused', () => {
    const text = agentFrame();
    expect(seqOf(text)).toBe(1n);
    expectFrameError(() => verifier.verify(text), 'replay', /seq/);
  });

  test('each verifier (session) keeps its own state', () => {
    const text = agentFrame();
    expect(seqOf(text)).toBe(1n);
    expect(new FrameVerifier(SECRET, BINDING).verify(text).kind).toBe('signed');
  });
});

describe('nonce', () => {
  test('must be a non-empty string', () => {
    expectFrameError(() => verifier.verify(agentFrame({ nonce: undefined })), 'replay', /^frame envelope missing nonce$/);
    expectFrameError(() => verifier.verify(agentFrame({ nonce: '' })), 'replay', /nonce/);
    expectFrameError(() => verifier.verify(agentFrame({ nonce: 42 })), 'replay', /nonce/);
    expect(verifier.lastSeq).toBe(0n);
  });

  test('a nonce seen in the last 180 s is refused even with a higher seq', () => {
    expect(seqOf(agentFrame({ seq: 1, nonce: 'reused-nonce' }))).toBe(1n);
    clock.advance(179_000);
    expectFrameError(() => verifier.verify(agentFrame({ seq: 2, nonce: 'reused-nonce' })), 'replay', /^frame nonce replayed$/);
    clock.advance(1_000); // exactly 180 s: still remembered
    expectFrameError(() => verifier.verify(agentFrame({ seq: 2, nonce: 'reused-nonce' })), 'replay', /nonce/);
    clock.advance(1); // just over: forgotten
    expect(seqOf(agentFrame({ seq: 2, nonce: 'reused-nonce' }))).toBe(2n);
  });

  test('the cache keeps the newest 4096 nonces', () => {
    const guard = new ReplayGuard();
    const stamp = (seq: number, nonce: string): JsonObject => toJsonValue({ seq, nonce, ts: formatFrameTimestamp(T0) }) as JsonObject;
    for (let i = 1; i <= MAX_NONCE_ENTRIES + 1; i++) guard.accept(stamp(i, `n${i}`));
    let seq = MAX_NONCE_ENTRIES + 1;
    // n1 was evicted by the 4097th entry; n3 is still there.
    expect(guard.accept(stamp(++seq, 'n1')).nonce).toBe('n1');
    expectFrameError(() => guard.accept(stamp(++seq, 'n3')), 'replay', /nonce/);
    expectFrameError(() => guard.accept(stamp(++seq, `n${MAX_NONCE_ENTRIES + 1}`)), 'replay', /nonce/);
    expect(guard.lastSeq).toBe(BigInt(MAX_NONCE_ENTRIES + 2));
  });

  test('over many frames the cache still holds exactly the newest 4096 (its queue compacts as it goes)', () => {
    const guard = new ReplayGuard();
    const stamp = (seq: number, nonce: string): JsonObject => toJsonValue({ seq, nonce, ts: formatFrameTimestamp(T0) }) as JsonObject;
    const total = 3 * MAX_NONCE_ENTRIES + 7;
    for (let i = 1; i <= total; i++) guard.accept(stamp(i, `n${i}`));
    let seq = total;
    const oldestKept = total - MAX_NONCE_ENTRIES + 1;
    expectFrameError(() => guard.accept(stamp(++seq, `n${oldestKept}`)), 'replay', /nonce/);
    expectFrameError(() => guard.accept(stamp(++seq, `n${total}`)), 'replay', /nonce/);
    expect(guard.accept(stamp(++seq, `n${oldestKept - 1}`)).nonce).toBe(`n${oldestKept - 1}`);
  });

  test('checks run in z4j order: ts before seq before nonce', () => {
    expect(seqOf(agentFrame({ seq: 3, nonce: 'first' }))).toBe(3n);
    // Stale and old seq and reused nonce: the ts complaint wins.
    const stale = agentFrame({ seq: 2, nonce: 'first', ts: formatFrameTimestamp(T0 - 90 * SECOND) });
    expectFrameError(() => verifier.verify(stale), 'replay', /skew/);
    // Old seq and reused nonce: the seq complaint wins.
    expectFrameError(() => verifier.verify(agentFrame({ seq: 2, nonce: 'first' })), 'replay', /seq/);
  });
});
