// Interop with the real z4j scheduler adapters from PyPI: Celery beat
// (z4j-celerybeat), rq-scheduler (z4j-rqscheduler) and APScheduler
// (z4j-apscheduler). Each scheduler runs as a user sets it up, with its z4j
// agent inside, on a real Redis server, against the compiled dist/svc, once
// over WebSocket and once over long-poll. What must hold here is that each
// agent comes online with the scheduler adapter it reported, that nothing it
// sends is refused (by svc's account, /metrics and
// its log, and by the agent's: its log and the telemetry-loss counters of its
// status samples), and that the schedules keep firing meanwhile. Where a worker
// with its own engine agent runs what the scheduler sends (Celery, RQ), the
// fired tasks must land in svc. The schedules they report, and svc's controls
// of them, are schedule-control.test.ts's.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { dirname, join } from 'node:path';
import { eventually } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { APP_ROOT, UPGRADE_WARNING, World, venvBin, type Proc, type Transport } from './harness.ts';

interface FiredTask {
  engine: string;
  name: string;
  /** The engine's task id when every fire reuses one (rq-scheduler enqueues its repeating job under the
   * schedule's job id): the fires are that task's repeated runs. Otherwise each fire is a task of its own. */
  taskId?: string;
}

interface SchedulerSpec {
  /** The adapter's name, as the agent reports it (hello `schedulers`). */
  adapter: string;
  /** Folder under app/ (also the cwd of its processes). */
  app: string;
  venv: string;
  /** The scheduler process's argv (the z4j agent runs inside it). */
  scheduler(bin: string, home: string): string[];
  /** Capability tokens the adapter advertises (a subset is enough). */
  capabilities: string[];
  /** A worker with its own engine agent that runs what the scheduler sends (WebSocket cells only). */
  worker?: { argv(bin: string, name: string): string[]; env?(broker: string): Record<string, string>; fired: FiredTask[] };
  /** When no worker runs the fires: the scheduler's own log shows them (at least twice each). */
  firesLogged?: RegExp[];
}

const SCHEDULERS: SchedulerSpec[] = [
  {
    adapter: 'celery-beat',
    app: 'celerybeat',
    venv: 'celery',
    // The agent starts on beat_init (periodic.py); -s keeps beat's state file out of the app folder.
    scheduler: (bin, home) => [join(bin, 'celery'), '-A', 'periodic', 'beat', '-l', 'info', '-s', join(home, 'celerybeat-schedule')],
    capabilities: ['list', 'trigger_now'],
    worker: {
      argv: (bin, name) => [join(bin, 'celery'), '-A', 'periodic', 'worker', '--pool', 'threads', '--concurrency', '2', '-l', 'info', '-n', `${name}@%h`],
      fired: [
        { engine: 'celery', name: 'interop.beat.tick' },
        { engine: 'celery', name: 'interop.beat.add' },
      ],
    },
  },
  {
    adapter: 'rq-scheduler',
    app: 'rqscheduler',
    venv: 'rqscheduler',
    scheduler: (bin) => [join(bin, 'python'), 'scheduler.py'],
    capabilities: ['list', 'trigger_now', 'create', 'update', 'enable', 'disable', 'delete'],
    worker: {
      argv: (bin, name) => [join(bin, 'rq'), 'worker', '-c', 'worker_settings', '-w', 'z4j_rq.worker.Worker', '-n', name, '--logging_level', 'INFO', 'default'],
      // z4j-rq's worker bootstrap reads its Redis from here.
      env: (broker) => ({ Z4J_RQ_REDIS_URL: broker }),
      fired: [
        { engine: 'rq', name: 'jobs.tick', taskId: 'interop-rq-tick' },
        { engine: 'rq', name: 'jobs.add', taskId: 'interop-rq-add' },
      ],
    },
  },
  {
    adapter: 'apscheduler',
    app: 'apscheduler',
    venv: 'apscheduler',
    scheduler: (bin) => [join(bin, 'python'), 'scheduler.py'],
    capabilities: ['list', 'trigger_now', 'create', 'update', 'enable', 'disable', 'delete'],
    firesLogged: [/interop job interop-aps-tick ran: 'tick from apscheduler'/g, /interop job interop-aps-add ran: 5/g],
  },
];

const TRANSPORTS: Transport[] = ['ws', 'longpoll'];

interface Running {
  agentId: string;
  proc: Proc;
  worker?: { agentId: string; proc: Proc };
}

const world = new World();
const running = new Map<string, Running | Error>();
const key = (s: SchedulerSpec, t: Transport) => `${s.adapter}/${t}`;

/** Lines of an agent's log that tell of trouble with svc: errors, refused uploads, dropped connections. */
const AGENT_TROUBLE = [
  /scheduler_upgrade_required|Boundary-D scheduler adapter/i,
  /brain stored \d+\/\d+ frames/,
  /brain rejected/i,
  /websocket closed/i,
  /z4j agent: .*(disconnect|reconnect)/i,
  /refusing to send|dropping unparseable/i,
  /^.*\bWARNING\b.*z4j.*$/m,
  /^.*\b(ERROR|CRITICAL)\b.*$/m,
  /Traceback \(most recent call last\)/,
];

async function start(spec: SchedulerSpec, transport: Transport): Promise<Running> {
  const name = `interop-${spec.app}-${transport}`;
  const bin = venvBin(spec.venv);
  const cwd = join(APP_ROOT, spec.app);
  // One Redis database per scheduler: two schedulers never fire into one queue.
  const broker = world.redisUrl();
  const env = { INTEROP_BROKER_URL: broker, PYTHONUNBUFFERED: '1' };
  const agent = await world.mint(name);
  const home = tempDir(`z4j-${spec.app}-${transport}-`);
  const proc = world.spawn(spec.scheduler(bin, home), cwd, { ...env, ...world.agentEnv(agent, transport, name, home) });
  let worker: Running['worker'];
  if (spec.worker && transport === 'ws') {
    const workerName = `${name}-worker`;
    const workerAgent = await world.mint(workerName);
    const workerHome = tempDir(`z4j-${spec.app}-worker-`);
    const workerProc = world.spawn(spec.worker.argv(bin, workerName), cwd, { ...env, ...spec.worker.env?.(broker), ...world.agentEnv(workerAgent, 'ws', workerName, workerHome) });
    worker = { agentId: workerAgent.id, proc: workerProc };
  }
  await world.waitOnline(agent.id, proc);
  if (worker) await world.waitOnline(worker.agentId, worker.proc);
  return { agentId: agent.id, proc, worker };
}

beforeAll(async () => {
  await world.start();
  const jobs = SCHEDULERS.flatMap((s) => TRANSPORTS.map((t) => ({ s, t })));
  const settled = await Promise.allSettled(jobs.map(({ s, t }) => start(s, t)));
  settled.forEach((r, i) => running.set(key(jobs[i]!.s, jobs[i]!.t), r.status === 'fulfilled' ? r.value : (r.reason as Error)));
}, 120_000);

afterAll(() => world.stop(), 60_000);

function runningOf(spec: SchedulerSpec, transport: Transport): Running {
  const r = running.get(key(spec, transport));
  if (!r) throw new Error(`${key(spec, transport)} was not started`);
  if (r instanceof Error) throw r;
  return r;
}

async function waitForLog(proc: Proc, pattern: RegExp, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(proc.logs())) {
    if (Date.now() > deadline) throw new Error(`the log never showed ${pattern}:\n${proc.tail()}`);
    await Bun.sleep(100);
  }
}

function expectNoTrouble(proc: Proc, what: string): void {
  const logs = proc.logs();
  for (const pattern of AGENT_TROUBLE) {
    const hit = pattern.exec(logs);
    if (hit) throw new Error(`${what} logged ${JSON.stringify(hit[0])} (${pattern}):\n${proc.tail()}`);
  }
  expect(logs).not.toMatch(UPGRADE_WARNING);
}

/** svc's log lines about one agent at warn level or above (svc logs JSON lines, or text at a TTY). */
function svcComplaintsAbout(agentId: string): string[] {
  const lines = (world.svc.stderr() + world.svc.stdout()).split('\n').filter((l) => l.includes(agentId));
  return lines.filter((l) => /"level":\s*"?(40|50|60|warn|error|fatal)|\b(WARN|ERROR|FATAL)\b/i.test(l));
}

/** The agent's status samples (agent_status frames svc stored), newest first. */
async function healthOf(agentId: string): Promise<any[]> {
  const res = await world.api.call('GET', `/api/v1/projects/default/agents/${agentId}/health`);
  expect(res.status).toBe(200);
  return res.body;
}

const LOSS_COUNTERS = ['capacity_evicted_frames', 'content_rejected_frames', 'event_records', 'command_results', 'other_frames', 'unclassified_frames'];

/** svc's /metrics with the bearer token svc minted into $SVC_HOME/secret.env, as an operator reads it. */
async function metrics(): Promise<string> {
  const home = dirname(dirname(world.certFile));
  const secrets = await Bun.file(join(home, 'secret.env')).text();
  const token = /^SVC_METRICS_AUTH_TOKEN=['"]?([^'"\n]+)/m.exec(secrets)?.[1];
  if (!token) throw new Error(`no SVC_METRICS_AUTH_TOKEN in ${home}/secret.env`);
  const res = await fetch(`${world.svc.url}/metrics`, { headers: { authorization: `Bearer ${token}` }, tls: { ca: world.api.ca } } as RequestInit);
  expect(res.status).toBe(200);
  return res.text();
}

/** svc_agent_frames_total samples: transport, type, outcome and count. */
function frameCounts(text: string): { transport: string; type: string; outcome: string; n: number }[] {
  const out: { transport: string; type: string; outcome: string; n: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('svc_agent_frames_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    out.push({ transport: labels.transport!, type: labels.type!, outcome: labels.outcome!, n: Number(line.split(' ').at(-1)) });
  }
  return out;
}

/** How many fires of `f` ran to success, by what svc shows of its tasks. */
async function successfulFires(f: FiredTask): Promise<number> {
  if (f.taskId) {
    const task = await world.task(f.engine, f.taskId);
    if (task?.name !== f.name) return 0;
    return task.events.filter((e: any) => e.kind === 'task.succeeded').length;
  }
  const res = await world.api.call('GET', `/api/v1/projects/default/tasks?engine=${f.engine}&name=${encodeURIComponent(f.name)}&state=success&limit=50`);
  expect(res.status).toBe(200);
  return res.body.items.filter((t: any) => t.name === f.name).length;
}

for (const spec of SCHEDULERS) {
  describe(spec.adapter, () => {
    test('over WebSocket: the agent is online with the scheduler adapter it reported', async () => {
      const r = runningOf(spec, 'ws');
      // The agent logs this right after svc's hello_ack, once it has compared versions.
      await waitForLog(r.proc, /z4j agent connected: session=/);
      const agent = await world.agent(r.agentId);
      expect(agent).toMatchObject({ state: 'online', protocol_version: '2', is_outdated: false, engine_adapters: [], scheduler_adapters: [spec.adapter] });
      expect(agent.capabilities[spec.adapter]).toEqual(expect.arrayContaining([...spec.capabilities, 'external_schedule_stable_snapshot_v1']));
    }, 30_000);

    test('over long-poll: the agent is online (long-poll sends no hello, so no adapter inventory)', async () => {
      const r = runningOf(spec, 'longpoll');
      const agent = await world.agent(r.agentId);
      expect(agent.state).toBe('online');
      expect(agent.protocol_version).toBe('');
      expect(agent.scheduler_adapters).toEqual([]);
    }, 30_000);

    if (spec.worker) {
      const fired = spec.worker.fired;
      test(`the scheduled tasks fire and land in svc, reported by the worker's agent (${fired.map((f) => f.name).join(', ')})`, async () => {
        const r = runningOf(spec, 'ws');
        for (const f of fired) {
          await eventually(async () => (await successfulFires(f)) >= 2, 30_000, `two successful fires of ${f.engine} task ${f.name}`).catch((e) => {
            throw new Error(`${(e as Error).message}\nscheduler log tail:\n${r.proc.tail(3000)}\nworker log tail:\n${r.worker!.proc.tail(3000)}`);
          });
        }
      }, 60_000);
    } else {
      test('the scheduled jobs fire while the agent is connected', async () => {
        for (const transport of TRANSPORTS) {
          const r = runningOf(spec, transport);
          for (const pattern of spec.firesLogged!) {
            await eventually(() => (r.proc.logs().match(pattern)?.length ?? 0) >= 2, 20_000, `${pattern} twice in the ${transport} scheduler's log`).catch((e) => {
              throw new Error(`${(e as Error).message}\n${r.proc.tail()}`);
            });
          }
          expect((await world.agent(r.agentId)).state).toBe('online');
        }
      }, 45_000);
    }

    test('nothing the agents sent was refused: svc logged no complaint, the agents logged no trouble and count no lost frames', async () => {
      for (const transport of TRANSPORTS) {
        const r = runningOf(spec, transport);
        const agents = [{ id: r.agentId, proc: r.proc, what: `the ${spec.adapter} agent over ${transport}` }];
        if (r.worker) agents.push({ id: r.worker.agentId, proc: r.worker.proc, what: `the worker agent beside ${spec.adapter}` });
        for (const a of agents) {
          // Status samples arrive with each heartbeat: at least one has been stored.
          await eventually(async () => (await healthOf(a.id)).length > 0, 20_000, `a status sample of ${a.what}`);
          for (const sample of await healthOf(a.id)) {
            for (const counter of LOSS_COUNTERS) expect({ what: a.what, counter, n: Number(sample.telemetry_loss?.[counter] ?? 0) }).toEqual({ what: a.what, counter, n: 0 });
          }
          expect({ what: a.what, svc: svcComplaintsAbout(a.id) }).toEqual({ what: a.what, svc: [] });
          expectNoTrouble(a.proc, a.what);
          expect((await world.agent(a.id)).state).toBe('online');
        }
      }
    }, 45_000);
  });
}

describe('what svc counted of every scheduler agent', () => {
  test('every frame was routed as accepted and stored (no drop, no transient failure, no scheduler_upgrade_required)', async () => {
    const counts = frameCounts(await metrics());
    // Heartbeats at least, on both transports.
    expect(counts.filter((c) => c.type === 'heartbeat' && c.n > 0).map((c) => c.transport).sort()).toEqual(expect.arrayContaining(['longpoll', 'ws']));
    expect(counts.filter((c) => c.outcome !== 'durable' && c.n > 0)).toEqual([]);
  }, 30_000);
});
