// Next-run computation of svc's scheduler: cron in time zones across DST
// (spring forward and fall back in Europe/Berlin and America/New_York),
// interval, clocked, solar, and the DST flags of the "next runs" list.
import { describe, expect, test } from 'bun:test';
import { getTimes } from 'suncalc';
import { parseIsoMicros } from '../../src/lib/clock.ts';
import { nextRunAfter, nextRuns, parseSolar, upcomingRuns, zoned } from '../../src/schedules/next-run.ts';

const us = (iso: string) => parseIsoMicros(iso)!;
const utc = (iso: string | null) => (iso === null ? null : new Date(us(iso) / 1000).toISOString());
const runs = (kind: string, expression: string, timezone: string, from: string, n: number) =>
  nextRuns({ kind, expression, timezone }, us(from), n).map((r) => new Date(us(r) / 1000).toISOString());

describe('cron with a time zone', () => {
  test('Europe/Berlin, spring forward (2026-03-29 02:00 CET -> 03:00 CEST): a daily 02:30 that does not exist runs once, at the end of the gap', () => {
    expect(runs('cron', '30 2 * * *', 'Europe/Berlin', '2026-03-27T00:00:00Z', 4)).toEqual([
      '2026-03-27T01:30:00.000Z', // 02:30 CET
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: 02:30 was skipped by the clock
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  test('Europe/Berlin, spring forward: a daily 09:00 keeps its wall-clock time (the UTC hour moves)', () => {
    expect(runs('cron', '0 9 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', 2)).toEqual(['2026-03-28T08:00:00.000Z', '2026-03-29T07:00:00.000Z']);
  });

  test('Europe/Berlin, fall back (2026-10-25 03:00 CEST -> 02:00 CET): a daily 02:30 that happens twice runs once', () => {
    expect(runs('cron', '30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', 3)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST) only
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  test('Europe/Berlin, fall back: an hourly schedule runs every real hour through the repeated hour', () => {
    expect(runs('cron', '0 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 4)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
      '2026-10-25T03:00:00.000Z',
    ]);
  });

  test('America/New_York, spring forward (2026-03-08 02:00 EST -> 03:00 EDT)', () => {
    expect(runs('cron', '30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:30 does not exist)
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  test('America/New_York, fall back (2026-11-01 02:00 EDT -> 01:00 EST): 01:30 runs once; */30 runs every real half hour', () => {
    expect(runs('cron', '30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    expect(runs('cron', '*/30 * * * *', 'America/New_York', '2026-11-01T04:45:00Z', 5)).toEqual([
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T06:00:00.000Z', // 01:00 EST
      '2026-11-01T06:30:00.000Z', // 01:30 EST
      '2026-11-01T07:00:00.000Z', // 02:00 EST
    ]);
  });

  test('a run exactly at the "after" instant is not the next one; six fields give seconds', () => {
    expect(utc(nextRunAfter({ kind: 'cron', expression: '* * * * *', timezone: 'UTC' }, us('2026-05-01T10:00:00Z')))).toBe('2026-05-01T10:01:00.000Z');
    expect(utc(nextRunAfter({ kind: 'cron', expression: '*/15 * * * * *', timezone: 'UTC' }, us('2026-05-01T10:00:00.500Z')))).toBe('2026-05-01T10:00:15.000Z');
  });

  test('an unreadable expression or zone has no next run', () => {
    expect(nextRunAfter({ kind: 'cron', expression: 'not cron', timezone: 'UTC' }, us('2026-05-01T10:00:00Z'))).toBeNull();
    expect(nextRunAfter({ kind: 'cron', expression: '* * * * *', timezone: 'Mars/Olympus' }, us('2026-05-01T10:00:00Z'))).toBeNull();
  });
});

describe('interval', () => {
  test('counts from the anchor (a previous run or expectation), else from the instant given', () => {
    const s = { kind: 'interval', expression: '90', timezone: 'UTC' };
    expect(utc(nextRunAfter(s, us('2026-05-01T10:00:00Z')))).toBe('2026-05-01T10:01:30.000Z');
    expect(utc(nextRunAfter(s, us('2026-05-01T10:00:00Z'), us('2026-05-01T09:59:00Z')))).toBe('2026-05-01T10:00:30.000Z');
    expect(utc(nextRunAfter(s, us('2026-05-01T10:05:00Z'), us('2026-05-01T10:00:00Z')))).toBe('2026-05-01T10:06:00.000Z');
    // An anchor in the future is the next run.
    expect(utc(nextRunAfter(s, us('2026-05-01T10:00:00Z'), us('2026-05-01T10:00:10Z')))).toBe('2026-05-01T10:00:10.000Z');
    expect(utc(nextRunAfter({ ...s, last_run_at: '2026-05-01T09:59:30.000000+00:00' }, us('2026-05-01T10:00:00Z')))).toBe('2026-05-01T10:01:00.000Z');
  });

  test('runs follow each other by the interval, fractions kept; DST does not move them', () => {
    expect(runs('interval', '0.5', 'UTC', '2026-05-01T10:00:00Z', 3)).toEqual(['2026-05-01T10:00:00.500Z', '2026-05-01T10:00:01.000Z', '2026-05-01T10:00:01.500Z']);
    expect(runs('interval', '3600', 'Europe/Berlin', '2026-10-24T23:30:00Z', 3)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-25T02:30:00.000Z']);
    expect(nextRunAfter({ kind: 'interval', expression: '0', timezone: 'UTC' }, 0)).toBeNull();
    expect(nextRunAfter({ kind: 'interval', expression: 'PT30S', timezone: 'UTC' }, 0)).toBeNull();
  });
});

describe('clocked', () => {
  test('runs once at its instant, never again once it has run', () => {
    const s = { kind: 'clocked', expression: '2026-07-01T12:00:00+02:00', timezone: 'Europe/Berlin' };
    expect(utc(nextRunAfter(s, us('2026-06-30T00:00:00Z')))).toBe('2026-07-01T10:00:00.000Z');
    expect(nextRunAfter(s, us('2026-07-01T10:00:00Z'))).toBeNull();
    expect(nextRunAfter({ ...s, last_run_at: '2026-07-01T10:00:00.000000+00:00' }, us('2026-06-30T00:00:00Z'))).toBeNull();
    expect(runs('clocked', s.expression, 'UTC', '2026-06-30T00:00:00Z', 5)).toEqual(['2026-07-01T10:00:00.000Z']);
    expect(nextRunAfter({ kind: 'clocked', expression: 'tomorrow', timezone: 'UTC' }, 0)).toBeNull();
  });
});

describe('solar', () => {
  test('the expression is "<event> <latitude> <longitude>" with Celery\'s event names', () => {
    expect(parseSolar('sunrise 52.52 13.405')).toEqual({ event: 'sunrise', latitude: 52.52, longitude: 13.405 });
    expect(parseSolar('dusk_civil,-33.86,151.21')).toEqual({ event: 'dusk_civil', latitude: -33.86, longitude: 151.21 });
    expect(parseSolar('sunrise')).toBeNull(); // an adapter's entry without coordinates: not computable here
    expect(parseSolar('moonrise 1 2')).toBeNull();
    expect(parseSolar('sunrise 91 0')).toBeNull();
  });

  test('sunrise and sunset in Berlin follow suncalc, day after day, in whole seconds', () => {
    const from = '2026-06-20T12:00:00Z';
    const got = runs('solar', 'sunrise 52.52 13.405', 'Europe/Berlin', from, 3);
    const expected = [21, 22, 23].map((d) => new Date(Math.floor(getTimes(new Date(`2026-06-${d}T12:00:00Z`), 52.52, 13.405).sunrise!.getTime() / 1000) * 1000).toISOString());
    expect(got).toEqual(expected);
    // Sunrise in Berlin near the solstice is about 02:43 UTC (04:43 CEST).
    expect(got[0]!.slice(0, 14)).toBe('2026-06-21T02:');
    const sunset = runs('solar', 'sunset 52.52 13.405', 'Europe/Berlin', from, 1)[0]!;
    expect(sunset.slice(0, 13)).toBe('2026-06-20T19'); // ~21:33 CEST, later the same day
    // Solar noon in Greenwich is within minutes of 12:00 UTC.
    const noon = new Date(runs('solar', 'solar_noon 51.48 0', 'UTC', '2026-03-01T00:00:00Z', 1)[0]!).getTime();
    expect(Math.abs(noon - Date.parse('2026-03-01T12:00:00Z'))).toBeLessThan(20 * 60_000);
  });

  test('the runs strictly follow each other (no repeat within a second)', () => {
    const r = runs('solar', 'sunset -33.86 151.21', 'Australia/Sydney', '2026-01-01T00:00:00Z', 10);
    expect(r).toHaveLength(10);
    for (let i = 1; i < r.length; i++) {
      const gap = Date.parse(r[i]!) - Date.parse(r[i - 1]!);
      expect(gap).toBeGreaterThan(23 * 3600_000);
      expect(gap).toBeLessThan(25 * 3600_000);
    }
  });

  test('polar night: no sunrise for weeks, then the first one', () => {
    // Tromsø (69.65 N): the sun does not rise from late November to mid January.
    const first = runs('solar', 'sunrise 69.65 18.96', 'Europe/Oslo', '2026-12-01T00:00:00Z', 1)[0]!;
    expect(Date.parse(first)).toBeGreaterThan(Date.parse('2027-01-05T00:00:00Z'));
    expect(Date.parse(first)).toBeLessThan(Date.parse('2027-01-25T00:00:00Z'));
  });
});

describe('upcoming runs in two zones, with DST transitions flagged', () => {
  test('wall-clock time and offset of an instant in a zone', () => {
    expect(zoned(Date.parse('2026-03-29T00:59:59Z'), 'Europe/Berlin')).toEqual({ local: '2026-03-29 01:59:59', offset: '+01:00' });
    expect(zoned(Date.parse('2026-03-29T01:00:00Z'), 'Europe/Berlin')).toEqual({ local: '2026-03-29 03:00:00', offset: '+02:00' });
    expect(zoned(Date.parse('2026-03-29T01:00:00Z'), 'UTC')).toEqual({ local: '2026-03-29 01:00:00', offset: '+00:00' });
    expect(zoned(Date.parse('2026-11-01T06:30:00Z'), 'America/New_York')).toEqual({ local: '2026-11-01 01:30:00', offset: '-05:00' });
  });

  test('a daily schedule across the Berlin spring forward: the first run after the change is flagged, in that zone only', () => {
    const up = upcomingRuns({ kind: 'cron', expression: '0 9 * * *', timezone: 'Europe/Berlin' }, us('2026-03-27T12:00:00Z'), 4, ['UTC', 'Europe/Berlin']);
    expect(up.map((r) => [utc(r.at), r.dst_transition])).toEqual([
      ['2026-03-28T08:00:00.000Z', false],
      ['2026-03-29T07:00:00.000Z', true],
      ['2026-03-30T07:00:00.000Z', false],
      ['2026-03-31T07:00:00.000Z', false],
    ]);
    expect(up[1]!.zones).toEqual([
      { zone: 'UTC', local: '2026-03-29 07:00:00', offset: '+00:00', dst_change: null },
      { zone: 'Europe/Berlin', local: '2026-03-29 09:00:00', offset: '+02:00', dst_change: '+01:00 → +02:00' },
    ]);
  });

  test('a New York schedule seen from Berlin: both zones change on different dates, each flagged', () => {
    const up = upcomingRuns({ kind: 'cron', expression: '0 12 * * 0', timezone: 'America/New_York' }, us('2026-10-17T00:00:00Z'), 4, ['America/New_York', 'Europe/Berlin']);
    // Sundays 18, 25 Oct (Berlin falls back on the 25th), 1 Nov (New York falls back), 8 Nov.
    expect(up.map((r) => r.zones.map((z) => z.dst_change))).toEqual([
      [null, null],
      [null, '+02:00 → +01:00'],
      ['-04:00 → -05:00', null],
      [null, null],
    ]);
    expect(up.map((r) => r.zones[0]!.local.slice(11))).toEqual(['12:00:00', '12:00:00', '12:00:00', '12:00:00']);
  });

  test('unknown zones are left out; a quarterly schedule always shows a transition in five runs', () => {
    const up = upcomingRuns({ kind: 'cron', expression: '0 3 1 */3 *', timezone: 'Europe/Berlin' }, us('2026-05-10T00:00:00Z'), 5, ['Europe/Berlin', 'Nowhere/Land']);
    expect(up).toHaveLength(5);
    expect(up[0]!.zones.map((z) => z.zone)).toEqual(['Europe/Berlin']);
    expect(up.filter((r) => r.dst_transition).length).toBeGreaterThanOrEqual(1);
  });
});
