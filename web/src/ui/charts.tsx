// Time series as small hand-written SVG (no chart library in the bundle): a line chart with a few series over
// shared buckets, a readout of the bucket under the pointer (or the keyboard's arrows), and a sparkline for
// table rows. Every chart names what it shows in words (its label and caption): colour and shape are extras.
import { useState } from 'preact/hooks';
import { clockTime, dayTime, fullTime } from '../lib/format.ts';

export type Tone = 'accent' | 'bad' | 'ok' | 'warn';

export interface Series {
  label: string;
  tone: Tone;
  /** One value per bucket (null: nothing to say for that bucket, the line has a gap). */
  values: (number | null)[];
}

const W = 640;
const H = 170;
const PAD = { left: 56, right: 12, top: 12, bottom: 26 };
const PLOT_W = W - PAD.left - PAD.right;
const PLOT_H = H - PAD.top - PAD.bottom;

/** 1, 2 or 5 times a power of ten, at least `v` (an axis top people can read). */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function pathOf(values: (number | null)[], x: (i: number) => number, y: (v: number) => number): string {
  let d = '';
  let pen = false;
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) {
      pen = false;
      return;
    }
    d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)} ${y(v).toFixed(1)}`;
    pen = true;
  });
  return d;
}

const lastOf = (values: (number | null)[]): number | null => {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i]!;
  return null;
};

export function TimeChart(props: {
  title: string;
  /** Bucket starts (ISO), oldest first; one per value of each series. */
  times: string[];
  series: Series[];
  format: (n: number) => string;
  /** Axis labels with the day (buckets of an hour or more). */
  days?: boolean;
  /** A fixed top of the axis (1 for a share). */
  max?: number;
  testId?: string;
}) {
  const { times, series, format } = props;
  const [at, setAt] = useState<number | null>(null);
  const n = times.length;
  if (n === 0) return null;
  const all = series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)));
  const top = props.max ?? niceCeil(Math.max(0, ...all));
  const step = n > 1 ? PLOT_W / (n - 1) : 0;
  const x = (i: number) => PAD.left + (n > 1 ? i * step : PLOT_W / 2);
  const y = (v: number) => PAD.top + PLOT_H - (Math.min(v, top) / top) * PLOT_H;
  const label = (iso: string) => (props.days ? dayTime(iso) : clockTime(iso));
  const summary =
    `${props.title}, ${n} buckets from ${fullTime(times[0]!)} to ${fullTime(times[n - 1]!)}: ` +
    series
      .map((s) => {
        const vals = s.values.filter((v): v is number => v !== null);
        const last = lastOf(s.values);
        return vals.length === 0
          ? `${s.label} none`
          : `${s.label} at most ${format(Math.max(...vals))}, latest ${last === null ? '-' : format(last)}`;
      })
      .join('; ');
  const pick = (clientX: number, el: SVGSVGElement) => {
    const r = el.getBoundingClientRect();
    const vx = ((clientX - r.left) / r.width) * W;
    setAt(n > 1 ? Math.max(0, Math.min(n - 1, Math.round((vx - PAD.left) / step))) : 0);
  };
  const readout =
    at === null
      ? null
      : `${fullTime(times[at]!)}: ${series.map((s) => `${s.label} ${s.values[at] === null ? '-' : format(s.values[at]!)}`).join(', ')}`;
  return (
    <figure class="chart" data-testid={props.testId}>
      <figcaption>
        <span class="chart-title">{props.title}</span>
        {series.length > 1 &&
          series.map((s) => (
            <span key={s.label} class="legend">
              <span class={`swatch ${s.tone}`} aria-hidden="true" />
              {s.label}
            </span>
          ))}
      </figcaption>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={summary}
        tabIndex={0}
        onPointerMove={(e) => pick(e.clientX, e.currentTarget)}
        onPointerLeave={() => setAt(null)}
        onBlur={() => setAt(null)}
        onKeyDown={(e) => {
          if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
          e.preventDefault();
          const from = at ?? (e.key === 'ArrowLeft' ? n : -1);
          setAt(Math.max(0, Math.min(n - 1, from + (e.key === 'ArrowLeft' ? -1 : 1))));
        }}
      >
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line class={f === 0 ? 'axis' : 'grid'} x1={PAD.left} x2={W - PAD.right} y1={y(top * f)} y2={y(top * f)} />
            <text x={PAD.left - 6} y={y(top * f) + 4} text-anchor="end">
              {format(top * f)}
            </text>
          </g>
        ))}
        <text x={PAD.left} y={H - 6}>
          {label(times[0]!)}
        </text>
        {n > 2 && (
          <text x={x(Math.floor((n - 1) / 2))} y={H - 6} text-anchor="middle">
            {label(times[Math.floor((n - 1) / 2)]!)}
          </text>
        )}
        <text x={W - PAD.right} y={H - 6} text-anchor="end">
          {label(times[n - 1]!)}
        </text>
        {series.map((s, k) => (
          <g key={s.label} class={`series-${s.tone}`}>
            {k === 0 && n > 1 && <path class="area" d={areaOf(s.values, x, y, PAD.top + PLOT_H)} />}
            <path class="line" d={pathOf(s.values, x, y)} />
            {/* A value with no neighbour draws no line: a dot shows it. */}
            {s.values.map((v, i) =>
              v !== null && (i === 0 || s.values[i - 1] === null) && (i === n - 1 || s.values[i + 1] === null) ? (
                <circle key={i} cx={x(i)} cy={y(v)} r={2.5} />
              ) : null,
            )}
          </g>
        ))}
        {at !== null && (
          <g class="cursor">
            <line x1={x(at)} x2={x(at)} y1={PAD.top} y2={PAD.top + PLOT_H} />
            {series.map((s) =>
              s.values[at] === null ? null : <circle key={s.label} class={`dot-${s.tone}`} cx={x(at)} cy={y(s.values[at]!)} r={3.5} />,
            )}
          </g>
        )}
      </svg>
      <p class="muted small chart-readout" aria-live="polite">
        {readout ?? '\u00a0'}
      </p>
    </figure>
  );
}

/** The area under each unbroken run of a series. */
function areaOf(values: (number | null)[], x: (i: number) => number, y: (v: number) => number, base: number): string {
  let d = '';
  let run: number[] = [];
  const flush = () => {
    if (run.length > 1) {
      d += `M${x(run[0]!).toFixed(1)} ${base}`;
      for (const i of run) d += `L${x(i).toFixed(1)} ${y(values[i]!).toFixed(1)}`;
      d += `L${x(run[run.length - 1]!).toFixed(1)} ${base}Z`;
    }
    run = [];
  };
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) flush();
    else run.push(i);
  });
  flush();
  return d;
}

/** Counts per bucket as tiny bars, for a table row; the label says it in words. */
export function Sparkline(props: { values: number[]; label: string; tone?: Tone }) {
  const n = props.values.length;
  if (n === 0) return null;
  const w = 120;
  const h = 24;
  const top = Math.max(1, ...props.values);
  const bar = w / n;
  return (
    <svg class={`spark series-${props.tone ?? 'bad'}`} viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={props.label}>
      <line class="axis" x1={0} x2={w} y1={h - 0.5} y2={h - 0.5} />
      {props.values.map((v, i) =>
        v > 0 ? <rect key={i} x={i * bar + bar * 0.1} width={Math.max(bar * 0.8, 0.8)} y={h - 1 - (v / top) * (h - 2)} height={(v / top) * (h - 2)} /> : null,
      )}
    </svg>
  );
}
