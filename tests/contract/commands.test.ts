// Commands on both databases: issuing with audit rows and idempotency keys,
// listing, claims that only one claimer wins, acks and results, timeouts,
// schedule.fire buffering and expiry.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { mintAgent, recordHello, findAgent, revokeAgent } from '../../src/agents/service.ts';
import { verifyChain } from '../../src/audit/verify.ts';
import { claimCommands } from '../../src/commands/delivery.ts';
import {
  expireBufferedFires,
  getCommand,
  issueCommand,
  listCommands,
  recordCommandAck,
  recordCommandResult,
  timeOutCommands,
  type IssueCommandInput,
} from '../../src/commands/service.ts';
import { ManualClock, nowIso, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { storeEvents } from '../../src/ingest/service.ts';
import { testDialect, type TestService } from '../helpers/app.ts';
import { agentFixture, insertProject, TEST_ACTOR } from '../helpers/agents.ts';

let svc: TestService;
let project: { id: string };
let agentId: string;
beforeEach(async () => {
  ({ svc, project, agentId } = await agentFixture('cmd'));
});
afterEach(async () => {
  resetClock();
  await svc.close();
});

const issue = (fields: Partial<IssueCommandInput> = {}, actor = TEST_ACTOR) =>
  issueCommand(svc.ctx, { projectId: project.id, agentId, action: 'cancel_task', targetType: 'task', targetId: 'celery:t', payload: { engine: 'celery', task_id: 't' }, ...fields }, actor);
const claim = (max = 50, session = 's1') => claimCommands(svc.ctx.db, { agentId, max, retryEngines: new Set(['celery']), session });

describe(`commands on ${testDialect()}`, () => {
  test('issue: pending with a timeout, a command.issue.<action> audit row, the shape of the reference', async () => {
    const userId = crypto.randomUUID();
    const now = nowIso();
    await svc.ctx.db.tx((tx) =>
      tx.run(sql`INSERT INTO users (id, email, password_hash, created_at, updated_at, password_changed_at) VALUES (${userId}, 'op@example.com', 'x', ${now}, ${now}, ${now})`),
    );
    const cmd = await issue({}, { ...TEST_ACTOR, user_id: userId });
    expect(cmd).toEqual({
      id: expect.any(String),
      project_id: project.id,
      agent_id: agentId,
      issued_by: userId,
      action: 'cancel_task',
      target_type: 'task',
      target_id: 'celery:t',
      payload: { engine: 'celery', task_id: 't' },
      status: 'pending',
      result: null,
      error: null,
      idempotency_key: null,
      issued_at: expect.any(String),
      dispatched_at: null,
      completed_at: null,
      timeout_at: expect.any(String),
    });
    expect(Date.parse(cmd.timeout_at!) - Date.parse(cmd.issued_at)).toBe(60_000);
    const [row] = await svc.ctx.db.all<{ action: string; target_id: string; user_id: string }>(sql`SELECT action, target_id, user_id FROM audit_log WHERE action LIKE 'command.%'`);
    expect(row).toEqual({ action: 'command.issue.cancel_task', target_id: cmd.id, user_id: userId });
    // Deleting the user keeps the command, without its issuer.
    await svc.ctx.db.tx((tx) => tx.run(sql`DELETE FROM users WHERE id = ${userId}`));
    expect((await getCommand(svc.ctx.db, project.id, cmd.id)).issued_by).toBeNull();
  });

  test('an idempotency key returns the existing command, also under concurrency; foreign or revoked agents are 404', async () => {
    const a = await issue({ idempotencyKey: 'k1' });
    const again = await Promise.all([issue({ idempotencyKey: 'k1' }), issue({ idempotencyKey: 'k1' }), issue({ idempotencyKey: 'k2' })]);
    expect(again[0]!.id).toBe(a.id);
    expect(again[1]!.id).toBe(a.id);
    expect(again[2]!.id).not.toBe(a.id);
    const n = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log WHERE action = 'command.issue.cancel_task'`);
    expect(Number(n[0]!.n)).toBe(2);
    const other = await insertProject(svc.ctx.db);
    const foreign = (await mintAgent(svc.ctx, other.id, 'x', TEST_ACTOR)).agent.id;
    await expect(issue({ agentId: foreign })).rejects.toMatchObject({ status: 404 });
    await expect(issue({ agentId: crypto.randomUUID() })).rejects.toMatchObject({ status: 404 });
    const revoked = (await mintAgent(svc.ctx, project.id, 'gone', TEST_ACTOR)).agent.id;
    await revokeAgent(svc.ctx, project.id, revoked, TEST_ACTOR);
    await expect(issue({ agentId: revoked })).rejects.toMatchObject({ status: 404 });
    await expect(issue({ agentId: null })).rejects.toMatchObject({ status: 422 });
    await expect(getCommand(svc.ctx.db, other.id, a.id)).rejects.toMatchObject({ status: 404 });
    // The refused issues stored nothing: no command rows, no audit rows, an unbroken chain.
    const stored = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM commands`);
    expect(Number(stored[0]!.n)).toBe(2);
    const audited = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE 'command.%'`);
    expect(Number(audited[0]!.n)).toBe(2);
    expect(await verifyChain(svc.ctx.db, svc.ctx.audit.keyring)).toMatchObject({ clean: true });
  });

  test('an idempotency key answers only for the same command: another action, target or payload is 409 idempotency_key_reused, also under concurrency', async () => {
    const first = await issue({ idempotencyKey: 'same' });
    const reused = [{ action: 'restart_worker' }, { targetType: 'worker' }, { targetId: 'celery:other' }, { payload: { engine: 'celery', task_id: 'other' } }];
    for (const fields of reused) {
      await expect(issue({ idempotencyKey: 'same', ...fields })).rejects.toMatchObject({ status: 409, error: 'idempotency_key_reused', details: { idempotency_key: 'same' } });
    }
    // The same command (keys in another order, another agent: a bulk item re-admitted after a restart) is the first one.
    const other = (await mintAgent(svc.ctx, project.id, 'other', TEST_ACTOR)).agent.id;
    expect((await issue({ idempotencyKey: 'same', agentId: other, payload: { task_id: 't', engine: 'celery' } })).id).toBe(first.id);
    // Two different commands racing for one key: one is issued, the other refused.
    const raced = await Promise.allSettled([issue({ idempotencyKey: 'race', targetId: 'celery:a' }), issue({ idempotencyKey: 'race', targetId: 'celery:b' })]);
    expect(raced.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(raced.find((r) => r.status === 'rejected')).toMatchObject({ reason: { status: 409, error: 'idempotency_key_reused' } });
    const stored = await svc.ctx.db.all<{ k: string; n: number }>(sql`SELECT idempotency_key AS k, COUNT(*) AS n FROM commands GROUP BY idempotency_key ORDER BY k`);
    expect(stored.map((r) => [r.k, Number(r.n)])).toEqual([['race', 1], ['same', 1]]);
    const audited = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM audit_log WHERE action LIKE 'command.%'`);
    expect(Number(audited[0]!.n)).toBe(2);
  });

  test('list: newest first, by status, with a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await issue({ targetId: `celery:${i}` })).id);
    await claim(1);
    const page1 = await listCommands(svc.ctx.db, project.id, { limit: 2 });
    expect(page1.items.map((c) => c.id)).toEqual([ids[4]!, ids[3]!]);
    const page2 = await listCommands(svc.ctx.db, project.id, { limit: 2, cursor: page1.next_cursor });
    expect(page2.items.map((c) => c.id)).toEqual([ids[2]!, ids[1]!]);
    const page3 = await listCommands(svc.ctx.db, project.id, { limit: 2, cursor: page2.next_cursor });
    expect(page3).toEqual({ items: [expect.objectContaining({ id: ids[0]!, status: 'dispatched' })], next_cursor: null });
    expect((await listCommands(svc.ctx.db, project.id, { status: 'dispatched' })).items.map((c) => c.id)).toEqual([ids[0]!]);
  });

  test('concurrent claimers: every pending command is claimed exactly once, in issued_at order per claimer', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await issue({ action: 'restart_worker', targetId: `w${i}` })).id);
    const results = await Promise.all([claim(500, 'a'), claim(500, 'b'), claim(500, 'c')]);
    const all = results.flat().map((r) => r.id);
    expect(all.sort()).toEqual([...ids].sort());
    for (const r of results) {
      const order = r.map((x) => ids.indexOf(x.id));
      expect(order).toEqual([...order].sort((x, y) => x - y));
    }
    expect(await claim()).toEqual([]);
  });

  test('ack and result: success -> completed, failed -> failed; late or foreign results are ignored; timeouts end open commands', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const ok = await issue();
    const bad = await issue();
    const slow = await issue();
    await claim();
    await svc.ctx.db.tx(async (tx) => {
      expect(await recordCommandAck(tx, agentId, ok.id)).toBe(true);
      expect(await recordCommandResult(tx, agentId, ok.id, { status: 'success', result: { ok: 1 } })).toBe(true);
      expect(await recordCommandResult(tx, agentId, bad.id, { status: 'failed', error: 'x'.repeat(9000) })).toBe(true);
      expect(await recordCommandResult(tx, crypto.randomUUID(), slow.id, { status: 'success' })).toBe(false);
    });
    expect(await getCommand(svc.ctx.db, project.id, ok.id)).toMatchObject({ status: 'completed', result: { ok: 1 } });
    const failed = await getCommand(svc.ctx.db, project.id, bad.id);
    expect(failed.status).toBe('failed');
    expect(failed.error!.length).toBe(8192);
    clock.advance(60_001);
    expect(await timeOutCommands(svc.ctx.db)).toEqual([slow.id]);
    expect(await getCommand(svc.ctx.db, project.id, slow.id)).toMatchObject({ status: 'timeout', error: 'command timed out before agent responded' });
    expect(await svc.ctx.db.tx((tx) => recordCommandResult(tx, agentId, slow.id, { status: 'success' }))).toBe(false);
    expect((await getCommand(svc.ctx.db, project.id, slow.id)).status).toBe('timeout');
  });

  test('schedule.fire: routed to an online WebSocket agent advertising the engine, else buffered until it expires', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const fire = () => issue({ agentId: null, action: 'schedule.fire', targetType: 'schedule', payload: { engine: 'celery', fire_id: crypto.randomUUID() } });
    const buffered = await fire();
    expect(buffered).toMatchObject({ status: 'buffered', agent_id: null, timeout_at: null });
    const row = (await findAgent(svc.ctx.db, agentId))!;
    await recordHello(svc.ctx.db, row, { protocolVersion: '2', framework: 'bare', engines: ['celery'], schedulers: [], capabilities: {}, runtimeFeatures: null, metadata: {}, worker: null });
    expect(await fire()).toMatchObject({ status: 'pending', agent_id: agentId });
    clock.advance(3600_000);
    expect(await expireBufferedFires(svc.ctx.db)).toEqual([buffered.id]);
    expect(await getCommand(svc.ctx.db, project.id, buffered.id)).toMatchObject({ status: 'buffer_expired', completed_at: expect.any(String) });
  });

  test('a project deleted takes its agents, events and commands with it', async () => {
    await issue();
    await svc.ctx.db.tx((tx) =>
      storeEvents(tx, { projectId: project.id, agentId, frameId: null }, [{ id: crypto.randomUUID(), engine: 'celery', kind: 'task.sent', taskId: 'a', occurredAt: nowIso(), occurredMicros: nowMicros(), data: {} }], nowIso()),
    );
    await svc.ctx.db.tx((tx) => tx.run(sql`DELETE FROM projects WHERE id = ${project.id}`));
    for (const table of ['agents', 'events', 'tasks', 'commands']) {
      const [r] = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM ${sql.raw(table)}`);
      expect([table, Number(r!.n)]).toEqual([table, 0]);
    }
  });
});
