// The interop suite's world: one compiled dist/svc over https (self-signed),
// one real Redis server, and real Python workers of each engine running the
// engine's z4j agent from PyPI. Engines are described in engines/*.ts; this
// module starts things, talks to svc's API and waits for what the agents
// report.
import { expect } from 'bun:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { Api } from '../helpers/api-client.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

/** One venv per requirements/<name>.txt (scripts/test makes them). */
export const VENVS = process.env.SVC_TEST_VENVS ?? join(import.meta.dir, '../../.venv');
export { Api };
export const APP_ROOT = join(import.meta.dir, 'app');

/** The bin directory of a venv, which must exist. */
export function venvBin(name: string): string {
  const bin = join(VENVS, name, 'bin');
  if (!existsSync(join(bin, 'python'))) throw new Error(`${bin}/python is missing: scripts/test creates the venv (python -m venv .venv/${name}; pip install -r tests/interop/requirements/${name}.txt)`);
  return bin;
}

export type Transport = 'ws' | 'longpoll';

/** How long World.stop waits after SIGTERM: Celery and Dramatiq workers leave within 3 s. */
const STOP_GRACE_MS = 3000;

function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A child process whose output is kept for failure messages. */
export class Proc {
  private text = '';
  constructor(readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>) {
    for (const stream of [proc.stdout, proc.stderr]) {
      void (async () => {
        const reader = stream.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          this.text += decoder.decode(value, { stream: true });
        }
      })();
    }
  }
  logs(): string {
    return this.text;
  }
  tail(chars = 4000): string {
    return this.text.slice(-chars);
  }
}

/** svc, Redis and the administrator's API session, shared by every cell of a suite file. */
export class World {
  private readonly processes: Subprocess[] = [];
  private redis?: Subprocess;
  private nextDb = 0;
  svc!: RunningSvc;
  api!: Api;
  certFile!: string;
  redisPort = 0;

  /** The environment svc was started with (its SVC_HOME: the CLI can be run against the same installation). */
  env: Record<string, string> = {};

  /** Starts Redis and svc; `extraEnv` adds svc settings. */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    this.redisPort = freePort();
    // One database per cell keeps engines' queues and registries apart.
    this.redis = Bun.spawn(['redis-server', '--port', String(this.redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--databases', '64'], { stdout: 'ignore', stderr: 'ignore' });
    const env = cleanEnv({
      ...FAST_IDENTITY_ENV,
      SVC_TLS_SELF_SIGNED: 'true',
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'ops@example.com',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD,
      // Notification webhooks to the test receiver over plain http (its address still passes the outbound policy).
      SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true',
      ...extraEnv,
    });
    this.env = env;
    this.svc = await startSvc(env);
    this.certFile = join(env.SVC_HOME!, 'tls/self-signed.crt');
    this.api = new Api(this.svc.url, await Bun.file(this.certFile).text());
    await this.api.login('ops@example.com', STRONG_PASSWORD);
    await this.api.enrolMfa();
  }

  /** Stops the workers and schedulers all at once (SIGTERM, a short grace, then SIGKILL for what is
   * still running: a TaskIQ worker on taskiq-redis's stream broker takes over 20 s to leave after
   * SIGTERM, with or without its z4j agent; docs/agents.md), then Redis and svc. */
  async stop(): Promise<void> {
    const running = this.processes.splice(0);
    for (const p of running) p.kill('SIGTERM');
    await Promise.race([Promise.all(running.map((p) => p.exited)), Bun.sleep(STOP_GRACE_MS)]);
    for (const p of running) p.kill('SIGKILL');
    this.redis?.kill('SIGKILL');
    await Promise.all([...running.map((p) => p.exited), this.redis?.exited, this.svc?.stop('SIGKILL')]);
  }

  /** A Redis URL on a database of its own. */
  redisUrl(): string {
    return `redis://127.0.0.1:${this.redisPort}/${this.nextDb++}`;
  }

  /** Mints an agent in the default project. */
  async mint(name: string): Promise<{ id: string; token: string; hmacSecret: string }> {
    const minted = await this.api.call('POST', '/api/v1/projects/default/agents', { name });
    expect(minted.status).toBe(201);
    return { id: minted.body.agent.id, token: minted.body.token, hmacSecret: minted.body.hmac_secret };
  }

  /** The Z4J_* settings an agent of `agent` reads, as a user would set them. */
  agentEnv(agent: { id: string; token: string; hmacSecret: string }, transport: Transport, name: string, home: string): Record<string, string> {
    return {
      Z4J_BRAIN_URL: this.svc.url,
      Z4J_TOKEN: agent.token,
      Z4J_PROJECT_ID: 'default',
      Z4J_HMAC_SECRET: agent.hmacSecret,
      Z4J_TRANSPORT: transport,
      ...(transport === 'longpoll' ? { Z4J_AGENT_ID: agent.id } : {}),
      Z4J_HOME: home,
      Z4J_AGENT_NAME: name,
      // Trust svc's self-signed certificate (httpx and websockets honour it).
      SSL_CERT_FILE: this.certFile,
    };
  }

  /** Starts a long-running process (a worker, a scheduler) stopped with the world. */
  spawn(argv: string[], cwd: string, env: Record<string, string>): Proc {
    const proc = Bun.spawn(argv, { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: env.Z4J_HOME ?? tempDir('z4j-'), ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
    this.processes.push(proc);
    return new Proc(proc);
  }

  async agent(id: string): Promise<any> {
    return (await this.api.call('GET', `/api/v1/projects/default/agents/${id}`)).body;
  }

  /** Waits for the agent to be online; the failure names what the process logged. */
  async waitOnline(id: string, proc: Proc, ms = 60_000): Promise<void> {
    await eventually(async () => (await this.agent(id))?.state === 'online', ms, `agent ${id} online`).catch((e) => {
      throw new Error(`${(e as Error).message}\nprocess log tail:\n${proc.tail()}`);
    });
  }

  async task(engine: string, taskId: string): Promise<any> {
    const res = await this.api.call('GET', `/api/v1/projects/default/tasks/${engine}/${encodeURIComponent(taskId)}`);
    return res.status === 200 ? res.body : null;
  }

  /** Waits for the task to reach `state` and, with `fields`, to hold those values too: a worker's
   * events of one task may reach svc in more than one upload (a failure reported before the
   * receipt that names the task and its arguments). */
  async waitForTask(proc: Proc, engine: string, taskId: string, state: string, fields: Record<string, unknown> = {}, ms = 30_000): Promise<any> {
    const holds = (t: any) => t?.state === state && Object.entries(fields).every(([k, v]) => Bun.deepEquals(t[k], v));
    try {
      await eventually(async () => holds(await this.task(engine, taskId)), ms, `${engine} task ${taskId} to be ${state} with ${JSON.stringify(fields)}`);
    } catch (e) {
      throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(await this.task(engine, taskId))}\nworker log tail:\n${proc.tail()}`);
    }
    return this.task(engine, taskId);
  }

  async command(id: string): Promise<any> {
    return (await this.api.call('GET', `/api/v1/projects/default/commands/${id}`)).body;
  }

  /** Waits for a command to end (completed or failed). */
  async waitForCommand(proc: Proc, id: string, ms = 30_000): Promise<any> {
    try {
      await eventually(async () => ['completed', 'failed', 'timeout'].includes((await this.command(id)).status), ms, `command ${id} to finish`);
    } catch (e) {
      throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(await this.command(id))}\nworker log tail:\n${proc.tail()}`);
    }
    return this.command(id);
  }
}

/** Runs a Python script of an app directory with a venv's python and returns what it printed last, as JSON. */
export async function runPython(bin: string, cwd: string, args: string[], env: Record<string, string>): Promise<any> {
  const p = Bun.spawn([join(bin, 'python'), ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`python ${args.join(' ')} (in ${cwd}) exited ${code}: ${err}`);
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

/** The warning z4j agents log when they think svc's version does not match theirs. */
export const UPGRADE_WARNING = /version mismatch with brain|Upgrade recommended/i;
