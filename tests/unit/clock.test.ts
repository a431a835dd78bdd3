import { describe, expect, test } from 'bun:test';
import { isoMicros, ManualClock, parseIsoMicros, utcMicrosFast } from '../../src/lib/clock.ts';
import { parseFrameTimestamp } from '../../src/transport/timestamp.ts';

// Epoch µs computed independently of the module: Date.UTC for the calendar part.
const at = (y: number, mo: number, d: number, h: number, mi: number, s: number, micros = 0): number =>
  Date.UTC(y, mo - 1, d, h, mi, s) * 1000 + micros;

describe('timestamp texts', () => {
  test('isoMicros: fixed width, six fractional digits, +00:00, across second and hour changes', () => {
    const t = at(2026, 11, 22, 23, 59, 59, 999_999);
    expect(isoMicros(t)).toBe('2026-11-22T23:59:59.999999+00:00');
    expect(isoMicros(t + 1)).toBe('2026-11-23T00:00:00.000000+00:00');
    expect(isoMicros(t - 999_998)).toBe('2026-11-22T23:59:59.000001+00:00');
    expect(isoMicros(t)).toBe('2026-11-22T23:59:59.999999+00:00'); // back to a second seen before
    expect(isoMicros(at(1969, 12, 31, 23, 59, 59, 500_000))).toBe('1969-12-31T23:59:59.500000+00:00');
  });

  test('the fast reading agrees with both full parsers on what agents and svc write', () => {
    const cases: [string, number][] = [
      ['2026-11-22T12:48:48.824751Z', at(2026, 11, 22, 12, 48, 48, 824_751)],
      ['2026-11-22T12:48:48.824+00:00', at(2026, 11, 22, 12, 48, 48, 824_000)],
      ['2026-11-22T12:48:48+00:00', at(2026, 11, 22, 12, 48, 48)],
      ['2026-11-22T12:48:48Z', at(2026, 11, 22, 12, 48, 48)],
      ['2026-11-22T12:48:48.1Z', at(2026, 11, 22, 12, 48, 48, 100_000)],
      ['2024-02-29T00:00:00.000001Z', at(2024, 2, 29, 0, 0, 0, 1)],
      ['1999-12-31T23:59:59.999999+00:00', at(1999, 12, 31, 23, 59, 59, 999_999)],
    ];
    for (const [text, micros] of cases) {
      expect([text, utcMicrosFast(text)]).toEqual([text, micros]);
      expect([text, parseIsoMicros(text)]).toEqual([text, micros]);
      expect([text, parseFrameTimestamp(text)]).toEqual([text, micros]);
    }
  });

  test('anything else is left to the full parsers, which still read it', () => {
    const cases: [string, number][] = [
      ['2026-11-22T13:48:48.824751+01:00', at(2026, 11, 22, 12, 48, 48, 824_751)],
      ['2026-11-22 12:48:48Z', at(2026, 11, 22, 12, 48, 48)],
      ['2026-11-22t12:48:48z', at(2026, 11, 22, 12, 48, 48)],
      ['2026-11-22T12:48:48.1234567Z', at(2026, 11, 22, 12, 48, 48, 123_456)],
    ];
    for (const [text, micros] of cases) {
      expect([text, utcMicrosFast(text)]).toEqual([text, undefined]);
      expect([text, parseIsoMicros(text)]).toEqual([text, micros]);
    }
  });

  test('impossible times are refused by both parsers, never read by the fast one', () => {
    for (const text of ['2026-02-30T00:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T12:60:00Z', '2026-11-22T12:00:60Z', '2026-13-01T00:00:00Z', '0000-01-01T00:00:00Z']) {
      expect([text, utcMicrosFast(text)]).toEqual([text, undefined]);
      expect([text, parseFrameTimestamp(text)]).toEqual([text, null]);
    }
    for (const text of ['2026-11-22T12:48:48.Z', '2026-11-22T12:48:4xZ', '2026-11-22T12:48:48', '2026-11-22', '', 'Z', '+00:00']) {
      expect([text, utcMicrosFast(text)]).toEqual([text, undefined]);
      expect([text, parseIsoMicros(text)]).toEqual([text, null]);
    }
  });
});

describe('ManualClock', () => {
  test('sleepers wake when the clock is advanced past their time, not before', async () => {
    const clock = new ManualClock(at(2026, 1, 1, 0, 0, 0));
    const woke: number[] = [];
    void clock.sleep(100).then(() => woke.push(100));
    void clock.sleep(300).then(() => woke.push(300));
    clock.advance(99);
    await Promise.resolve();
    expect(woke).toEqual([]);
    clock.advance(1);
    await Promise.resolve();
    expect(woke).toEqual([100]);
    clock.advance(500);
    await Promise.resolve();
    expect(woke).toEqual([100, 300]);
    expect(clock.nowMicros()).toBe(at(2026, 1, 1, 0, 0, 0) + 600_000);
  });
});
