// PostgreSQL under a running svc: readiness follows the server going away and
// coming back, with a real server stopped and started.
import { afterAll, expect, test } from 'bun:test';
import { cleanEnv, eventually, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.ts';

const running: RunningSvc[] = [];
const servers: PrivatePostgres[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
  for (const s of servers) s.destroy();
});

const readiness = async (url: string) => {
  const res = await fetch(`${url}/api/v1/health/ready`);
  return { status: res.status, body: await res.json() };
};

test('readiness and deep health turn 503 naming the database while PostgreSQL is stopped, 200 after it restarts', async () => {
  const pg = startPostgres();
  servers.push(pg);
  const env = cleanEnv({ SVC_DATABASE_URL: pg.url, SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '1' });
  const svc = await startSvc(env);
  running.push(svc);
  await eventually(async () => (await readiness(svc.url)).status === 200, 10_000, 'ready');
  // Monitoring reads the deep report with the metrics token: no session (kept in the database) needed.
  const token = (await runSvc(['metrics-token', 'show'], env)).stdout.trim();
  const deep = async () => {
    const res = await fetch(`${svc.url}/api/v1/health/deep`, { headers: { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as any };
  };
  const up = await deep();
  expect([up.status, up.body.entries?.filter((e: any) => e.status === 'failed')]).toEqual([200, []]);

  pg.stop();
  await eventually(async () => (await readiness(svc.url)).status === 503, 10_000, 'unready');
  expect(await readiness(svc.url)).toEqual({ status: 503, body: { status: 'unready', reason: 'database' } });
  const down = await deep();
  expect(down.status).toBe(503);
  expect(down.body.entries.find((e: any) => e.name === 'database')).toMatchObject({ status: 'failed' });
  // The signal listener's own connection goes down with it.
  const signals = async () => (await deep()).body.entries.find((e: any) => e.name === 'signals');
  await eventually(async () => (await signals()).status === 'failed', 10_000, 'the signals entry failed');
  expect(await signals()).toMatchObject({ detail: 'the LISTEN connection to PostgreSQL is down (reconnecting): signals of the other processes are not heard' });
  // A route that needs the database says it is unavailable, not an internal error.
  const api = await fetch(`${svc.url}/api/v1/projects`, { headers: { cookie: 'svc_session=whatever' } });
  expect([api.status, ((await api.json()) as any).error]).toEqual([503, 'database_unavailable']);
  // Liveness does no I/O and keeps answering.
  expect((await fetch(`${svc.url}/api/v1/health`)).status).toBe(200);

  pg.start();
  await eventually(async () => (await readiness(svc.url)).status === 200, 15_000, 'ready again');
  expect((await readiness(svc.url)).body).toEqual({ status: 'ready' });
  // The signal listener retries with backoff (up to 30 s between attempts): deep health is 503 until it is back.
  await eventually(async () => (await deep()).status === 200, 45_000, 'deep health ok again');
  expect(await signals()).toMatchObject({ status: 'ok', detail: 'the LISTEN connection to PostgreSQL is up' });

  // The CLI reads the same database.
  const status = await runSvc(['status'], env);
  expect(status.code).toBe(0);
  expect(status.stdout).toContain(`database: ${pg.url}`);
  expect(status.stdout).toMatch(/migration revision: \d{4}/);
}, 120_000);

test('an unreachable PostgreSQL fails `svc check` with exit 2 and a one-line reason', async () => {
  const env = cleanEnv({ SVC_DATABASE_URL: 'postgres://svc:pw@127.0.0.1:1/svc', SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '1' });
  const r = await runSvc(['check'], env);
  expect(r.code).toBe(2);
  expect(r.stdout).toContain('configuration: ok');
  expect(r.stderr).toMatch(/database: not answering/);
  expect(r.stderr).not.toContain(':pw@');
});
