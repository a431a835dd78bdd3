// The runtime histogram of an aggregate row: 30 fixed bins, log-spaced at four
// per decade (each bin's upper edge is 10^(1/4), about 1.78 times its lower),
// from 1 ms to 10^7 ms (2.8 hours), with one bin below and one above:
//   bin 0        [0, 1) ms
//   bin i 1..28  [10^((i-1)/4), 10^(i/4)) ms
//   bin 29       [10^7, ∞) ms
// Rows add bin by bin, so any set of rows merges exactly; a percentile is read
// from the merged counts by interpolating inside the bin that holds it
// (geometrically, as the bins are), so it is off by at most one bin's width
// and usually by far less.

export const BINS = 30;
const PER_DECADE = 4;
const TOP = BINS - 1;
/** The column names of the bins, h00..h29. */
export const BIN_COLUMNS: readonly string[] = Array.from({ length: BINS }, (_, i) => `h${String(i).padStart(2, '0')}`);

/** Lower edge of bin `i` in milliseconds. */
export const binLower = (i: number): number => (i <= 0 ? 0 : 10 ** ((i - 1) / PER_DECADE));
/** Upper edge of bin `i` in milliseconds (Infinity for the last). */
export const binUpper = (i: number): number => (i >= TOP ? Infinity : 10 ** (i / PER_DECADE));

/** The bin a runtime falls in. */
export function binOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  // Floating-point log10 of an exact edge (10, 100, ...) can land a hair low: check against the edges.
  let i = Math.floor(Math.log10(ms) * PER_DECADE) + 1;
  if (i > TOP) return TOP;
  if (ms < binLower(i)) i--;
  else if (i < TOP && ms >= binUpper(i)) i++;
  return Math.min(TOP, Math.max(1, i));
}

/** The runtime below which a share `q` (0..1) of the counted runtimes lie; null when none were counted.
 * `max` (the largest runtime counted, when known) caps the estimate, and stands for the open last bin. */
export function percentile(bins: ArrayLike<number>, q: number, max: number | null = null): number | null {
  let total = 0;
  for (let i = 0; i < BINS; i++) total += Number(bins[i] ?? 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < BINS; i++) {
    const n = Number(bins[i] ?? 0);
    if (n === 0) continue;
    if (seen + n >= rank) {
      const within = n === 0 ? 0 : Math.min(1, Math.max(0, (rank - seen) / n));
      const lo = binLower(i);
      let hi = binUpper(i);
      if (!Number.isFinite(hi)) hi = max !== null && max > lo ? max : lo;
      const estimate = i === 0 ? lo + (hi - lo) * within : lo * (hi / lo) ** within;
      const capped = max !== null ? Math.min(estimate, max) : estimate;
      return Math.round(capped * 100) / 100;
    }
    seen += n;
  }
  return max;
}
