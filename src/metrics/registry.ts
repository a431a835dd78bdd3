// The metrics of one process, in the text exposition format: the ones the
// specification names (each incremented where its event happens), the
// process and runtime metrics, and per-route request counts and latencies (an
// addition: the specification's reference has no request counter). With
// `--workers N` every process publishes its own figures and /metrics answers
// for all of them (src/metrics/workers.ts).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

/** Latency buckets (seconds): API answers are milliseconds, a long-poll may hold a minute. */
const DURATION_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Metrics {
  readonly registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters (promtool refuses the `_total` suffix on a gauge); the handle counts add little.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name);
  }

  counter(name: string, help: string, labelNames: string[] = []): Counter {
    return (this.registry.getSingleMetric(name) as Counter | undefined) ?? new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** `aggregator`: how the figures of several `--workers` processes combine (default: summed). Gauges read
   * from the shared database say the same in every process: take one, not the sum. */
  gauge(name: string, help: string, labelNames: string[] = [], collect?: (this: Gauge) => void | Promise<void>, aggregator: 'sum' | 'max' = 'sum'): Gauge {
    const existing = this.registry.getSingleMetric(name);
    if (existing) return existing as Gauge;
    return new Gauge({ name, help, labelNames, registers: [this.registry], aggregator, ...(collect ? { collect } : {}) });
  }

  histogram(name: string, help: string, labelNames: string[], buckets: number[]): Histogram {
    return (this.registry.getSingleMetric(name) as Histogram | undefined) ?? new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /** Counts an error that was handled (dropped) rather than raised. */
  swallowed(module: string, site: string, n = 1): void {
    this.counter('svc_swallowed_exceptions_total', 'Errors handled by dropping work, by module and site.', ['module', 'site']).inc({ module, site }, n);
  }

  /** Declares a module's sites at zero, so a scrape shows them before anything was dropped. */
  swallowedSites(module: string, sites: readonly string[]): void {
    for (const site of sites) this.swallowed(module, site, 0);
  }

  /** One HTTP answer: `route` is the route's pattern (`/api/v1/projects/:slug`), never the raw path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.counter('svc_http_requests_total', 'HTTP requests answered, by method, route pattern and status.', ['method', 'route', 'status']).inc({
      method,
      route,
      status: String(status),
    });
    this.histogram('svc_http_request_duration_seconds', 'Time to answer HTTP requests, by method and route pattern.', ['method', 'route'], DURATION_BUCKETS).observe(
      { method, route },
      seconds,
    );
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** This process's figures as prom-client's JSON (for the other `--workers` processes to merge). */
  json(): Promise<ReturnType<Metric['get']> extends Promise<infer T> ? T[] : never> {
    return this.registry.getMetricsAsJSON() as never;
  }
}
