// Interop with the real z4j agents from PyPI: a Celery worker on a real
// Redis server runs z4j-celery's agent, which connects to the compiled
// dist/svc over https (WebSocket in one run, long-poll in the other). Tasks
// the worker runs must appear in svc with the right states, and commands
// issued through svc's API must reach the agent and have their result
// recorded.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Subprocess } from 'bun';
import { decodeBase32IgnorePadding } from '@oslojs/encoding';
import { generateTOTP } from '@oslojs/otp';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

const PYTHON = process.env.SVC_TEST_PYTHON ?? join(import.meta.dir, '../../.venv/bin/python');
const APP_DIR = join(import.meta.dir, 'app');
const processes: Subprocess[] = [];

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A cookie-keeping API client for the real server (trusting its self-signed certificate). */
class Api {
  cookies = new Map<string, string>();
  constructor(
    readonly base: string,
    readonly ca: string,
  ) {}
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET' && this.cookies.has('svc_csrf')) headers['x-csrf-token'] = this.cookies.get('svc_csrf')!;
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), tls: { ca: this.ca } } as RequestInit);
    for (const c of res.headers.getSetCookie()) {
      const [k, v] = c.split(';')[0]!.split('=');
      this.cookies.set(k!, v!);
    }
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
}

let svc: RunningSvc;
let api: Api;
let certFile: string;
let brokerUrl: string;

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: scripts/test creates the venv (python -m venv .venv; pip install -r tests/interop/requirements.txt)`);
  const redisPort = freePort();
  const redis = Bun.spawn(['redis-server', '--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' });
  processes.push(redis);
  brokerUrl = `redis://127.0.0.1:${redisPort}/0`;

  const env = cleanEnv({ ...FAST_IDENTITY_ENV, SVC_TLS_SELF_SIGNED: 'true', SVC_BOOTSTRAP_ADMIN_EMAIL: 'ops@example.com', SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD });
  svc = await startSvc(env);
  certFile = join(env.SVC_HOME!, 'tls/self-signed.crt');
  api = new Api(svc.url, await Bun.file(certFile).text());
  expect((await api.call('POST', '/api/v1/auth/login', { email: 'ops@example.com', password: STRONG_PASSWORD })).status).toBe(200);
  const start = await api.call('POST', '/api/v1/auth/mfa/enroll-start');
  const key = decodeBase32IgnorePadding(start.body.secret_base32);
  expect((await api.call('POST', '/api/v1/auth/mfa/enroll-complete', { code: generateTOTP(key, 30, 6) })).status).toBe(200);
}, 60_000);

afterAll(async () => {
  for (const p of processes.reverse()) {
    p.kill('SIGTERM');
    await Promise.race([p.exited, Bun.sleep(5000)]);
    p.kill('SIGKILL');
  }
  await svc?.stop('SIGKILL');
});

interface Run {
  transport: 'ws' | 'longpoll';
  agentId: string;
  logs: () => string;
}

/** Mints an agent and starts a Celery worker whose z4j agent connects with it. */
async function startWorker(transport: 'ws' | 'longpoll'): Promise<Run> {
  const minted = await api.call('POST', '/api/v1/projects/default/agents', { name: `celery-${transport}` });
  expect(minted.status).toBe(201);
  const home = tempDir(`z4j-${transport}-`);
  const out = { text: '' };
  // The `celery` entry point, not `python -m celery`: z4j-celery starts its
  // agent only when argv shows a `celery ... worker` invocation.
  const worker = Bun.spawn([join(dirname(PYTHON), 'celery'), '-A', 'tasks', 'worker', '--pool', 'threads', '--concurrency', '4', '-l', 'info', '-n', `interop-${transport}@%h`], {
    cwd: APP_DIR,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      INTEROP_BROKER_URL: brokerUrl,
      Z4J_BRAIN_URL: svc.url,
      Z4J_TOKEN: minted.body.token,
      Z4J_PROJECT_ID: 'default',
      Z4J_HMAC_SECRET: minted.body.hmac_secret,
      Z4J_TRANSPORT: transport,
      ...(transport === 'longpoll' ? { Z4J_AGENT_ID: minted.body.agent.id } : {}),
      Z4J_HOME: home,
      Z4J_AGENT_NAME: `interop-${transport}`,
      // Trust svc's self-signed certificate (httpx and websockets honour it).
      SSL_CERT_FILE: certFile,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  processes.push(worker);
  for (const stream of [worker.stdout, worker.stderr]) {
    void (async () => {
      const reader = stream.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        out.text += decoder.decode(value);
      }
    })();
  }
  return { transport, agentId: minted.body.agent.id, logs: () => out.text };
}

async function enqueue(kind: string, ...args: string[]): Promise<string> {
  const p = Bun.spawn([PYTHON, 'enqueue.py', kind, ...args], { cwd: APP_DIR, env: { PATH: process.env.PATH ?? '', INTEROP_BROKER_URL: brokerUrl }, stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`enqueue ${kind}: ${err}`);
  return JSON.parse(out).task_id;
}

const task = async (taskId: string) => (await api.call('GET', `/api/v1/projects/default/tasks/celery/${taskId}`)).body;

/** Waits for the task to reach `state` and, with `fields`, to hold those values too: the worker's
 * events of one task may reach svc in more than one upload (a failure reported before the
 * receipt that names the task and its arguments). */
async function waitForState(run: Run, taskId: string, state: string, fields: Record<string, unknown> = {}, ms = 30_000): Promise<any> {
  const holds = (t: any) => t?.state === state && Object.entries(fields).every(([k, v]) => Bun.deepEquals(t[k], v));
  try {
    await eventually(async () => holds(await task(taskId)), ms, `task ${taskId} to be ${state} with ${JSON.stringify(fields)}`);
  } catch (e) {
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(await task(taskId))}\nworker log tail:\n${run.logs().slice(-3000)}`);
  }
  return task(taskId);
}

async function waitForCommand(run: Run, id: string, ms = 30_000): Promise<any> {
  const get = async () => (await api.call('GET', `/api/v1/projects/default/commands/${id}`)).body;
  try {
    await eventually(async () => ['completed', 'failed'].includes((await get()).status), ms, `command ${id} to finish`);
  } catch (e) {
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(await get())}\nworker log tail:\n${run.logs().slice(-3000)}`);
  }
  return get();
}

for (const transport of ['ws', 'longpoll'] as const) {
  describe(`a Celery worker with the z4j agent over ${transport === 'ws' ? 'WebSocket' : 'long-poll'}`, () => {
    let run: Run;
    beforeAll(async () => {
      run = await startWorker(transport);
      await eventually(
        async () => (await api.call('GET', '/api/v1/projects/default/agents')).body.find((a: any) => a.id === run.agentId)?.state === 'online',
        45_000,
        `the ${transport} agent online`,
      ).catch(async (e) => {
        throw new Error(`${(e as Error).message}\nworker log tail:\n${run.logs().slice(-4000)}`);
      });
    }, 60_000);

    test('the agent is recorded with what it reported', async () => {
      const agent = (await api.call('GET', `/api/v1/projects/default/agents/${run.agentId}`)).body;
      expect(agent.state).toBe('online');
      expect(agent.is_outdated).toBe(false);
      if (transport === 'ws') {
        expect(agent.protocol_version).toBe('2');
        expect(agent.engine_adapters).toContain('celery');
        expect(agent.capabilities.celery).toEqual(expect.arrayContaining(['cancel_task', 'retry_task']));
      } else {
        // Long-poll agents send no hello: no advertised version, no inventory.
        expect(agent.protocol_version).toBe('');
        expect(agent.engine_adapters).toEqual([]);
      }
      await eventually(async () => (await api.call('GET', `/api/v1/projects/default/agents/${run.agentId}/health`)).body.length > 0, 30_000, 'a health sample');
    }, 60_000);

    test('successes, failures and retries appear with the right states', async () => {
      const ok = await enqueue('add', '2', '3');
      const bad = await enqueue('fail', transport);
      const flaky = await enqueue('flaky', transport);
      expect(await waitForState(run, ok, 'success')).toMatchObject({ name: 'interop.add', state: 'success' });
      const failed = await waitForState(run, bad, 'failure');
      expect(failed.name).toBe('interop.fail');
      expect(failed.exception).toContain('ValueError');
      const retried = await waitForState(run, flaky, 'success');
      expect(retried.retry_count).toBeGreaterThanOrEqual(1);
      expect(retried.events.map((e: any) => e.kind)).toEqual(expect.arrayContaining(['task.retried', 'task.succeeded']));
    }, 90_000);

    test('a cancel issued through svc reaches the agent and its result is recorded', async () => {
      // Held by the worker until its countdown ends; Celery reports the
      // revoke when the countdown comes due and the task is discarded.
      const later = await enqueue('sleepy', '1', '6');
      await waitForState(run, later, 'received');
      const issued = await api.call('POST', '/api/v1/projects/default/commands/cancel-task', { engine: 'celery', task_id: later, agent_id: run.agentId });
      expect(issued.status).toBe(202);
      const done = await waitForCommand(run, issued.body.id);
      expect(done.status).toBe('completed');
      expect(done.dispatched_at).not.toBeNull();
      await waitForState(run, later, 'revoked');
    }, 90_000);

    test('a retry issued through svc re-runs the failed task and its result is recorded', async () => {
      const bad = await enqueue('fail', `${transport}-retry`);
      await waitForState(run, bad, 'failure');
      const issued = await api.call('POST', '/api/v1/projects/default/commands/retry-task', { engine: 'celery', task_id: bad, agent_id: run.agentId });
      expect(issued.status).toBe(202);
      const done = await waitForCommand(run, issued.body.id);
      expect(done.status).toBe('completed');
      const rerun = String(done.result.new_task_id);
      expect(rerun).not.toBe(bad);
      const expected = { name: 'interop.fail', args: [`${transport}-retry`] };
      expect(await waitForState(run, rerun, 'failure', expected)).toMatchObject(expected);
    }, 90_000);
  });
}
