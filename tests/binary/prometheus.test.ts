// A real Prometheus (Debian's package) scrapes `dist/svc serve --workers 2`
// with the metrics bearer token: its query API returns every metric the
// specification names, `promtool check metrics` finds the exposition clean, one
// scrape holds the requests answered by both processes, and a scrape without
// the token is refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawn, spawnSync, type Subprocess } from 'bun';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';

const missing = ['prometheus', 'promtool'].filter((tool) => spawnSync(['sh', '-c', `command -v ${tool}`]).exitCode !== 0);
if (missing.length > 0) console.log(`SKIPPED Prometheus tests: ${missing.join(', ')} not installed (scripts/test installs Debian's prometheus)`);

const NAMED = [
  'svc_audit_chain_verifications_total',
  'svc_audit_chain_rows_verified',
  'svc_swallowed_exceptions_total',
  'svc_auth_ip_denied_total',
  'svc_agents_online',
  'svc_tasks_total',
  'svc_background_task_error_active',
  // Beyond the specification: per-route requests and process figures.
  'svc_http_requests_total',
  'svc_http_request_duration_seconds_bucket',
  'process_resident_memory_bytes',
];

let svc: RunningSvc;
let prometheus: Subprocess | undefined;
let token = '';
let promUrl = '';

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A PromQL query's result vector (empty while Prometheus is still starting). */
const query = async (q: string): Promise<any[]> => {
  try {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    return ((await r.json()) as any).data?.result ?? [];
  } catch {
    return [];
  }
};

beforeAll(async () => {
  if (missing.length > 0) return;
  // The verifier enabled: its two metrics exist only then.
  const env = cleanEnv({ SVC_AUDIT_CHAIN_VERIFY_ENABLED: 'true', SVC_LOG_LEVEL: 'warn' });
  svc = await startSvc(env, ['--host', '127.0.0.1', '--workers', '2']);
  token = (await runSvc(['metrics-token', 'show'], env)).stdout.trim();
  expect(token.length).toBeGreaterThan(30);
  const dir = tempDir('svc-prometheus-');
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s }',
      'scrape_configs:',
      '  - job_name: svc',
      '    metrics_path: /metrics',
      `    authorization: { type: Bearer, credentials_file: ${join(dir, 'token')} }`,
      `    static_configs: [ { targets: ['127.0.0.1:${svc.port}'] } ]`,
    ].join('\n'),
  );
  const port = freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    ['prometheus', `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdout: 'ignore', stderr: 'ignore' },
  );
}, 60_000);

afterAll(async () => {
  prometheus?.kill();
  await prometheus?.exited;
  await svc?.stop();
});

describe.skipIf(missing.length > 0)('Prometheus scraping dist/svc serve --workers 2', () => {
  test('the query API returns every named metric; the target is up', async () => {
    await eventually(async () => (await query('up{job="svc"}'))[0]?.value?.[1] === '1', 30_000, 'the svc target up');
    for (const name of NAMED) {
      await eventually(async () => (await query(name)).length > 0, 10_000, `${name} in Prometheus`);
    }
    // Every state is declared at zero from the start; the spec's label sets are there.
    const states = (await query('svc_tasks_total')).map((r) => r.metric.state).sort();
    expect(states).toEqual(['failure', 'pending', 'received', 'rejected', 'retry', 'revoked', 'started', 'success', 'unknown']);
    expect((await query('svc_auth_ip_denied_total'))[0].metric.surface).toBe('agent');
    expect((await query('svc_audit_chain_verifications_total')).map((r) => r.metric.outcome).sort()).toEqual(['clean', 'error', 'failed']);
    // One series per background job, named by `task` (Prometheus would rename a `job` label).
    const jobs = await query('svc_background_task_error_active');
    expect(jobs.map((r) => r.metric.task)).toContain('agent-offline');
    expect(jobs.every((r) => r.metric.job === 'svc' && r.value[1] === '0')).toBe(true);
  }, 60_000);

  test('one scrape holds what both processes answered', async () => {
    // Fresh connections spread over both processes (SO_REUSEPORT); each answers for the health route.
    const n = 40;
    const workers = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${svc.url}/api/v1/health`, { headers: { connection: 'close' } });
      workers.add(r.headers.get('x-svc-worker') ?? '?');
    }
    expect(workers.size).toBe(2);
    const scrape = async () => {
      const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
      const m = /^svc_http_requests_total\{method="GET",route="\/api\/v1\/health",status="200"\} (\d+)/m.exec(text);
      return Number(m?.[1] ?? 0);
    };
    // Each process publishes its figures every second: within a few, any process's answer has all n.
    await eventually(async () => (await scrape()) >= n, 10_000, `${n} health requests in one scrape`);
  }, 30_000);

  test('every query of the Grafana dashboard in docs/ runs, over metrics the scrape declares', async () => {
    const dashboard = JSON.parse(readFileSync(join(import.meta.dir, '../../docs/grafana/svc-dashboard.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    await eventually(async () => (await query('up{job="svc"}'))[0]?.value?.[1] === '1', 30_000, 'the svc target up');
    // Every metric a panel uses is declared by the scrape (labelled ones may have no series yet).
    const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const declared = new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
    const used = [...new Set(exprs.flatMap((e) => e.match(/\b(?:svc|process|nodejs)_[a-z0-9_]+/g) ?? []))];
    expect(used.filter((n) => !declared.has(n.replace(/_bucket$/, '')))).toEqual([]);
    for (const expr of exprs) {
      const q = expr.replaceAll('$job', 'svc').replaceAll('$instance', '.*').replaceAll('$__rate_interval', '1m');
      const r = (await (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as any;
      expect({ expr, status: r.status, error: r.error }).toEqual({ expr, status: 'success', error: undefined });
    }
  }, 60_000);

  test('promtool finds the exposition clean', async () => {
    const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const check = spawnSync(['promtool', 'check', 'metrics'], { stdin: new TextEncoder().encode(text), stdout: 'pipe', stderr: 'pipe' });
    expect({ code: check.exitCode, out: `${check.stdout}${check.stderr}`.trim() }).toEqual({ code: 0, out: '' });
  });

  test('a scrape without the token, or with another, is refused', async () => {
    const none = await fetch(`${svc.url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect((await fetch(`${svc.url}/metrics`, { headers: { authorization: 'Bearer not-the-token' } })).status).toBe(401);
    expect(await none.text()).not.toContain('svc_tasks_total');
  });
});
