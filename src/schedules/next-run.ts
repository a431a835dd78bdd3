// When a schedule is next expected to run, for the misfire detector and for
// schedules a scheduler reported without a next run: interval (seconds, from
// the last run or the previous expectation), cron (five or six fields, in the
// schedule's time zone, DST handled by croner), clocked (one ISO 8601
// instant). Solar and anything unreadable have no expectation (null): such a
// schedule is never reported as misfired.
import { Cron } from 'croner';
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';

export const KINDS = ['cron', 'interval', 'clocked', 'solar'] as const;
export type Kind = (typeof KINDS)[number];

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

/** The first expected run strictly after `afterMicros`; `anchor` (µs) is a
 * previous run or expectation intervals count from. Null when none is known. */
export function nextRunAfter(
  s: { kind: string; expression: string; timezone: string; last_run_at?: string | null },
  afterMicros: number,
  anchorMicros: number | null = null,
): string | null {
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
    default:
      return null;
  }
}
