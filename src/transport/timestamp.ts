// Frame `ts` values. Receivers parse them like z4j's replay guard does
// (datetime.fromisoformat after replacing `Z` with `+00:00`, offset required).
// We accept the calendar-date subset of that grammar, which covers what
// Pydantic, isoformat() and toISOString() emit; Python 3.11+ would also take
// week dates, the basic (no-dash) format, any separator character and a space
// before the offset. Every text accepted here means the same instant there.
import { utcMicrosFast } from '../lib/clock.ts';

const TS_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?(?:(Z)|([+-])(\d{2})(?:(:?)(\d{2})(?:\11(\d{2})(?:\.(\d{1,6}))?)?)?)$/;

const micros6 = (frac: string | undefined): number => Number(((frac ?? '') + '000000').slice(0, 6));

/** Epoch microseconds of an ISO-8601 timestamp with an offset; null when the
 * text is naive, invalid (hour 24, Feb 30, ...) or outside that subset. */
export function parseFrameTimestamp(text: string): number | null {
  const fast = utcMicrosFast(text);
  if (fast !== undefined) return fast;
  const m = TS_RE.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi = '0', s = '0', frac, zulu, sign, oh = '0', , om = '0', os = '0', ofrac] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (year < 1 || hour > 23 || minute > 59 || second > 59) return null;
  // setUTCFullYear rather than Date.UTC, which maps years 0-99 to 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  date.setUTCHours(hour, minute, second, 0);
  let offset = 0;
  if (zulu === undefined) {
    if (Number(oh) > 23 || Number(om) > 59 || Number(os) > 59) return null;
    offset = ((Number(oh) * 60 + Number(om)) * 60 + Number(os)) * 1_000_000 + micros6(ofrac);
    if (sign === '-') offset = -offset;
  }
  return date.getTime() * 1000 + micros6(frac) - offset;
}

/** `2026-05-01T12:00:00.123456Z`: UTC, always six fractional digits, `Z`. */
export function formatFrameTimestamp(micros: number): string {
  const whole = Math.floor(micros);
  const ms = Math.floor(whole / 1000);
  const rest = String(whole - ms * 1000).padStart(3, '0');
  return `${new Date(ms).toISOString().slice(0, 23)}${rest}Z`;
}
