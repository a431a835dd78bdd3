// The task filters' times: <input type="datetime-local"> speaks local wall-clock time without a zone, the API
// wants UTC with six fractional digits (`2026-01-31T09:30:00.000000+00:00`).

/** A datetime-local value as the API's timestamp; undefined when empty or unreadable. */
export function apiTimeOf(local: string | undefined): string | undefined {
  if (!local) return undefined;
  const at = new Date(local);
  if (Number.isNaN(at.getTime())) return undefined;
  return at.toISOString().replace(/\.(\d{3})Z$/, '.$1000+00:00');
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An API timestamp as a datetime-local value (local time, to the minute); '' when unreadable. */
export function localInputOf(api: string | undefined): string {
  const at = api ? new Date(api) : null;
  if (!at || Number.isNaN(at.getTime())) return '';
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}
