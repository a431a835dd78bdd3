// Interop with the real z4j agents from PyPI, one cell per engine and
// transport: a real worker of the engine on a real Redis server runs the
// engine's z4j adapter, whose agent connects to the compiled dist/svc over
// https (WebSocket or long-poll). Tasks the worker runs must appear in svc
// with the states, names, arguments, results and retry counts the engine
// reports; a cancel and a retry issued through svc's API must reach the agent
// and their results be recorded, or, where the adapter cannot do it, end with
// the refusal the user sees (svc's own, at once, where a WebSocket agent did
// not advertise the action; the agent's otherwise).
//
// SVC_INTEROP_ENGINES=rq,huey runs only those engines (while developing one).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { tempDir } from '../helpers/home.ts';
import { startReceiver, unavailable } from '../helpers/outbound-netns.ts';
import { Z4J_AGENT_LINE } from '../../src/version.ts';
import { APP_ROOT, UPGRADE_WARNING, World, runPython, venvBin, type Proc, type Transport } from './harness.ts';
import { isRefusal, type Cell, type Engine } from './engines/engine.ts';
import { ENGINES } from './engines/index.ts';

const TRANSPORTS: Transport[] = ['ws', 'longpoll'];
const wanted = process.env.SVC_INTEROP_ENGINES?.split(',');
const engines = ENGINES.filter((e) => !wanted || wanted.includes(e.name));
const world = new World();
/** Each cell once its agent is online, or why it did not come up. */
const cells = new Map<string, Cell | Error>();
const key = (engine: Engine, transport: Transport) => `${engine.name}/${transport}`;

async function startCell(engine: Engine, transport: Transport): Promise<Cell> {
  const name = `interop-${engine.name}-${transport}`;
  const agent = await world.mint(name);
  const appDir = join(APP_ROOT, engine.app);
  const env = { INTEROP_BROKER_URL: world.redisUrl(), ...engine.env };
  const home = tempDir(`z4j-${engine.name}-${transport}-`);
  const bin = venvBin(engine.venv ?? engine.app);
  const proc = world.spawn(engine.worker(bin, { transport, name }), appDir, { ...env, ...world.agentEnv(agent, transport, name, home) });
  await world.waitOnline(agent.id, proc);
  return {
    world,
    api: world.api,
    engine,
    transport,
    agentId: agent.id,
    proc,
    appDir,
    env,
    enqueue: async (kind, ...args) => String((await runPython(bin, appDir, ['enqueue.py', kind, ...args], env)).task_id),
  };
}

beforeAll(async () => {
  await world.start();
  // Every worker starts at once: their start-ups overlap instead of adding up.
  const jobs = engines.flatMap((e) => TRANSPORTS.filter((t) => !e.skip?.[t]).map((t) => ({ e, t })));
  const settled = await Promise.allSettled(jobs.map(({ e, t }) => startCell(e, t)));
  settled.forEach((s, i) => cells.set(key(jobs[i]!.e, jobs[i]!.t), s.status === 'fulfilled' ? s.value : (s.reason as Error)));
}, 180_000);

afterAll(() => world.stop(), 60_000);

function cellOf(engine: Engine, transport: Transport): Cell {
  const cell = cells.get(key(engine, transport));
  if (!cell) throw new Error(`${key(engine, transport)} was not started`);
  if (cell instanceof Error) throw cell;
  return cell;
}

for (const engine of engines) {
  for (const transport of TRANSPORTS) {
    const skipped = engine.skip?.[transport];
    const label = `${engine.name} over ${transport === 'ws' ? 'WebSocket' : 'long-poll'}`;
    if (skipped) {
      test.skip(`${label}: skipped, ${skipped}`, () => {});
      continue;
    }
    describe(label, () => {
      test('the agent is online with what it reported, and its worker log holds no upgrade warning', async () => {
        const cell = cellOf(engine, transport);
        const agent = await world.agent(cell.agentId);
        expect(agent.state).toBe('online');
        expect(agent.is_outdated).toBe(false);
        if (transport === 'ws') {
          expect(agent.protocol_version).toBe('2');
          expect(agent.engine_adapters).toContain(engine.name);
          expect(agent.capabilities[engine.name]).toEqual(expect.arrayContaining(engine.capabilities));
          // The agent compares svc's version with its own right after the handshake, then logs this line.
          await waitForLog(cell.proc, /z4j agent connected: session=/);
        } else {
          // Long-poll agents send no hello: no advertised version, no inventory (the dashboard shows `-`).
          expect(agent.protocol_version).toBe('');
          expect(agent.engine_adapters).toEqual([]);
        }
        expect(cell.proc.logs()).not.toMatch(UPGRADE_WARNING);
      }, 60_000);

      test('successes, failures and retries land with their states, names, arguments and results', async () => {
        const cell = cellOf(engine, transport);
        const [ok, bad, flaky] = await Promise.all([cell.enqueue('add', '2', '3'), cell.enqueue('fail', transport), cell.enqueue('flaky', transport)]);
        expect(await world.waitForTask(cell.proc, engine.name, ok, 'success', { name: engine.names.add })).toMatchObject({ name: engine.names.add, ...engine.added });
        const failed = await world.waitForTask(cell.proc, engine.name, bad, 'failure', { name: engine.names.fail });
        if (engine.failure) expect(failed.exception).toMatch(engine.failure);
        else expect(failed.exception).toBeNull();
        const retried = await world.waitForTask(cell.proc, engine.name, flaky, 'success', { name: engine.names.flaky });
        // The retry count the engine reports: the flaky task fails once, and adapters that send no
        // task.retried report none.
        expect(retried.retry_count).toBe(engine.retriedEvents.includes('task.retried') ? 1 : 0);
        const detail = await world.task(engine.name, flaky);
        expect(detail.events.map((e: any) => e.kind)).toEqual(expect.arrayContaining(engine.retriedEvents));
      }, 90_000);

      test(isRefusal(engine.cancel) ? `a cancel issued through svc is refused by the agent: ${engine.cancel.why}` : 'a cancel issued through svc reaches the agent and its result is recorded', async () => {
        const cell = cellOf(engine, transport);
        const spec = engine.cancel;
        const target = await cell.enqueue('sleepy', ...(isRefusal(spec) ? ['0.1'] : spec.sleepy));
        if (!isRefusal(spec)) await world.waitForTask(cell.proc, engine.name, target, spec.before);
        const issued = await world.api.call('POST', '/api/v1/projects/default/commands/cancel-task', { engine: engine.name, task_id: target, agent_id: cell.agentId });
        if (isRefusal(spec) && transport === 'ws') {
          // A WebSocket agent advertised what its adapter supports: svc refuses at once, nothing is sent.
          expect([issued.status, issued.body.error]).toEqual([409, spec.code ?? 'capability_not_advertised']);
          return;
        }
        expect(issued.status).toBe(202);
        const done = await world.waitForCommand(cell.proc, issued.body.id);
        expect(done.dispatched_at).not.toBeNull();
        if (isRefusal(spec)) {
          expect(done.status).toBe('failed');
          expect(done.error).toMatch(spec.error);
          return;
        }
        expect(done).toMatchObject({ status: 'completed', error: null });
        if (spec.result) expect(done.result).toMatchObject(spec.result);
        if (spec.after) await world.waitForTask(cell.proc, engine.name, target, spec.after);
      }, 90_000);

      test(isRefusal(engine.retry) ? `a retry issued through svc is refused by the agent: ${engine.retry.why}` : 'a retry issued through svc re-runs the failed task and its result is recorded', async () => {
        const cell = cellOf(engine, transport);
        const spec = engine.retry;
        const args = [`${transport}-retry`];
        const bad = await cell.enqueue('fail', ...args);
        await world.waitForTask(cell.proc, engine.name, bad, 'failure');
        const body = { engine: engine.name, task_id: bad, agent_id: cell.agentId, ...(isRefusal(spec) ? {} : spec.body?.(args)) };
        const issued = await world.api.call('POST', '/api/v1/projects/default/commands/retry-task', body);
        if (isRefusal(spec) && transport === 'ws') {
          expect([issued.status, issued.body.error]).toEqual([409, spec.code ?? 'capability_not_advertised']);
          return;
        }
        expect(issued.status).toBe(202);
        const done = await world.waitForCommand(cell.proc, issued.body.id);
        if (isRefusal(spec)) {
          expect(done.status).toBe('failed');
          expect(done.error).toMatch(spec.error);
          return;
        }
        expect(done).toMatchObject({ status: 'completed', error: null });
        const rerun = spec.newTaskId(done.result);
        expect(rerun).not.toBe(bad);
        const expected = { name: engine.names.fail, ...(spec.rerun?.(args) ?? { args }) };
        expect(await world.waitForTask(cell.proc, engine.name, rerun, 'failure', expected)).toMatchObject(expected);
      }, 90_000);
    });
  }
}

const noReceiver = unavailable();
describe.skipIf(Boolean(noReceiver) || !engines.includes(ENGINES[0]!))('notifications from a real worker', () => {
  test('a failing Celery task produces an inbox row and a signed webhook delivery within 2 s', async () => {
    const cell = cellOf(ENGINES[0]!, 'ws');
    const receiver = await startReceiver();
    try {
      const secret = 'interop-webhook-secret-0123456789';
      const channel = await world.api.call('POST', '/api/v1/projects/default/notifications/channels', {
        name: 'interop receiver',
        type: 'webhook',
        config: { url: `http://${receiver.address}/svc-notify`, hmac_secret: secret },
      });
      expect(channel.status).toBe(201);
      // The administrator's task.failed subscription (a project default since first boot) gets the channel too.
      const subs = (await world.api.call('GET', '/api/v1/user/subscriptions')).body;
      const failed = subs.find((s: any) => s.trigger === 'task.failed');
      expect((await world.api.call('PATCH', `/api/v1/user/subscriptions/${failed.id}`, { project_channel_ids: [channel.body.id] })).status).toBe(200);
      const taskId = await cell.enqueue('fail', 'notify');
      await world.waitForTask(cell.proc, 'celery', taskId, 'failure');
      const stored = performance.now();
      let delivered: { body: string; headers: Record<string, unknown> } | undefined;
      let inboxed = false;
      while (performance.now() - stored < 2000 && !(delivered && inboxed)) {
        delivered ??= (await receiver.log()).find((s) => s.path === '/svc-notify' && s.body.includes(taskId));
        inboxed ||= (await world.api.call('GET', '/api/v1/user/notifications')).body.items.some((i: any) => i.data.task_id === taskId);
        if (!(delivered && inboxed)) await Bun.sleep(50);
      }
      expect({ delivered: Boolean(delivered), inboxed }).toEqual({ delivered: true, inboxed: true });
      const body = JSON.parse(delivered!.body);
      expect(body).toMatchObject({ trigger: 'task.failed', task_id: taskId, task_name: 'interop.fail', engine: 'celery', project_slug: 'default' });
      expect(body.exception).toContain('ValueError');
      const ts = String(delivered!.headers['x-svc-timestamp']);
      const signature = new Bun.CryptoHasher('sha256', secret).update(`${ts}.${delivered!.body}`).digest('hex');
      expect(delivered!.headers['x-svc-signature']).toBe(`sha256=${signature}`);
    } finally {
      await receiver.stop();
    }
  }, 60_000);
});

describe('what agents see of svc', () => {
  test('an agent of an older z4j line still logs the upgrade warning', async () => {
    const name = 'interop-outdated';
    const agent = await world.mint(name);
    const proc = world.spawn([join(venvBin('celery'), 'python'), 'outdated_agent.py'], join(APP_ROOT, 'bare'), world.agentEnv(agent, 'ws', name, tempDir('z4j-outdated-')));
    await world.waitOnline(agent.id, proc);
    await waitForLog(proc, UPGRADE_WARNING);
    expect(proc.logs()).toContain(`(agent=1.12.0, brain=${Z4J_AGENT_LINE}.0+svc.`);
  }, 60_000);
});

async function waitForLog(proc: Proc, pattern: RegExp, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(proc.logs())) {
    if (Date.now() > deadline) throw new Error(`the log never showed ${pattern}:\n${proc.tail()}`);
    await Bun.sleep(100);
  }
}
