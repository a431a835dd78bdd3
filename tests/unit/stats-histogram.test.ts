// The runtime histogram of the task statistics: bins, and percentiles read
// back from merged counts within a bin's width.
import { expect, test } from 'bun:test';
import { BINS, binLower, binOf, binUpper, percentile } from '../../src/stats/histogram.ts';

test('bins: [0, 1) ms, then four per decade up to 10^7 ms, then one open bin; exact edges fall in the bin they open', () => {
  expect([binOf(0), binOf(0.5), binOf(1), binOf(1.7), binOf(1.8), binOf(10), binOf(99.9), binOf(100), binOf(1e7), binOf(1e9)]).toEqual([0, 0, 1, 1, 2, 5, 8, 9, 29, 29]);
  for (let i = 1; i < BINS - 1; i++) {
    expect(binOf(binLower(i))).toBe(i);
    expect(binOf(binUpper(i) * 0.999999)).toBe(i);
  }
  expect(binOf(-5)).toBe(0);
  expect(binOf(Number.NaN)).toBe(0);
});

test('percentiles of known runtimes fall in the bin of the true value', () => {
  const bins = new Array<number>(BINS).fill(0);
  const values = Array.from({ length: 1000 }, (_, i) => (i + 1) * 3); // 3 .. 3000 ms
  for (const v of values) bins[binOf(v)]!++;
  for (const q of [0.5, 0.9, 0.95, 0.99]) {
    const truth = values[Math.ceil(q * values.length) - 1]!;
    const est = percentile(bins, q, 3000)!;
    expect(est).toBeGreaterThanOrEqual(binLower(binOf(truth)));
    expect(est).toBeLessThanOrEqual(binUpper(binOf(truth)));
    expect(Math.abs(est - truth) / truth).toBeLessThan(0.3);
  }
});

test('empty counts have no percentile; the largest runtime caps the estimate and stands for the open bin', () => {
  expect(percentile(new Array(BINS).fill(0), 0.5)).toBeNull();
  const one = new Array<number>(BINS).fill(0);
  one[binOf(40)] = 1;
  expect(percentile(one, 0.95, 40)).toBeLessThanOrEqual(40);
  const huge = new Array<number>(BINS).fill(0);
  huge[29] = 2;
  expect(percentile(huge, 0.5, 5e7)).toBeGreaterThanOrEqual(1e7);
  expect(percentile(huge, 0.99, 5e7)).toBeLessThanOrEqual(5e7);
});
