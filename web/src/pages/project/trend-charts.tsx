// The trend charts of the overview (a chunk of its own there, see overview.tsx) and of home: tasks finished and
// failed a minute, the failure rate, and run time, per bucket of one window.
import type { Trends } from '../../api/types.ts';
import { decimal, duration, percent } from '../../lib/format.ts';
import { Empty } from '../../ui/bits.tsx';
import { TimeChart, type Series } from '../../ui/charts.tsx';
import { KeptNote, type Kept } from '../../ui/window-picker.tsx';

/** What the charts draw, bucket by bucket: one project's trend, or several summed (home). */
export interface ChartData {
  /** Bucket starts (ISO), oldest first. */
  times: string[];
  bucketSeconds: number;
  finished: number[];
  failed: number[];
  succeeded: number[];
  /** The run-time lines: a project's p95 and p50, or the p95 of each of several projects. */
  runtime: Series[];
  /** Whether the window starts before the statistics kept (the trend answer's partial and kept_since). */
  kept?: Kept;
}

/** One project's trend as the charts draw it. */
export const chartDataOf = (t: Trends): ChartData => ({
  times: t.points.map((p) => p.t),
  bucketSeconds: t.bucket_seconds,
  finished: t.points.map((p) => p.finished),
  failed: t.points.map((p) => p.failed),
  succeeded: t.points.map((p) => p.succeeded),
  runtime: [
    { label: 'p95', tone: 'warn', values: t.points.map((p) => p.runtime_p95_ms) },
    { label: 'p50', tone: 'accent', values: t.points.map((p) => p.runtime_p50_ms) },
  ],
  kept: { partial: t.partial, kept_since: t.kept_since },
});

/** The three charts; `scope` ends their titles (", all projects") and `testIds` prefixes their test ids. */
export function TrendCharts(props: { data: ChartData; scope?: string; runtimeTitle?: string; testIds?: string }) {
  const d = props.data;
  const id = (name: string) => `${props.testIds ?? ''}chart-${name}`;
  const kept = <KeptNote kept={d.kept} testId={id('partial')} />;
  if (d.finished.every((n) => n === 0))
    return (
      <>
        <Empty title="Nothing finished in this window">
          <p>The charts fill in as agents report tasks. Pick a longer window to look further back.</p>
        </Empty>
        {kept}
      </>
    );
  // The last bucket is still filling: its rate is over the part gone by (at least a minute), as the API's
  // throughput_per_minute is, or every chart's last point would dip.
  const now = Date.now();
  const minutes = d.times.map((t) => Math.max(1, Math.min(d.bucketSeconds / 60, (now - Date.parse(t)) / 60_000)));
  const common = { times: d.times, days: d.bucketSeconds >= 3600 };
  return (
    <>
      <div class="charts">
        <TimeChart
          {...common}
          title={`Tasks finished a minute${props.scope ?? ''}`}
          testId={id('throughput')}
          format={decimal}
          series={[
            { label: 'finished', tone: 'accent', values: d.finished.map((n, i) => n / minutes[i]!) },
            { label: 'failed', tone: 'bad', values: d.failed.map((n, i) => n / minutes[i]!) },
          ]}
        />
        <TimeChart
          {...common}
          title={`Failure rate${props.scope ?? ''}`}
          testId={id('failure-rate')}
          format={percent}
          series={[{ label: 'failure rate', tone: 'bad', values: d.failed.map((f, i) => (f + d.succeeded[i]! === 0 ? null : f / (f + d.succeeded[i]!))) }]}
        />
        {d.runtime.length > 0 && (
          <TimeChart {...common} title={props.runtimeTitle ?? 'Run time'} testId={id('runtime')} format={duration} series={d.runtime} />
        )}
      </div>
      {kept}
    </>
  );
}
