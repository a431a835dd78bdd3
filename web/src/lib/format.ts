// Text for people: times, relative times, capitalised server messages.

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 7],
];

/** "3 minutes ago" / "in 6 days" within a week, a date beyond. */
export function when(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  let delta = (at - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(delta) < size) return relative.format(Math.round(delta), unit);
    delta /= size;
  }
  return absolute.format(at);
}

export const fullTime = (iso: string): string => {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : new Date(at).toLocaleString();
};

/** Server messages are lower-case sentence fragments; shown as sentences. */
export const sentence = (text: string): string => (text ? text.charAt(0).toUpperCase() + text.slice(1) : text);

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
