// Startup-to-ready time and idle memory of the compiled binary.
//   bun bench/startup.ts [runs=7]
// Each run starts dist/svc serve on a free port, polls /api/v1/health/ready
// every 2 ms until it answers 200, then idles 5 s and reads VmRSS from
// /proc. "cold" runs use a fresh $SVC_HOME (secrets minted, migrations run);
// "warm" runs reuse one already initialised home. Prints medians.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 7);
const bin = join(import.meta.dir, '../dist/svc');

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function once(home: string): Promise<{ readyMs: number; rssMb: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const proc = Bun.spawn([bin, 'serve', '--host', '127.0.0.1', '--port', String(port)], {
    env: { PATH: '/usr/bin:/bin', HOME: home, SVC_HOME: join(home, '.svc'), SVC_LOG_LEVEL: 'warn' },
    stdout: 'ignore',
    stderr: 'ignore',
  });
  let readyMs = -1;
  while (readyMs < 0) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/health/ready`);
      if (r.status === 200) readyMs = performance.now() - t0;
    } catch {
      /* not listening yet */
    }
    if (readyMs < 0) await Bun.sleep(2);
  }
  await Bun.sleep(5000);
  const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  proc.kill('SIGTERM');
  await proc.exited;
  return { readyMs, rssMb: rssKb / 1024 };
}

const cold: { readyMs: number; rssMb: number }[] = [];
for (let i = 0; i < runs; i++) {
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  cold.push(await once(home));
  rmSync(home, { recursive: true, force: true });
}
const warmHome = mkdtempSync(join(tmpdir(), 'svc-bench-'));
await once(warmHome);
const warm: { readyMs: number; rssMb: number }[] = [];
for (let i = 0; i < runs; i++) warm.push(await once(warmHome));
rmSync(warmHome, { recursive: true, force: true });

const fmt = (label: string, xs: { readyMs: number; rssMb: number }[]) =>
  `${label}: ready in ${median(xs.map((x) => x.readyMs)).toFixed(0)} ms (median of ${xs.length}; min ${Math.min(...xs.map((x) => x.readyMs)).toFixed(0)}, max ${Math.max(...xs.map((x) => x.readyMs)).toFixed(0)}), idle RSS ${median(xs.map((x) => x.rssMb)).toFixed(1)} MB`;
console.log(fmt('cold start (fresh home)', cold));
console.log(fmt('warm start (existing home)', warm));
