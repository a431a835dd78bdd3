// Process-local metrics in the text exposition format. Each worker process
// keeps its own registry (as the spec says of rate limits and registries);
// there is deliberately no HTTP request counter.
import { Counter, Gauge, Registry } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();

  counter(name: string, help: string, labelNames: string[] = []): Counter {
    const existing = this.registry.getSingleMetric(name);
    if (existing) return existing as Counter;
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  gauge(name: string, help: string, labelNames: string[] = [], collect?: (this: Gauge) => void | Promise<void>): Gauge {
    const existing = this.registry.getSingleMetric(name);
    if (existing) return existing as Gauge;
    return new Gauge({ name, help, labelNames, registers: [this.registry], ...(collect ? { collect } : {}) });
  }

  /** Counts an error that was handled (dropped) rather than raised. */
  swallowed(module: string, site: string): void {
    this.counter('svc_swallowed_exceptions_total', 'Errors handled by dropping work, by module and site.', ['module', 'site']).inc({
      module,
      site,
    });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
