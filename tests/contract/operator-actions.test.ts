// Operator actions through the API on both databases: each action as a
// command with its audit row, the roles that may issue it, the refusals that
// come from what the agent advertised (engine, capability, retry contract) or
// did not (long-poll agents need agent_id), the purge confirm token (wrong,
// spent, expired, other queue, other caller, unknown depth), the generic
// POST /commands (refusing every action with a route of its own, admitting the
// rest like those routes), and Idempotency-Key replay and conflict, also of the
// body's idempotency_key.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { projectSigningKey } from '../../src/agents/service.ts';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { purgeConfirmToken } from '../../src/transport/purge-token.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { countRows } from '../helpers/agents.ts';
import { FAST_IDENTITY_ENV, matrixCallers, type Browser } from '../helpers/identity.ts';
import { CELERY_CAPABILITIES, helloAgent, pollingAgent, projectIdOf, reportInventory, storeTasks } from '../helpers/operator.ts';

let svc: TestService;
let admin: Browser;
let viewer: Browser;
let operator: Browser;
let padmin: Browser;
let projectId: string;
let celeryAgent: string;
let lpAgent: string;
let rqAgent: string;
let keys: { with: string; without: string };

const base = '/api/v1/projects/default/commands';

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  const callers = await matrixCallers(svc, ['commands:write']);
  admin = callers.admin;
  viewer = callers.browsers.viewer!;
  operator = callers.browsers.operator!;
  padmin = callers.browsers.project_admin!;
  keys = callers.keys;
  projectId = await projectIdOf(svc);
  celeryAgent = await helloAgent(svc, projectId, 'celery-ws', { celery: CELERY_CAPABILITIES });
  rqAgent = await helloAgent(svc, projectId, 'rq-ws', { rq: ['retry_task', 'cancel_task', 'requeue_dead_letter', 'list_dead_letters', 'retry_by_reference_v1'] });
  lpAgent = await pollingAgent(svc, projectId, 'celery-lp');
  await reportInventory(svc, projectId, { 'celery@w1': 4, 'celery@w2': 2 }, { celery: 3, parked: 7 });
}, 60_000);
afterAll(() => svc.close());

const commandsWithAction = (action: string) => countRows(svc.ctx.db, 'commands', sql`action = ${action}`);

describe(`operator actions on ${testDialect()}`, () => {
  test('each worker action is one command with its parameters and a command.issue.<action> audit row', async () => {
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['/restart-worker', { worker_name: 'celery@w1' }, { action: 'restart_worker', target_type: 'worker', target_id: 'celery@w1', payload: { engine: 'celery', worker_name: 'celery@w1' } }],
      ['/pool-resize', { worker_name: 'celery@w1', delta: 2 }, { action: 'pool_grow', payload: { worker_name: 'celery@w1', delta: 2 } }],
      ['/pool-resize', { worker_name: 'celery@w1', delta: -1 }, { action: 'pool_shrink', payload: { worker_name: 'celery@w1', delta: 1 } }],
      ['/pool-resize', { worker_name: 'celery@w2', size: 5 }, { action: 'pool_grow', payload: { worker_name: 'celery@w2', delta: 3 } }],
      ['/pool-resize', { worker_name: 'celery@w2', size: 1 }, { action: 'pool_shrink', payload: { worker_name: 'celery@w2', delta: 1 } }],
      ['/add-consumer', { worker_name: 'celery@w1', queue: 'extra' }, { action: 'add_consumer', target_id: 'celery@w1', payload: { worker_name: 'celery@w1', queue: 'extra' } }],
      ['/cancel-consumer', { worker_name: 'celery@w1', queue: 'extra' }, { action: 'cancel_consumer', payload: { queue: 'extra' } }],
      ['/rate-limit', { task_name: 'app.add', rate: '10/m', worker_name: 'celery@w1' }, { action: 'rate_limit', target_id: 'celery@w1', payload: { task_name: 'app.add', rate: '10/m', worker_name: 'celery@w1' } }],
      // Every worker: no target id (z4j agents would read the target id as the worker to limit).
      ['/rate-limit', { task_name: 'app.add', rate: '0', engine: 'celery' }, { action: 'rate_limit', target_type: 'worker', target_id: null, payload: { worker_name: null, rate: '0' } }],
      ['/requeue-dead-letter', { engine: 'rq', task_id: 'job-1' }, { action: 'requeue_dead_letter', agent_id: rqAgent, target_id: 'rq:job-1', payload: { filter: { engine: 'rq' }, task_id: 'job-1' } }],
      ['/list-dead-letters', { engine: 'rq', limit: 20 }, { action: 'dlq.list', agent_id: rqAgent, target_type: 'queue', payload: { engine: 'rq', queue: null, limit: 20, cursor: null } }],
    ];
    for (const [path, body, want] of cases) {
      const res = await operator.call('POST', `${base}${path}`, { body });
      expect([path, res.status]).toEqual([path, 202]);
      expect(res.body).toMatchObject({ status: 'pending', agent_id: celeryAgent, ...want });
      const audited = await countRows(svc.ctx.db, 'audit_log', sql`action = ${`command.issue.${res.body.action}`} AND target_id = ${res.body.id}`);
      expect([path, audited]).toEqual([path, 1]);
    }
  });

  test('viewers are refused every action; operators are refused the purge; nothing is stored for a refusal', async () => {
    const before = await countRows(svc.ctx.db, 'commands');
    for (const [path, body] of [
      ['/restart-worker', { worker_name: 'celery@w1' }],
      ['/pool-resize', { worker_name: 'celery@w1', delta: 1 }],
      ['/add-consumer', { worker_name: 'celery@w1', queue: 'q' }],
      ['/cancel-consumer', { worker_name: 'celery@w1', queue: 'q' }],
      ['/rate-limit', { task_name: 'a', rate: '1/s' }],
      ['/requeue-dead-letter', { engine: 'rq', task_id: 'j' }],
      ['/list-dead-letters', { engine: 'rq' }],
      ['/purge-queue/confirm-token', { queue: 'parked' }],
      ['/purge-queue', { queue: 'parked', confirm_token: 'x' }],
    ] as const) {
      const res = await viewer.call('POST', `${base}${path}`, { body });
      expect([path, res.status, res.body.error]).toEqual([path, 403, 'insufficient_role']);
    }
    for (const path of ['/purge-queue/confirm-token', '/purge-queue']) {
      const res = await operator.call('POST', `${base}${path}`, { body: { queue: 'parked', ...(path.endsWith('queue') ? { confirm_token: 'x' } : {}) } });
      expect([path, res.status]).toEqual([path, 403]);
    }
    // A key without commands:write is refused too.
    const keyed = await svc.call('POST', `${base}/restart-worker`, { body: { worker_name: 'celery@w1' }, headers: { authorization: `Bearer ${keys.without}` } });
    expect(keyed.status).toBe(403);
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before);
  });

  test('refusals from the inventory: unknown worker, engine not run, capability not advertised, retry contract, no agent', async () => {
    const before = await countRows(svc.ctx.db, 'commands');
    const refused = async (path: string, body: Record<string, unknown>, code: string, status = 409) => {
      const res = await operator.call('POST', `${base}${path}`, { body });
      expect([path, res.status, res.body.error]).toEqual([path, status, code]);
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['error', 'message', 'details']));
      return res.body;
    };
    await refused('/restart-worker', { worker_name: 'celery@nowhere' }, 'unknown_worker');
    // The rq agent runs no celery engine.
    expect((await refused('/pool-resize', { worker_name: 'celery@w1', delta: 1, agent_id: rqAgent }, 'engine_not_advertised')).message).toContain('does not run the celery engine');
    // Celery advertises no dead-letter actions (z4j-celery 1.9+).
    expect((await refused('/requeue-dead-letter', { engine: 'celery', task_id: 't', agent_id: celeryAgent }, 'capability_not_advertised')).message).toContain('requeue_dead_letter');
    await refused('/requeue-dead-letter', { engine: 'celery', task_id: 't' }, 'capability_not_advertised');
    // An agent advertising celery without the retry contract: a retry by reference would never be delivered.
    const noContract = await helloAgent(svc, projectId, 'celery-old', { celery: ['retry_task', 'cancel_task'] });
    await refused('/retry-task', { engine: 'celery', task_id: 'x', agent_id: noContract }, 'retry_contract_unsatisfied');
    // ...but a retry that carries both argument halves replays nothing by reference.
    const carried = await operator.call('POST', `${base}/retry-task`, { body: { engine: 'celery', task_id: 'x', agent_id: noContract, override_args: [1], override_kwargs: {} } });
    expect(carried.status).toBe(202);
    // An adapter without retry_task (TaskIQ, arq) still takes one with both halves: z4j submits it by name.
    const submitOnly = await helloAgent(svc, projectId, 'taskiq-ws', { taskiq: ['submit_task'] });
    await refused('/retry-task', { engine: 'taskiq', task_id: 'x', agent_id: submitOnly }, 'capability_not_advertised');
    await refused('/cancel-task', { engine: 'taskiq', task_id: 'x', agent_id: submitOnly }, 'capability_not_advertised');
    const lowered = await operator.call('POST', `${base}/retry-task`, { body: { engine: 'taskiq', task_id: 'x', agent_id: submitOnly, override_args: [], override_kwargs: {} } });
    expect(lowered.status).toBe(202);
    await refused('/retry-task', { engine: 'huey', task_id: 'x' }, 'no_agent');
    await refused('/pool-resize', { worker_name: 'celery@w1', delta: 1, size: 3 }, 'validation_failed', 422);
    await refused('/pool-resize', { worker_name: 'celery@w1' }, 'validation_failed', 422);
    await refused('/pool-resize', { worker_name: 'celery@w1', size: 4 }, 'no_change');
    await refused('/rate-limit', { task_name: 'a', rate: '10/x' }, 'validation_failed', 422);
    await refused('/restart-worker', { worker_name: 'celery@w1', agent_id: crypto.randomUUID() }, 'not_found', 404);
    // Workers of two engines under one name: the engine must say which (svc used to pick one).
    await reportInventory(svc, projectId, { 'shared@w': 2 }, {}, 'celery');
    await reportInventory(svc, projectId, { 'shared@w': 2 }, {}, 'rq');
    expect((await refused('/restart-worker', { worker_name: 'shared@w' }, 'ambiguous_worker')).details).toMatchObject({ engines: expect.arrayContaining(['celery', 'rq']) });
    const chosen = await operator.call('POST', `${base}/restart-worker`, { body: { worker_name: 'shared@w', engine: 'celery' } });
    expect([chosen.status, chosen.body.target_id]).toEqual([202, 'shared@w']);
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before + 3);
  });

  test('a long-poll agent (no inventory) is admitted when named, and is the fallback for dead-letter listing', async () => {
    const named = await operator.call('POST', `${base}/pool-resize`, { body: { worker_name: 'celery@w1', delta: 1, agent_id: lpAgent } });
    expect(named.status).toBe(202);
    expect(named.body).toMatchObject({ agent_id: lpAgent, action: 'pool_grow', payload: { engine: 'celery' } });
    // Nobody advertises list_dead_letters for celery: the long-poll agent is asked (and its adapter answers).
    const listed = await operator.call('POST', `${base}/list-dead-letters`, { body: { engine: 'celery', queue: 'celery' } });
    expect(listed.status).toBe(202);
    expect(listed.body).toMatchObject({ agent_id: lpAgent, action: 'dlq.list', target_id: 'celery' });
  });

  test('purge: a confirm token from the first call, bound to project, queue and caller, single use and short-lived', async () => {
    const first = await padmin.call('POST', `${base}/purge-queue/confirm-token`, { body: { queue: 'parked' } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ queue: 'parked', engine: 'celery', agent_id: celeryAgent, depth: 7, requires_force: false });
    const token = first.body.confirm_token;
    expect(await countRows(svc.ctx.db, 'audit_log', sql`action = 'command.purge_queue.confirm_requested'`)).toBe(1);
    const purge = (b: Browser, body: Record<string, unknown>) => b.call('POST', `${base}/purge-queue`, { body });
    // Other queue, other caller, garbage.
    expect((await purge(padmin, { queue: 'celery', confirm_token: token })).body.error).toBe('confirm_token_mismatch');
    expect((await purge(admin, { queue: 'parked', confirm_token: token })).body.error).toBe('confirm_token_invalid');
    expect((await purge(padmin, { queue: 'parked', confirm_token: 'not-a-token' })).body.error).toBe('confirm_token_invalid');
    expect(await commandsWithAction('purge_queue')).toBe(0);
    const done = await purge(padmin, { queue: 'parked', confirm_token: token });
    expect(done.status).toBe(202);
    // The agent checks the keyed token against the depth it measures: the depth the admin confirmed.
    const agentToken = purgeConfirmToken(projectSigningKey(svc.ctx, projectId), 'parked', 7);
    expect(done.body).toMatchObject({ action: 'purge_queue', target_type: 'queue', target_id: 'parked', payload: { engine: 'celery', queue: 'parked', confirm_token: agentToken, force: false } });
    const again = await purge(padmin, { queue: 'parked', confirm_token: token });
    expect([again.status, again.body.error]).toEqual([409, 'confirm_token_used']);
    // Expired.
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    try {
      const late = (await padmin.call('POST', `${base}/purge-queue/confirm-token`, { body: { queue: 'parked' } })).body.confirm_token;
      clock.advance(svc.ctx.config.SVC_PURGE_CONFIRM_TTL_SECONDS * 1000 + 1);
      expect((await purge(padmin, { queue: 'parked', confirm_token: late })).body.error).toBe('confirm_token_expired');
    } finally {
      resetClock();
    }
    // A queue svc knows no depth of: the agent cannot check, so only force purges it.
    const unknown = await padmin.call('POST', `${base}/purge-queue/confirm-token`, { body: { queue: 'elsewhere', engine: 'celery' } });
    expect(unknown.body).toMatchObject({ depth: null, requires_force: true });
    expect((await purge(padmin, { queue: 'elsewhere', confirm_token: unknown.body.confirm_token })).body.error).toBe('queue_depth_unknown');
    const forced = await purge(padmin, { queue: 'elsewhere', confirm_token: unknown.body.confirm_token, force: true });
    expect(forced.status).toBe(202);
    expect(forced.body.payload).toMatchObject({ confirm_token: null, force: true });
    // The generic route cannot bypass the token.
    const generic = await padmin.call('POST', base, { body: { action: 'purge_queue', agent_id: celeryAgent, target_type: 'queue', target_id: 'parked', parameters: { queue: 'parked', force: true } } });
    expect([generic.status, generic.body.error]).toEqual([422, 'validation_failed']);
    expect(await commandsWithAction('purge_queue')).toBe(2);
  });

  test('Idempotency-Key: the same key and body replay the first answer; another body is 409; keys are per caller', async () => {
    const body = { worker_name: 'celery@w1' };
    const send = (b: Browser, key: string, payload: Record<string, unknown> = body) =>
      b.call('POST', `${base}/restart-worker`, { body: payload, headers: { 'idempotency-key': key } });
    const before = await commandsWithAction('restart_worker');
    const first = await send(operator, 'restart-1');
    expect(first.status).toBe(202);
    const replay = await send(operator, 'restart-1');
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Concurrent repeats also issue once.
    const burst = await Promise.all([send(operator, 'restart-2'), send(operator, 'restart-2'), send(operator, 'restart-2')]);
    expect(new Set(burst.map((r) => r.body.id)).size).toBe(1);
    expect(burst.map((r) => r.status)).toEqual([202, 202, 202]);
    const conflict = await send(operator, 'restart-1', { worker_name: 'celery@w2' });
    expect([conflict.status, conflict.body.error]).toEqual([409, 'idempotency_key_reused']);
    // Another caller's key space.
    const other = await send(padmin, 'restart-1');
    expect(other.status).toBe(202);
    expect(other.body.id).not.toBe(first.body.id);
    expect(await commandsWithAction('restart_worker')).toBe(before + 3);
    // A refusal stores nothing: the same key may be used again once the request can succeed.
    const refused = await send(operator, 'restart-3', { worker_name: 'celery@later' });
    expect(refused.status).toBe(409);
    await reportInventory(svc, projectId, { 'celery@later': 1 }, {});
    expect((await send(operator, 'restart-3', { worker_name: 'celery@later' })).status).toBe(202);
    // On the task routes and the generic route too, and a malformed key is a validation failure.
    const retry = { engine: 'celery', task_id: 'idem-1', agent_id: celeryAgent };
    const r1 = await operator.call('POST', `${base}/retry-task`, { body: retry, headers: { 'idempotency-key': 'retry-1' } });
    const r2 = await operator.call('POST', `${base}/retry-task`, { body: retry, headers: { 'idempotency-key': 'retry-1' } });
    expect([r1.status, r2.status, r2.body.id]).toEqual([202, 202, r1.body.id]);
    const bad = await operator.call('POST', `${base}/cancel-task`, { body: retry, headers: { 'idempotency-key': 'has space' } });
    expect([bad.status, bad.body.error]).toEqual([422, 'validation_failed']);
    // Answers are kept 24 hours.
    const [row] = await svc.ctx.db.all<{ created_at: string; expires_at: string }>(sql`SELECT created_at, expires_at FROM idempotency_keys WHERE key = 'restart-1' AND principal LIKE 'user:%' LIMIT 1`);
    expect(Date.parse(row!.expires_at) - Date.parse(row!.created_at)).toBe(24 * 3600_000);
  });

  test('the generic POST /commands refuses every action with a route of its own, naming the route; what it takes is admitted', async () => {
    const noContract = await helloAgent(svc, projectId, 'celery-generic-old', { celery: ['retry_task', 'cancel_task'] });
    const generic = (body: Record<string, unknown>, b: Browser = operator) => b.call('POST', base, { body: { target_type: 'task', ...body } });
    const before = await countRows(svc.ctx.db, 'commands');
    const auditedBefore = await countRows(svc.ctx.db, 'audit_log', sql`action LIKE 'command.issue.%'`);
    // The audit's bypasses: each went through as 202 before; now 422 naming the route that checks it.
    const bypasses: [string, Record<string, unknown>, string][] = [
      ['unknown worker', { action: 'restart_worker', agent_id: celeryAgent, target_type: 'worker', target_id: 'celery@nowhere', parameters: { engine: 'celery', worker_name: 'celery@nowhere' } }, '/commands/restart-worker'],
      ['no retry contract', { action: 'retry_task', agent_id: noContract, target_id: 'celery:x', parameters: { engine: 'celery', task_id: 'x' } }, '/commands/retry-task'],
      ['dead letter to Celery', { action: 'requeue_dead_letter', agent_id: celeryAgent, target_id: 'celery:x', parameters: { filter: { engine: 'celery' }, task_id: 'x' } }, '/commands/requeue-dead-letter'],
      ['bulk retry on the agent', { action: 'bulk_retry', agent_id: celeryAgent, target_type: 'bulk', parameters: { filter: { engine: 'celery' } } }, '/bulk-jobs'],
    ];
    const others: [string, string][] = [
      ['cancel_task', '/commands/cancel-task'],
      ['pool_grow', '/commands/pool-resize'],
      ['pool_shrink', '/commands/pool-resize'],
      ['add_consumer', '/commands/add-consumer'],
      ['cancel_consumer', '/commands/cancel-consumer'],
      ['rate_limit', '/commands/rate-limit'],
      ['dlq.list', '/commands/list-dead-letters'],
      [' schedule.fire ', '/schedules/{schedule_id}/trigger'],
      ['schedule.trigger_now', '/schedules/{schedule_id}/trigger'],
      ['schedule.enable', '/schedules/{schedule_id}/enable'],
      ['schedule.disable', '/schedules/{schedule_id}/disable'],
      ['schedule.resync', '/schedules/resync'],
      ['schedule.external.activate', 'svc itself'],
    ];
    for (const [name, body, route] of [...bypasses, ...others.map(([action, route]): [string, Record<string, unknown>, string] => [action, { action, agent_id: lpAgent }, route])]) {
      const res = await generic(body);
      expect([name, res.status, res.body.error]).toEqual([name, 422, 'validation_failed']);
      expect([name, res.body.details.fields[0].path, res.body.details.fields[0].message]).toEqual([name, '/action', expect.stringContaining(route)]);
    }
    // Not even for an administrator (purge_queue keeps needing one: an operator is refused first).
    expect((await generic({ action: 'purge_queue', agent_id: celeryAgent, target_type: 'queue', parameters: { queue: 'parked', force: true } }, operator)).status).toBe(403);
    expect((await generic({ action: 'restart_worker', agent_id: celeryAgent }, padmin)).status).toBe(422);
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before);
    // Actions without a route of their own go through the admission the dedicated routes make.
    const refused = async (body: Record<string, unknown>, status: number, code: string) => {
      const res = await generic(body);
      expect([body.action, res.status, res.body.error]).toEqual([body.action, status, code]);
    };
    const submit = { action: 'submit_task', target_id: 'rq:any', parameters: { engine: 'rq', task_name: 'anything.at.all', args: [] } };
    await refused({ ...submit, agent_id: rqAgent }, 409, 'capability_not_advertised'); // rq-ws advertises no submit_task
    await refused({ ...submit, agent_id: celeryAgent }, 409, 'engine_not_advertised');
    await refused({ ...submit, agent_id: crypto.randomUUID() }, 404, 'not_found');
    await refused({ action: 'submit_task', parameters: { engine: 'celery' } }, 422, 'validation_failed'); // agent_id is required
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before);
    const submitted = await generic({ ...submit, agent_id: celeryAgent, target_id: 'celery:any', parameters: { engine: 'celery', task_name: 'app.add', args: [1, 2] } });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ action: 'submit_task', agent_id: celeryAgent, status: 'pending', payload: { engine: 'celery', task_name: 'app.add' } });
    // A long-poll agent reports nothing to check: named, it is admitted (and refuses what its adapter lacks).
    const reconcile = await generic({ action: 'reconcile_task', agent_id: lpAgent, target_id: 'celery:r1', parameters: { engine: 'celery', task_id: 'r1' } });
    expect([reconcile.status, reconcile.body.agent_id]).toEqual([202, lpAgent]);
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before + 2);
    expect(await countRows(svc.ctx.db, 'audit_log', sql`action LIKE 'command.issue.%'`)).toBe(auditedBefore + 2);
  });

  test("a body idempotency_key answers only for the same command: another is 409 and is not issued; svc's own prefixes are refused", async () => {
    const tasks = await storeTasks(svc, projectId, celeryAgent, 2);
    const keyed = (key: string) => countRows(svc.ctx.db, 'commands', sql`idempotency_key = ${key}`);
    const retryA = { engine: 'celery', task_id: tasks[0], agent_id: celeryAgent, idempotency_key: 'body-k1' };
    const first = await operator.call('POST', `${base}/retry-task`, { body: retryA });
    expect(first.status).toBe(202);
    const cancelsBefore = await commandsWithAction('cancel_task');
    const cancelAuditsBefore = await countRows(svc.ctx.db, 'audit_log', sql`action = 'command.issue.cancel_task'`);
    // The same key on another command (the audit's repro): refused with the header's code, the cancel is not stored.
    const cancelB = await operator.call('POST', `${base}/cancel-task`, { body: { engine: 'celery', task_id: tasks[1], agent_id: celeryAgent, idempotency_key: 'body-k1' } });
    expect([cancelB.status, cancelB.body.error, cancelB.body.details]).toEqual([409, 'idempotency_key_reused', { idempotency_key: 'body-k1' }]);
    // ...and a retry of another task under it.
    const retryB = await operator.call('POST', `${base}/retry-task`, { body: { ...retryA, task_id: tasks[1] } });
    expect([retryB.status, retryB.body.error]).toEqual([409, 'idempotency_key_reused']);
    expect(await commandsWithAction('cancel_task')).toBe(cancelsBefore);
    expect(await countRows(svc.ctx.db, 'audit_log', sql`action = 'command.issue.cancel_task'`)).toBe(cancelAuditsBefore);
    expect(await keyed('body-k1')).toBe(1);
    // The same command again still returns the first.
    const again = await operator.call('POST', `${base}/retry-task`, { body: retryA });
    expect([again.status, again.body.id]).toEqual([202, first.body.id]);
    expect(await keyed('body-k1')).toBe(1);
    // The prefixes svc keys its own commands with (bulk jobs, schedule fires, scheduler activations).
    const before = await countRows(svc.ctx.db, 'commands');
    for (const key of ['bulk:00000000-0000-0000-0000-000000000000:1', 'schedule:x:fire:y', 'schedule-activate:a:b:1:c']) {
      for (const [path, body] of [
        ['/retry-task', { engine: 'celery', task_id: tasks[0], agent_id: celeryAgent, idempotency_key: key }],
        ['/cancel-task', { engine: 'celery', task_id: tasks[0], agent_id: celeryAgent, idempotency_key: key }],
        ['', { action: 'reconcile_task', agent_id: lpAgent, target_type: 'task', parameters: { engine: 'celery' }, idempotency_key: key }],
      ] as const) {
        const res = await operator.call('POST', `${base}${path}`, { body });
        expect([key, path, res.status, res.body.error, res.body.details.fields?.[0]?.path]).toEqual([key, path, 422, 'validation_failed', '/idempotency_key']);
      }
    }
    expect(await countRows(svc.ctx.db, 'commands')).toBe(before);
  });

  test('the command records the outcome the agent answers', async () => {
    const tasks = await storeTasks(svc, projectId, celeryAgent, 1);
    const cancel = await operator.call('POST', `${base}/cancel-task`, { body: { engine: 'celery', task_id: tasks[0] } });
    expect(cancel.status).toBe(202);
    const { recordCommandResult } = await import('../../src/commands/service.ts');
    await svc.ctx.db.tx((tx) => recordCommandResult(tx, cancel.body.agent_id, cancel.body.id, { status: 'failed', error: "adapter 'celery' refused" }));
    const read = await viewer.call('GET', `${base}/${cancel.body.id}`);
    expect(read.body).toMatchObject({ status: 'failed', error: "adapter 'celery' refused" });
  });
});
