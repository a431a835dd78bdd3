// One scrape for every `--workers` process: each process publishes its own
// figures (prom-client's JSON) to $SVC_HOME/run/metrics-<index>.json every
// second, and whichever process answers /metrics merges its fresh figures
// with the others' latest (counters and histograms summed; gauges read from
// the shared database take one process's value). A process gone for longer
// than STALE_MS is left out.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AggregatorRegistry } from 'prom-client';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { Metrics } from './registry.ts';

const log = logger('metrics');
export const PUBLISH_MS = 1000;
const STALE_MS = 10_000;
const FILE = /^metrics-(\d+)\.json$/;

export interface WorkerMetrics {
  /** Starts publishing this process's figures; returns the stop function. */
  start(): () => void;
  /** The text of every process's figures merged. */
  text(): Promise<string>;
}

export function workerMetrics(metrics: Metrics, runDir: string, worker: { index: number; count: number }): WorkerMetrics {
  const own = join(runDir, `metrics-${worker.index}.json`);
  const publish = async () => {
    try {
      mkdirSync(runDir, { recursive: true, mode: 0o700 });
      writeFileSync(`${own}.tmp`, JSON.stringify(await metrics.json()), { mode: 0o600 });
      renameSync(`${own}.tmp`, own);
    } catch (e) {
      log.warn({ err: describeError(e) }, 'publishing this worker process\'s metrics failed');
    }
  };
  return {
    start() {
      const timer = setInterval(() => void publish(), PUBLISH_MS);
      timer.unref();
      void publish();
      return () => {
        clearInterval(timer);
        rmSync(own, { force: true });
      };
    },
    async text() {
      if (worker.count <= 1) return metrics.text();
      const all: unknown[] = [await metrics.json()];
      let names: string[] = [];
      try {
        names = readdirSync(runDir);
      } catch {
        // no other process has published yet
      }
      for (const name of names) {
        const m = FILE.exec(name);
        if (!m || Number(m[1]) === worker.index) continue;
        const path = join(runDir, name);
        try {
          if (Date.now() - statSync(path).mtimeMs > STALE_MS) continue;
          all.push(JSON.parse(readFileSync(path, 'utf8')));
        } catch {
          // replaced or removed meanwhile: left out of this scrape
        }
      }
      return AggregatorRegistry.aggregate(all as never).metrics();
    },
  };
}
