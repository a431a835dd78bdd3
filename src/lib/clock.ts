// Time comes through this one module so tests can drive wait loops, rate
// windows and token lifetimes without sleeping (see tests/unit/clock.test.ts).

export interface Clock {
  /** Microseconds since the Unix epoch (fits a double until year 2255). */
  nowMicros(): number;
  /** Resolves after `ms` milliseconds of this clock's time. */
  sleep(ms: number): Promise<void>;
}

// Date.now() only has millisecond resolution; anchor it once and advance with
// the monotonic high-resolution timer so timestamps carry real microseconds and
// never run backwards within a process.
const anchorMicros = Date.now() * 1000;
const anchorHr = performance.now();

export const systemClock: Clock = {
  nowMicros: () => Math.floor(anchorMicros + (performance.now() - anchorHr) * 1000),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

let current: Clock = systemClock;

export function setClock(clock: Clock): void {
  current = clock;
}

export function resetClock(): void {
  current = systemClock;
}

export const nowMicros = (): number => current.nowMicros();
export const nowMs = (): number => Math.floor(current.nowMicros() / 1000);
export const sleep = (ms: number): Promise<void> => current.sleep(ms);

// Agents send hundreds of timestamps a second, nearly all within the same
// second or hour: the calendar part is formatted (or validated) once and kept.
let lastSecond = NaN;
let lastSecondText = '';

/** ISO 8601 UTC with six fractional digits and an explicit offset: the one
 * timestamp text used in storage and on the wire. Fixed width, so the text
 * sorts the same way as the instant in both SQLite and PostgreSQL. */
export function isoMicros(micros: number = nowMicros()): string {
  const second = Math.floor(micros / 1_000_000);
  if (second !== lastSecond) {
    lastSecondText = new Date(second * 1000).toISOString().slice(0, 20); // 2026-11-22T05:31:24.
    lastSecond = second;
  }
  return `${lastSecondText}${String(micros - second * 1_000_000).padStart(6, '0')}+00:00`;
}

const hourStarts = new Map<string, number>();
const DIGIT_POSITIONS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const isDigitAt = (text: string, i: number): boolean => {
  const c = text.charCodeAt(i);
  return c >= 0x30 && c <= 0x39;
};
const twoDigits = (text: string, i: number): number => (text.charCodeAt(i) - 0x30) * 10 + text.charCodeAt(i + 1) - 0x30;

/** Epoch microseconds of `YYYY-MM-DDTHH:MM:SS[.f{1,6}]` followed by `Z` or
 * `+00:00` (what agents and this service write), without a regex or a Date;
 * undefined for any other text (or an invalid calendar hour), which the full
 * parsers then judge. They read every text this accepts the same way. */
export function utcMicrosFast(text: string): number | undefined {
  const n = text.length;
  let end: number;
  if (text.charCodeAt(n - 1) === 0x5a /* Z */) end = n - 1;
  else if (text.endsWith('+00:00')) end = n - 6;
  else return undefined;
  if (end < 19 || end > 26 || text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':') return undefined;
  for (const i of DIGIT_POSITIONS) if (!isDigitAt(text, i)) return undefined;
  let frac = 0;
  if (end > 19) {
    if (text[19] !== '.' || end === 20) return undefined;
    for (let i = 20; i < 26; i++) {
      if (i < end && !isDigitAt(text, i)) return undefined;
      frac = frac * 10 + (i < end ? text.charCodeAt(i) - 0x30 : 0);
    }
  }
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  if (minute > 59 || second > 59) return undefined;
  const hour = text.slice(0, 13);
  let start = hourStarts.get(hour);
  if (start === undefined) {
    // Valid only if the calendar round-trips (no Feb 30, no hour 24) and the year is not 0000.
    const ms = Date.parse(`${hour}:00:00Z`);
    if (Number.isNaN(ms) || hour.startsWith('0000') || new Date(ms).toISOString().slice(0, 13) !== hour) return undefined;
    if (hourStarts.size >= 256) hourStarts.clear();
    hourStarts.set(hour, (start = ms * 1000));
  }
  return start + (minute * 60 + second) * 1_000_000 + frac;
}

export const nowIso = (): string => isoMicros(nowMicros());

/** Parses an ISO 8601 timestamp (any offset, up to microseconds) into epoch
 * microseconds; null when the text is not a timestamp with a zone. */
export function parseIsoMicros(text: string): number | null {
  const fast = utcMicrosFast(text);
  if (fast !== undefined) return fast;
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})$/i.exec(text);
  if (!m) return null;
  const [, date, hh, mi, ss, frac = '', zone] = m;
  const zoneText = zone!.toUpperCase() === 'Z' ? 'Z' : zone!.length === 5 ? `${zone!.slice(0, 3)}:${zone!.slice(3)}` : zone!;
  const ms = Date.parse(`${date}T${hh}:${mi}:${ss}${zoneText}`);
  if (Number.isNaN(ms)) return null;
  const micros = Number((frac + '000000').slice(0, 6));
  return ms * 1000 + micros;
}

/** A clock tests advance by hand. */
export class ManualClock implements Clock {
  private waiters: { at: number; resolve: () => void }[] = [];
  constructor(private micros: number = Date.UTC(2026, 0, 1) * 1000) {}
  nowMicros(): number {
    return this.micros;
  }
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ at: this.micros + ms * 1000, resolve }));
  }
  advance(ms: number): void {
    this.micros += Math.round(ms * 1000);
    const due = this.waiters.filter((w) => w.at <= this.micros);
    this.waiters = this.waiters.filter((w) => w.at > this.micros);
    for (const w of due) w.resolve();
  }
}
