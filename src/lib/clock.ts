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

/** ISO 8601 UTC with six fractional digits and an explicit offset: the one
 * timestamp text used in storage and on the wire. Fixed width, so the text
 * sorts the same way as the instant in both SQLite and PostgreSQL. */
export function isoMicros(micros: number = nowMicros()): string {
  const ms = Math.floor(micros / 1000);
  const frac = String(micros - ms * 1000).padStart(3, '0');
  const base = new Date(ms).toISOString(); // 2026-11-22T05:31:24.123Z
  return `${base.slice(0, 23)}${frac}+00:00`;
}

export const nowIso = (): string => isoMicros(nowMicros());

/** Parses an ISO 8601 timestamp (any offset, up to microseconds) into epoch
 * microseconds; null when the text is not a timestamp with a zone. */
export function parseIsoMicros(text: string): number | null {
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
