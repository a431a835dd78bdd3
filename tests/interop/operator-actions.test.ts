// Operator actions against real workers, one cell per engine that describes
// them (engines/*.ts `actions`) and transport: each action goes through svc's
// API as a command to the engine's z4j agent, and its effect is observed on
// the worker or its broker (celery inspect, Redis), not only in the command's
// status: a bulk retry of 50 failed tasks re-runs 50, a pool resize changes
// the pool, a restart replaces the pool's processes, a rate limit and a new
// consumer show in inspect, a purge empties the queue. Actions the adapter
// does not support end with the refusal the user sees: svc's own at once for a
// WebSocket agent (from what it advertised), the agent's for a long-poll one.
//
// SVC_INTEROP_ENGINES=celery runs only those engines.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { eventually } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { isRefusal, type Engine, type OperatorActions } from './engines/engine.ts';
import { ENGINES } from './engines/index.ts';
import { APP_ROOT, World, runPython, venvBin, type Proc, type Transport } from './harness.ts';

const TRANSPORTS: Transport[] = ['ws', 'longpoll'];
const wanted = process.env.SVC_INTEROP_ENGINES?.split(',');
const engines = ENGINES.filter((e) => !wanted || wanted.includes(e.name));
const world = new World();
const commands = '/api/v1/projects/default/commands';

interface OpsCell {
  engine: Engine;
  actions: OperatorActions;
  transport: Transport;
  agentId: string;
  proc: Proc;
  /** The worker's name as svc and the engine know it. */
  worker: string;
  client(...args: string[]): Promise<any>;
}
const cells = new Map<string, OpsCell | Error>();
const key = (e: Engine, t: Transport) => `${e.name}/${t}`;

async function startCell(engine: Engine, actions: OperatorActions, transport: Transport): Promise<OpsCell> {
  const name = `interop-ops-${engine.name}-${transport}`;
  const agent = await world.mint(name);
  const appDir = join(APP_ROOT, engine.app);
  const env = { INTEROP_BROKER_URL: world.redisUrl(), ...engine.env };
  const bin = venvBin(engine.venv ?? engine.app);
  const proc = world.spawn(actions.worker(bin, { transport, name }), appDir, { ...env, ...world.agentEnv(agent, transport, name, tempDir(`z4j-ops-${transport}-`)) });
  await world.waitOnline(agent.id, proc);
  // The worker as the agent's heartbeats report it (its inspect details).
  let worker = '';
  await eventually(
    async () => {
      const workers = (await world.api.call('GET', '/api/v1/projects/default/workers')).body as any[];
      worker = workers.find((w) => w.name.startsWith(`${name}@`) && w.engine === engine.name)?.name ?? '';
      return worker !== '';
    },
    90_000,
    `svc to know the worker ${name}`,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}\nworker log tail:\n${proc.tail()}`);
  });
  return {
    engine,
    actions,
    transport,
    agentId: agent.id,
    proc,
    worker,
    client: (...args) => runPython(bin, appDir, [actions.client, ...args], env),
  };
}

beforeAll(async () => {
  await world.start();
  const jobs = engines.flatMap((e) => (e.actions ? TRANSPORTS.filter((t) => !e.skip?.[t]).map((t) => ({ e, a: e.actions!, t })) : []));
  const settled = await Promise.allSettled(jobs.map(({ e, a, t }) => startCell(e, a, t)));
  settled.forEach((s, i) => cells.set(key(jobs[i]!.e, jobs[i]!.t), s.status === 'fulfilled' ? s.value : (s.reason as Error)));
}, 240_000);
afterAll(() => world.stop(), 60_000);

function cellOf(engine: Engine, transport: Transport): OpsCell {
  const cell = cells.get(key(engine, transport));
  if (!cell) throw new Error(`${key(engine, transport)} was not started`);
  if (cell instanceof Error) throw cell;
  return cell;
}

/** Issues an action through svc's API and waits for the agent's answer. */
async function act(cell: OpsCell, route: string, body: Record<string, unknown>): Promise<any> {
  const issued = await world.api.call('POST', `${commands}${route}`, { agent_id: cell.agentId, ...body });
  if (issued.status !== 202) throw new Error(`${route}: ${issued.status} ${JSON.stringify(issued.body)}`);
  return world.waitForCommand(cell.proc, issued.body.id, 45_000);
}

const processes = async (cell: OpsCell): Promise<number[]> => ((await cell.client('inspect', 'stats', cell.worker)).value?.pool?.processes ?? []) as number[];

for (const engine of engines) {
  for (const transport of TRANSPORTS) {
    const label = `${engine.name} over ${transport === 'ws' ? 'WebSocket' : 'long-poll'}`;
    if (!engine.actions) {
      test.skip(`${label}: operator-action cells are not described for this engine`, () => {});
      continue;
    }
    if (engine.skip?.[transport]) {
      test.skip(`${label}: skipped, ${engine.skip[transport]}`, () => {});
      continue;
    }
    describe(`operator actions: ${label}`, () => {
      test('a bulk retry of 50 failed tasks re-runs 50', async () => {
        const cell = cellOf(engine, transport);
        const since = new Date(Date.now() - 1000).toISOString().replace('Z', '000+00:00');
        const { task_ids: failed } = await cell.client('fail', '50', `${transport}-bulk`);
        expect(failed).toHaveLength(50);
        // The cells run one after another: this cell's failures are those since the start of this test.
        const filter = { state: 'failure', name: engine.names.fail, since };
        const query = `state=failure&name=${encodeURIComponent(engine.names.fail)}&since=${encodeURIComponent(since)}&limit=100`;
        await eventually(async () => (await world.api.call('GET', `/api/v1/projects/default/tasks?${query}`)).body.items.length >= 50, 60_000, '50 failures in svc').catch((e) => {
          throw new Error(`${(e as Error).message}\n${cell.proc.tail()}`);
        });
        const created = await world.api.call('POST', '/api/v1/projects/default/bulk-jobs', { kind: 'retry', filter, agent_id: cell.agentId });
        expect(created.status).toBe(201);
        expect(created.body.progress.total).toBe(50);
        const id = created.body.id;
        let job: any;
        await eventually(async () => (job = (await world.api.call('GET', `/api/v1/projects/default/bulk-jobs/${id}`)).body).status === 'completed', 120_000, 'the bulk job to finish').catch((e) => {
          throw new Error(`${(e as Error).message}: ${JSON.stringify(job)}\n${cell.proc.tail()}`);
        });
        expect(job.progress).toMatchObject({ total: 50, succeeded: 50, failed: 0, skipped: 0 });
        const items = (await world.api.call('GET', `/api/v1/projects/default/bulk-jobs/${id}/items?limit=100`)).body.items as any[];
        const reruns = items.map((i) => String(i.result.new_task_id));
        expect(new Set(reruns).size).toBe(50);
        expect(reruns.filter((r) => failed.includes(r))).toEqual([]);
        // Each re-run ran on the worker (and failed again, as the task always does).
        for (const rerun of reruns) expect((await world.waitForTask(cell.proc, engine.name, rerun, 'failure', {}, 60_000)).name).toBe(engine.names.fail);
      }, 300_000);

      test('a pool resize changes the pool: grow by one, then back to its size', async () => {
        const cell = cellOf(engine, transport);
        const before = (await processes(cell)).length;
        expect(before).toBe(2);
        expect(await act(cell, '/pool-resize', { worker_name: cell.worker, delta: 1 })).toMatchObject({ action: 'pool_grow', status: 'completed', error: null });
        await eventually(async () => (await processes(cell)).length === before + 1, 30_000, 'the pool to grow');
        expect(await act(cell, '/pool-resize', { worker_name: cell.worker, delta: -1 })).toMatchObject({ action: 'pool_shrink', status: 'completed' });
        await eventually(async () => (await processes(cell)).length === before, 30_000, 'the pool to shrink');
      }, 120_000);

      test("a restart replaces the pool's processes", async () => {
        const cell = cellOf(engine, transport);
        const before = await processes(cell);
        expect(await act(cell, '/restart-worker', { worker_name: cell.worker })).toMatchObject({ action: 'restart_worker', status: 'completed' });
        // Celery's pool restart replaces each process once it is free (an idle one when it next takes work).
        await eventually(async () => (await processes(cell)).some((pid) => !before.includes(pid)), 60_000, 'new pool processes');
      }, 120_000);

      test('a rate limit shows on the worker; "0" clears it', async () => {
        const cell = cellOf(engine, transport);
        const limited = async (marker: string) => JSON.stringify((await cell.client('inspect', 'registered', cell.worker)).value).includes(marker);
        expect(await act(cell, '/rate-limit', { task_name: engine.names.add, rate: '10/m', worker_name: cell.worker })).toMatchObject({ status: 'completed' });
        await eventually(() => limited(`${engine.names.add} [rate_limit=10/m]`), 30_000, 'the rate limit on the worker');
        expect(await act(cell, '/rate-limit', { task_name: engine.names.add, rate: '0', worker_name: cell.worker })).toMatchObject({ status: 'completed' });
        await eventually(async () => !(await limited('rate_limit=10/m')), 30_000, 'the rate limit cleared');
      }, 120_000);

      test('add and cancel a consumer: the worker consumes the queue, then no longer', async () => {
        const cell = cellOf(engine, transport);
        const consumes = async () => JSON.stringify((await cell.client('inspect', 'active_queues', cell.worker)).value).includes(`"${cell.actions.extraQueue}"`);
        expect(await consumes()).toBe(false);
        expect(await act(cell, '/add-consumer', { worker_name: cell.worker, queue: cell.actions.extraQueue })).toMatchObject({ action: 'add_consumer', status: 'completed' });
        await eventually(consumes, 30_000, 'the new consumer');
        expect(await act(cell, '/cancel-consumer', { worker_name: cell.worker, queue: cell.actions.extraQueue })).toMatchObject({ action: 'cancel_consumer', status: 'completed' });
        await eventually(async () => !(await consumes()), 30_000, 'the consumer cancelled');
      }, 120_000);

      test('a purge with its confirm token empties the queue', async () => {
        const cell = cellOf(engine, transport);
        const queue = cell.actions.parkedQueue;
        await cell.client('park', '5');
        expect((await cell.client('llen', queue)).value).toBe(5);
        const noDepth = cell.actions.noDepth;
        if (!noDepth) {
          // The depth the agent's heartbeats report is the depth confirmed (and checked again by the agent).
          await eventually(
            async () => ((await world.api.call('GET', '/api/v1/projects/default/queues')).body as any[]).some((q) => q.name === queue && q.pending_count === 5),
            60_000,
            'svc to see the parked depth',
          );
        }
        const confirm = await world.api.call('POST', `${commands}/purge-queue/confirm-token`, { queue, engine: engine.name, agent_id: cell.agentId });
        expect(confirm.status).toBe(201);
        expect(confirm.body).toMatchObject(noDepth ? { depth: null, requires_force: true } : { depth: 5, requires_force: false });
        if (noDepth) {
          // Without a depth the agent cannot check the token: svc refuses unless the admin forces it.
          const refused = await world.api.call('POST', `${commands}/purge-queue`, { queue, confirm_token: confirm.body.confirm_token });
          expect([refused.status, refused.body.error]).toEqual([409, 'queue_depth_unknown']);
        }
        const issued = await world.api.call('POST', `${commands}/purge-queue`, { queue, confirm_token: confirm.body.confirm_token, ...(noDepth ? { force: true } : {}) });
        expect(issued.status).toBe(202);
        const done = await world.waitForCommand(cell.proc, issued.body.id, 45_000);
        expect(done).toMatchObject({ status: 'completed', error: null });
        expect((await cell.client('llen', queue)).value).toBe(0);
      }, 120_000);

      for (const { route, body, refusal } of engine.actions!.refused) {
        test(`${route.slice(1)} is refused: ${refusal.why}`, async () => {
          const cell = cellOf(engine, transport);
          const issued = await world.api.call('POST', `${commands}${route}`, { ...body, agent_id: cell.agentId });
          if (transport === 'ws') {
            // svc refuses at once from what the agent advertised.
            expect(issued.status).toBe(409);
            expect(issued.body.error).toBe('capability_not_advertised');
            return;
          }
          // A long-poll agent reports no inventory: the agent refuses, and the command says why.
          expect(issued.status).toBe(202);
          const done = await world.waitForCommand(cell.proc, issued.body.id);
          expect(isRefusal(refusal) && done.status).toBe('failed');
          expect(done.error).toMatch(refusal.error);
        }, 60_000);
      }
    });
  }
}
