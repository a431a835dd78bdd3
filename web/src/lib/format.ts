// Text for people: times, relative times, capitalised server messages.
//
// No Intl formatters here: the first Intl.RelativeTimeFormat, NumberFormat or DateTimeFormat a page creates
// costs Chromium 20 to 60 ms of ICU set-up (measured with bench/dashboard-render.ts), on every page load.
// Relative times are written in English like the rest of the dashboard; dates as local `2026-03-01 14:05`.

const STEPS: [string, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 7],
];

function relative(n: number, unit: string): string {
  if (n === 0) return 'now';
  if (unit === 'day' && Math.abs(n) === 1) return n < 0 ? 'yesterday' : 'tomorrow';
  const text = plural(Math.abs(n), unit);
  return n < 0 ? `${text} ago` : `in ${text}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Local date and time to the minute (`seconds` adds them): `2026-03-01 14:05`. */
function localTime(at: number, seconds = false): string {
  const d = new Date(at);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}${seconds ? `:${pad(d.getSeconds())}` : ''}`;
}

/** "3 minutes ago" / "in 6 days" within a week, a date beyond. */
export function when(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  let delta = (at - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(delta) < size) return relative(Math.round(delta), unit);
    delta /= size;
  }
  return localTime(at);
}

/** The exact local time, to the second (tooltips, summaries). */
export const fullTime = (iso: string): string => {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : localTime(at, true);
};

/** The local time of day, `14:05`. */
export const clockTime = (iso: string): string => {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : localTime(at).slice(11);
};

/** Server messages are lower-case sentence fragments; shown as sentences. */
export const sentence = (text: string): string => (text ? text.charAt(0).toUpperCase() + text.slice(1) : text);

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** A run time for people: "12 ms", "3.4 s", "2 min 5 s". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** A whole number with thousands separated: `12,345` (by hand, see above). */
export function thousands(n: number): string {
  const sign = n < 0 ? '-' : '';
  return sign + String(Math.round(Math.abs(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A share (0..1) as a percentage: `4.2 %`, `0 %`, `-` when there is none. */
export function percent(rate: number | null | undefined): string {
  if (rate === null || rate === undefined || !Number.isFinite(rate)) return '-';
  const p = rate * 100;
  return `${p === 0 || p >= 10 ? Math.round(p) : p.toFixed(1)} %`;
}

/** A small rate: `12`, `3.4`, `0.05`. */
export function decimal(n: number): string {
  if (n === 0) return '0';
  if (Math.abs(n) >= 100) return thousands(n);
  if (Math.abs(n) >= 10) return n.toFixed(0);
  if (Math.abs(n) >= 1) return n.toFixed(1).replace(/\.0$/, '');
  return n.toPrecision(1);
}

/** The local date and time of day (`03-01 14:05`), for axes spanning days. */
export const dayTime = (iso: string): string => {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : localTime(at).slice(5);
};
