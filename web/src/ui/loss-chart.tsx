// Telemetry loss over time as a small inline SVG (no chart library): one step per health sample, oldest on the
// left (agents send about one a minute), the frames the agent reported lost. The table below the chart carries
// the same data in words.
import type { HealthSample } from '../api/types.ts';
import { clockTime, fullTime, plural } from '../lib/format.ts';

/** The counts above zero in a telemetry_loss report, as [name, count]: its numeric fields (the ids are text)
 * and the per-adapter event counts. */
export function lossParts(loss: Record<string, unknown> | null): [string, number][] {
  if (!loss) return [];
  const parts: [string, number][] = [];
  for (const [name, value] of Object.entries(loss)) {
    if (typeof value === 'number') parts.push([name, value]);
    else if (name === 'adapter_events' && value && typeof value === 'object') {
      for (const [adapter, n] of Object.entries(value)) parts.push([`${adapter} events`, Number(n)]);
    }
  }
  return parts.filter(([, n]) => Number.isFinite(n) && n > 0).sort(([a], [b]) => (a < b ? -1 : 1));
}

export const lossTotal = (loss: Record<string, unknown> | null): number => lossParts(loss).reduce((sum, [, n]) => sum + n, 0);

const W = 640;
const H = 150;
const PAD = { left: 44, right: 16, top: 12, bottom: 34 };

export function LossChart(props: { samples: HealthSample[] }) {
  // Samples come newest first; the chart reads left to right. Samples without a report are left out.
  const points = props.samples
    .filter((s) => s.telemetry_loss !== null)
    .map((s) => ({ at: s.captured_at, lost: lossTotal(s.telemetry_loss) }))
    .reverse();
  if (points.length === 0) return null;
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const top = Math.max(...points.map((p) => p.lost), 1);
  const step = (W - PAD.left - PAD.right) / Math.max(points.length - 1, 1);
  const x = (n: number) => PAD.left + (points.length === 1 ? (W - PAD.left - PAD.right) / 2 : n * step);
  const y = (lost: number) => H - PAD.bottom - (lost / top) * (H - PAD.top - PAD.bottom);
  const line = points.map((p, n) => `${x(n).toFixed(1)},${y(p.lost).toFixed(1)}`).join(' ');
  const worst = Math.max(...points.map((p) => p.lost));
  const summary =
    `Frames lost as reported, ${plural(points.length, 'sample')} from ${fullTime(first.at)} to ${fullTime(last.at)}: ` +
    `at most ${worst}, latest ${last.lost}.`;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        <line class="axis" x1={PAD.left} y1={H - PAD.bottom} x2={W - PAD.right} y2={H - PAD.bottom} />
        <line class="axis" x1={PAD.left} y1={PAD.top} x2={PAD.left} y2={H - PAD.bottom} />
        <text x={PAD.left - 6} y={PAD.top + 4} text-anchor="end">
          {top}
        </text>
        <text x={PAD.left - 6} y={H - PAD.bottom} text-anchor="end">
          0
        </text>
        <text x={PAD.left} y={H - 10}>
          {clockTime(first.at)}
        </text>
        <text x={W - PAD.right} y={H - 10} text-anchor="end">
          {clockTime(last.at)}
        </text>
        <polyline class="series" points={line} />
        {points.map((p, n) => (
          <circle key={n} class={p.lost > 0 ? 'dot bad' : 'dot'} cx={x(n)} cy={y(p.lost)} r={3.5} />
        ))}
      </svg>
      <figcaption class="muted small">{summary}</figcaption>
    </figure>
  );
}
