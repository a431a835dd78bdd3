// Operator actions against real workers, one cell per engine and transport:
// each action goes through svc's API as a command to the engine's z4j agent,
// and its effect is observed on the worker or its broker (celery inspect,
// Redis), not only in the command's status: a bulk retry of failed tasks
// re-runs them (or ends with what the agent answers for each), a pool resize
// changes the pool, a restart replaces the pool's processes, a rate limit and a
// new consumer show in inspect, a purge empties the queue, dead letters are
// listed and requeued. Every other action (engines/*.ts `capabilities` do not
// advertise it) ends with the refusal the user sees: svc's own at once for a
// WebSocket agent (from what it advertised), the agent's for a long-poll one.
//
// SVC_INTEROP_ENGINES=celery runs only those engines.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { eventually } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import type { Engine, OperatorActions } from './engines/engine.ts';
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
  /** The worker's name as svc and the engine know it (Celery); the agent's name otherwise. */
  worker: string;
  client(...args: string[]): Promise<any>;
  enqueue(kind: string, ...args: string[]): Promise<string>;
}
const cells = new Map<string, OpsCell | Error>();
const key = (e: Engine, t: Transport) => `${e.name}/${t}`;

async function startCell(engine: Engine, actions: OperatorActions, transport: Transport): Promise<OpsCell> {
  const name = `interop-ops-${engine.name}-${transport}`;
  const agent = await world.mint(name);
  const appDir = join(APP_ROOT, engine.app);
  const env = { INTEROP_BROKER_URL: world.redisUrl(), ...engine.env };
  const bin = venvBin(engine.venv ?? engine.app);
  const argv = (actions.worker ?? engine.worker)(bin, { transport, name });
  const proc = world.spawn(argv, appDir, { ...env, ...world.agentEnv(agent, transport, name, tempDir(`z4j-ops-${transport}-`)) });
  await world.waitOnline(agent.id, proc);
  // The worker as the agent's heartbeats report it (its inspect details).
  let worker = name;
  if (actions.inspect) {
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
  }
  return {
    engine,
    actions,
    transport,
    agentId: agent.id,
    proc,
    worker,
    client: (...args) => runPython(bin, appDir, [actions.client!, ...args], env),
    enqueue: async (kind, ...args) => String((await runPython(bin, appDir, ['enqueue.py', kind, ...args], env)).task_id),
  };
}

beforeAll(async () => {
  await world.start();
  const jobs = engines.flatMap((e) => TRANSPORTS.filter((t) => !e.skip?.[t]).map((t) => ({ e, a: e.actions, t })));
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
const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Actions addressed to one worker: svc issues them only for a worker an agent reported. */
const WORKER_ROUTES: { route: string; body: Record<string, unknown> }[] = [
  { route: '/pool-resize', body: { delta: 1 } },
  { route: '/restart-worker', body: {} },
  { route: '/add-consumer', body: { queue: 'interop.extra' } },
  { route: '/cancel-consumer', body: { queue: 'interop.extra' } },
];

/** Actions by the capability token that gates each and the action the agent is sent: an engine whose
 * adapter does not advertise the token gets the action refused. */
const GATED: { route: string; token: string; wire: string; body: (c: OpsCell) => Record<string, unknown> }[] = [
  // On every worker (no worker_name): the agent's adapter answers.
  { route: '/rate-limit', token: 'rate_limit', wire: 'rate_limit', body: (c) => ({ task_name: c.engine.names.add, rate: '10/m' }) },
  { route: '/requeue-dead-letter', token: 'requeue_dead_letter', wire: 'requeue_dead_letter', body: (c) => ({ engine: c.engine.name, task_id: 'no-such-dead-letter' }) },
  { route: '/list-dead-letters', token: 'list_dead_letters', wire: 'dlq.list', body: (c) => ({ engine: c.engine.name }) },
];

/** `n` failed tasks of the cell's engine, run and reported to svc. */
async function failures(cell: OpsCell, n: number, marker: string): Promise<string[]> {
  const ids: string[] = cell.actions.client
    ? (await cell.client('fail', String(n), marker)).task_ids
    : await Promise.all(Array.from({ length: n }, (_, i) => cell.enqueue('fail', `${marker}-${i}`)));
  expect(ids).toHaveLength(n);
  for (const id of ids) await world.waitForTask(cell.proc, cell.engine.name, id, 'failure', {}, 60_000);
  return ids;
}

/** A bulk retry job of these failed tasks (the filter svc matches them by). */
async function bulkRetry(cell: OpsCell, taskIds: string[]): Promise<{ status: number; body: any }> {
  const filter = { engine: cell.engine.name, state: 'failure', name: cell.engine.names.fail, task_ids: taskIds };
  return world.api.call('POST', '/api/v1/projects/default/bulk-jobs', { kind: 'retry', filter, agent_id: cell.agentId });
}

async function finishedJob(cell: OpsCell, id: string): Promise<{ job: any; items: any[] }> {
  let job: any;
  await eventually(async () => (job = (await world.api.call('GET', `/api/v1/projects/default/bulk-jobs/${id}`)).body).status === 'completed', 120_000, 'the bulk job to finish').catch((e) => {
    throw new Error(`${(e as Error).message}: ${JSON.stringify(job)}\n${cell.proc.tail()}`);
  });
  return { job, items: (await world.api.call('GET', `/api/v1/projects/default/bulk-jobs/${id}/items?limit=100`)).body.items };
}

/** Reads each RQ job's ended_at now; the function returned waits until each has changed: it ran again. */
async function ranAgain(cell: OpsCell, ids: string[]): Promise<() => Promise<void>> {
  const before = (await cell.client('ended', ...ids)).value as Record<string, string>;
  return async () => {
    await eventually(async () => {
      const now = (await cell.client('ended', ...ids)).value as Record<string, string>;
      return ids.every((id) => now[id] !== '' && now[id] !== before[id]);
    }, 60_000, `${ids.join(', ')} to run again`);
  };
}

for (const engine of engines) {
  for (const transport of TRANSPORTS) {
    const label = `${engine.name} over ${transport === 'ws' ? 'WebSocket' : 'long-poll'}`;
    if (engine.skip?.[transport]) {
      test.skip(`${label}: skipped, ${engine.skip[transport]}`, () => {});
      continue;
    }
    const actions = engine.actions;
    const spec = actions.bulkRetry;
    describe(`operator actions: ${label}`, () => {
      if ('reruns' in spec) {
        test(`a bulk retry of ${spec.count} failed tasks re-runs ${spec.count}${spec.reruns === 'same' ? ' (each failed job requeued under its own id)' : ''}`, async () => {
          const cell = cellOf(engine, transport);
          const failed = await failures(cell, spec.count, `${transport}-bulk`);
          const rerun = spec.reruns === 'same' ? await ranAgain(cell, failed) : null;
          const created = await bulkRetry(cell, failed);
          expect(created.status).toBe(201);
          expect(created.body.progress.total).toBe(spec.count);
          const { job, items } = await finishedJob(cell, created.body.id);
          expect(job.progress).toMatchObject({ total: spec.count, succeeded: spec.count, failed: 0, skipped: 0 });
          if (rerun) {
            // RQ requeues the failed job from its FailedJobRegistry: the result names the job itself.
            expect(items.map((i) => i.result).sort((a, b) => a.task_id.localeCompare(b.task_id))).toEqual([...failed].sort().map((id) => expect.objectContaining({ task_id: id, source: 'dlq' })));
            await rerun();
            return;
          }
          const reruns = items.map((i) => String(i.result.new_task_id));
          expect(new Set(reruns).size).toBe(spec.count);
          expect(reruns.filter((r) => failed.includes(r))).toEqual([]);
          // Each re-run ran on the worker (and failed again, as the task always does).
          for (const r of reruns) expect((await world.waitForTask(cell.proc, engine.name, r, 'failure', {}, 60_000)).name).toBe(engine.names.fail);
        }, 300_000);
      } else if ('itemsFail' in spec) {
        test(`a bulk retry of ${spec.count} failed tasks is admitted and the agent fails each item: ${spec.why}`, async () => {
          const cell = cellOf(engine, transport);
          const failed = await failures(cell, spec.count, `${transport}-bulk`);
          const created = await bulkRetry(cell, failed);
          expect(created.status).toBe(201);
          const { job, items } = await finishedJob(cell, created.body.id);
          expect(job.progress).toMatchObject({ total: spec.count, succeeded: 0, failed: spec.count, skipped: 0 });
          expect(items.map((i) => i.task_id).sort()).toEqual([...failed].sort());
          for (const item of items) expect(item).toMatchObject({ status: 'failed', error: expect.stringMatching(spec.itemsFail) });
        }, 120_000);
      } else {
        test(`a bulk retry by reference: ${spec.undeliverable}, so ${transport === 'ws' ? 'svc refuses it at once' : "its retries are never delivered (the agent's polls attest no retry contract)"}`, async () => {
          const cell = cellOf(engine, transport);
          const created = await bulkRetry(cell, await failures(cell, 1, `${transport}-bulk`));
          if (transport === 'ws') {
            expect([created.status, created.body.error]).toEqual([409, 'capability_not_advertised']);
            return;
          }
          // Admitted: a long-poll agent reports no inventory. The item's retry is issued and stays
          // pending, while a command issued after it is delivered and answered (polls select in
          // issue order, so they passed the retry by). It waits for the command timeout.
          expect(created.status).toBe(201);
          let item: any;
          await eventually(async () => (item = (await world.api.call('GET', `/api/v1/projects/default/bulk-jobs/${created.body.id}/items`)).body.items[0])?.command_id != null, 30_000, 'the item to be issued');
          const later = await world.api.call('POST', `${commands}/list-dead-letters`, { engine: engine.name, agent_id: cell.agentId });
          expect(later.status).toBe(202);
          expect((await world.waitForCommand(cell.proc, later.body.id)).status).toBe('failed');
          expect(await world.command(item.command_id)).toMatchObject({ action: 'retry_task', status: 'pending', dispatched_at: null });
          expect((await world.api.call('POST', `/api/v1/projects/default/bulk-jobs/${created.body.id}/abort`)).status).toBe(200);
        }, 120_000);
      }

      if (actions.inspect) {
        const { extraQueue } = actions.inspect;
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
          const consumes = async () => JSON.stringify((await cell.client('inspect', 'active_queues', cell.worker)).value).includes(`"${extraQueue}"`);
          expect(await consumes()).toBe(false);
          expect(await act(cell, '/add-consumer', { worker_name: cell.worker, queue: extraQueue })).toMatchObject({ action: 'add_consumer', status: 'completed' });
          await eventually(consumes, 30_000, 'the new consumer');
          expect(await act(cell, '/cancel-consumer', { worker_name: cell.worker, queue: extraQueue })).toMatchObject({ action: 'cancel_consumer', status: 'completed' });
          await eventually(async () => !(await consumes()), 30_000, 'the consumer cancelled');
        }, 120_000);
      }

      if (actions.purge) {
        const { queue, noDepth } = actions.purge;
        test('a purge with its confirm token empties the queue', async () => {
          const cell = cellOf(engine, transport);
          await cell.client('park', '5');
          expect((await cell.client('llen', queue)).value).toBe(5);
          if (!noDepth) {
            // The depth the agent's heartbeats report is the depth confirmed (and checked again by the agent).
            await eventually(
              async () => ((await world.api.call('GET', '/api/v1/projects/default/queues')).body as any[]).some((q) => q.name === queue && q.engine === engine.name && q.pending_count === 5),
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
      } else {
        test(`purge-queue is refused: z4j-${engine.name} does not advertise purge_queue`, async () => {
          const cell = cellOf(engine, transport);
          const confirm = await world.api.call('POST', `${commands}/purge-queue/confirm-token`, { queue: 'interop.parked', engine: engine.name, agent_id: cell.agentId });
          if (transport === 'ws') {
            expect([confirm.status, confirm.body.error]).toEqual([409, 'capability_not_advertised']);
            return;
          }
          // svc has no depth of the queue: the purge goes with force, and the agent refuses it.
          expect(confirm.status).toBe(201);
          const issued = await world.api.call('POST', `${commands}/purge-queue`, { queue: 'interop.parked', confirm_token: confirm.body.confirm_token, force: true });
          expect(issued.status).toBe(202);
          const done = await world.waitForCommand(cell.proc, issued.body.id);
          expect(done.status).toBe('failed');
          expect(done.error).toMatch(`adapter '${engine.name}' does not support action 'purge_queue'`);
        }, 60_000);
      }

      if (actions.deadLetters) {
        const { queue, requeue, ids } = actions.deadLetters;
        test(`failed tasks are listed as dead letters${requeue ? '; a requeued one runs again' : ''}`, async () => {
          const cell = cellOf(engine, transport);
          const list = async () => (await act(cell, '/list-dead-letters', { engine: engine.name, queue })).result;
          const before = await list();
          expect(before).toMatchObject({ engine: engine.name, next_cursor: null });
          const failed = await failures(cell, 2, `${transport}-dlq`);
          // A failure reaches svc about when the engine files the task away: list until both show.
          let page: any;
          const listed = (p: any) => (ids === 'task' ? failed.every((id) => p.entries.some((e: any) => e.task_id === id)) : p.total === before.total + 2);
          await eventually(async () => listed((page = await list())), 30_000, 'both failures among the dead letters').catch((e) => {
            throw new Error(`${(e as Error).message}: ${JSON.stringify(page)}`);
          });
          const fresh = ids === 'task' ? page.entries.filter((e: any) => failed.includes(e.task_id)) : page.entries.filter((e: any) => !before.entries.some((b: any) => b.task_id === e.task_id));
          expect(fresh).toHaveLength(2);
          for (const entry of fresh) expect(entry).toMatchObject({ task_name: engine.names.fail, queue });
          if (!requeue) return;
          const rerun = await ranAgain(cell, [failed[0]!]);
          expect(await act(cell, '/requeue-dead-letter', { engine: engine.name, task_id: failed[0] })).toMatchObject({ status: 'completed', result: { task_id: failed[0], source: 'dlq' } });
          await rerun();
        }, 120_000);
      }

      if (actions.noWorkers) {
        for (const { route, body } of WORKER_ROUTES) {
          test(`${route.slice(1)} is refused: svc knows no worker of the engine (${actions.noWorkers})`, async () => {
            const cell = cellOf(engine, transport);
            const issued = await world.api.call('POST', `${commands}${route}`, { ...body, worker_name: cell.worker, agent_id: cell.agentId });
            expect([issued.status, issued.body.error]).toEqual([409, 'unknown_worker']);
          }, 30_000);
        }
      }

      for (const { route, token, wire, body } of GATED.filter((g) => !engine.capabilities.includes(g.token))) {
        test(`${route.slice(1)} is refused: z4j-${engine.name} does not advertise ${token}`, async () => {
          const cell = cellOf(engine, transport);
          const issued = await world.api.call('POST', `${commands}${route}`, { ...body(cell), agent_id: cell.agentId });
          if (transport === 'ws') {
            // svc refuses at once from what the agent advertised.
            expect([issued.status, issued.body.error]).toEqual([409, 'capability_not_advertised']);
            return;
          }
          // A long-poll agent reports no inventory: the agent refuses, and the command says why.
          expect(issued.status).toBe(202);
          const done = await world.waitForCommand(cell.proc, issued.body.id);
          expect(done.status).toBe('failed');
          expect(done.error).toMatch(new RegExp(`adapter '${engine.name}' does not support action '${escaped(wire)}'`));
        }, 60_000);
      }
    });
  }
}
