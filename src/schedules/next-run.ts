// When a schedule runs next, for svc's own scheduler (`svc scheduler`), the
// misfire detector, schedules a scheduler reported without a next run, and the
// dashboard's "next five runs":
//   - interval: a positive number of seconds, counted from the last run or the
//     previous expectation (the anchor);
//   - cron: five or six fields (croner), in the schedule's IANA time zone. DST:
//     a local time that does not exist (spring forward) runs at the end of the
//     gap, once; a local time that happens twice (fall back) runs once, at its
//     first occurrence; expressions with wildcard hours (`*/30 * * * *`) keep
//     running every real half hour through both transitions;
//   - clocked: one ISO 8601 instant with an offset, run once;
//   - solar: `<event> <latitude> <longitude>` with Celery's event names
//     (sunrise, sunset, solar_noon, dawn_civil, dusk_civil, dawn_nautical,
//     dusk_nautical, dawn_astronomical, dusk_astronomical), computed by
//     suncalc. An event that does not happen on a day (polar day or night)
//     is skipped; none within a year gives no next run.
// Anything unreadable has no next run (null): such a schedule is never fired
// by svc's scheduler and never reported as misfired.
import { Cron } from 'croner';
import { getTimes, type SunTimeName } from 'suncalc';
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';

export const KINDS = ['cron', 'interval', 'clocked', 'solar'] as const;
export type Kind = (typeof KINDS)[number];

/** What a next-run computation needs of a schedule. */
export interface Timing {
  kind: string;
  expression: string;
  timezone: string;
  last_run_at?: string | null;
}

/** Interval seconds of an `interval` expression ("30", "2.0", "PT30S" is not read). */
export function intervalSeconds(expression: string): number | null {
  const n = Number(expression.trim());
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** A cron expression croner accepts in the time zone, or the reason it does not. */
export function cronProblem(expression: string, timezone: string): string | null {
  try {
    new Cron(expression, { timezone, paused: true }).nextRun();
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Whether `timezone` is an IANA zone this runtime knows. */
export function knownZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

// --- solar ---------------------------------------------------------------------------

/** Celery's solar event names and the suncalc time each is. */
export const SOLAR_EVENTS: Record<string, SunTimeName | 'solarNoon'> = {
  dawn_astronomical: 'nightEnd',
  dawn_nautical: 'nauticalDawn',
  dawn_civil: 'dawn',
  sunrise: 'sunrise',
  solar_noon: 'solarNoon',
  sunset: 'sunset',
  dusk_civil: 'dusk',
  dusk_nautical: 'nauticalDusk',
  dusk_astronomical: 'night',
};

export interface Solar {
  event: string;
  latitude: number;
  longitude: number;
}

/** `<event> <latitude> <longitude>` (commas or spaces between), or null. */
export function parseSolar(expression: string): Solar | null {
  const parts = expression.trim().split(/[\s,]+/);
  if (parts.length !== 3) return null;
  const [event, lat, lon] = parts as [string, string, string];
  const latitude = Number(lat);
  const longitude = Number(lon);
  if (!Object.hasOwn(SOLAR_EVENTS, event.toLowerCase())) return null;
  if (!/^[+-]?\d+(\.\d+)?$/.test(lat) || !/^[+-]?\d+(\.\d+)?$/.test(lon)) return null;
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null;
  return { event: event.toLowerCase(), latitude, longitude };
}

export const solarProblem = (expression: string): string | null =>
  parseSolar(expression) ? null : `a solar schedule is "<event> <latitude> <longitude>" with event one of ${Object.keys(SOLAR_EVENTS).join(', ')}`;

const DAY_MS = 86_400_000;

/** The first time (whole seconds) the event happens strictly after `afterMs`, looking a year ahead. */
function nextSolar(s: Solar, afterMs: number): number | null {
  const name = SOLAR_EVENTS[s.event]!;
  const on = (day: number): number | null => {
    const at = getTimes(new Date(afterMs + day * DAY_MS), s.latitude, s.longitude)[name];
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) return null;
    const whole = Math.floor(at.getTime() / 1000) * 1000;
    return whole > afterMs ? whole : null;
  };
  // suncalc answers for the solar day around the date given (days centred on local solar noon), so
  // start a day early and, once an event is found, look at the next day too and take the earlier.
  for (let day = -1; day <= 370; day++) {
    const found = on(day);
    if (found === null) continue;
    const after = on(day + 1);
    return after === null ? found : Math.min(found, after);
  }
  return null;
}

// --- next run ---------------------------------------------------------------------------

/** The first expected run strictly after `afterMicros`; `anchor` (µs) is a
 * previous run or expectation intervals count from. Null when none is known. */
export function nextRunAfter(s: Timing, afterMicros: number, anchorMicros: number | null = null): string | null {
  switch (s.kind) {
    case 'interval': {
      const seconds = intervalSeconds(s.expression);
      if (seconds === null) return null;
      const step = Math.round(seconds * 1_000_000);
      const anchor = anchorMicros ?? (s.last_run_at ? parseIsoMicros(s.last_run_at) : null);
      if (anchor === null || anchor > afterMicros) return isoMicros(anchor ?? afterMicros + step);
      const k = Math.floor((afterMicros - anchor) / step) + 1;
      return isoMicros(anchor + k * step);
    }
    case 'cron': {
      try {
        // croner counts from whole milliseconds; a run at exactly `afterMicros` is not "after" it.
        const next = new Cron(s.expression, { timezone: s.timezone || 'UTC', paused: true }).nextRun(new Date(Math.floor(afterMicros / 1000)));
        return next ? isoMicros(next.getTime() * 1000) : null;
      } catch {
        return null;
      }
    }
    case 'clocked': {
      const at = parseIsoMicros(s.expression.trim());
      if (at === null || at <= afterMicros) return null;
      const last = s.last_run_at ? parseIsoMicros(s.last_run_at) : null;
      return last !== null && last >= at ? null : isoMicros(at);
    }
    case 'solar': {
      const solar = parseSolar(s.expression);
      if (!solar) return null;
      const at = nextSolar(solar, Math.floor(afterMicros / 1000));
      return at === null ? null : isoMicros(at * 1000);
    }
    default:
      return null;
  }
}

/** Up to `count` runs after `afterMicros`, each from the one before (intervals anchored at the first). */
export function nextRuns(s: Timing, afterMicros: number, count: number, first: string | null = null): string[] {
  const out: string[] = [];
  let next = first ?? nextRunAfter(s, afterMicros);
  while (next !== null && out.length < count) {
    out.push(next);
    const at = parseIsoMicros(next)!;
    next = nextRunAfter(s, at, s.kind === 'interval' ? at : null);
  }
  return out;
}

// --- time zones and DST -------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Wall-clock time (`YYYY-MM-DD HH:MM:SS`) and UTC offset (`+01:00`) of an instant in a zone. */
export function zoned(ms: number, zone: string): { local: string; offset: string } {
  const parts = Object.fromEntries(formatterOf(zone).formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  const name = parts.timeZoneName ?? 'GMT';
  const offset = name === 'GMT' ? '+00:00' : name.replace(/^GMT/, '');
  return { local: `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`, offset };
}

export interface UpcomingRun {
  /** The instant, UTC. */
  at: string;
  /** Wall-clock time and offset in each zone asked for, in order. */
  zones: { zone: string; local: string; offset: string; dst_change: string | null }[];
  /** Whether any zone's UTC offset changed since the previous run (or since `afterMicros` for the first). */
  dst_transition: boolean;
}

/** The next `count` runs with their local times in `zones`; a run whose zone offset differs from
 * the previous run's (a DST transition between them) names the change (`+01:00 → +02:00`). */
export function upcomingRuns(s: Timing, afterMicros: number, count: number, zones: string[], first: string | null = null): UpcomingRun[] {
  const wanted = [...new Set(zones.filter(knownZone))];
  let previous = wanted.map((z) => zoned(Math.floor(afterMicros / 1000), z).offset);
  return nextRuns(s, afterMicros, count, first).map((at) => {
    const ms = Math.floor(parseIsoMicros(at)! / 1000);
    const here = wanted.map((zone, i) => {
      const z = zoned(ms, zone);
      return { zone, local: z.local, offset: z.offset, dst_change: z.offset !== previous[i] ? `${previous[i]} → ${z.offset}` : null };
    });
    previous = here.map((z) => z.offset);
    return { at, zones: here, dst_transition: here.some((z) => z.dst_change !== null) };
  });
}
