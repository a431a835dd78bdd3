// Agents on both databases: minting, tombstones and re-minting, the public
// view, health history, token verification, liveness and offline detection.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import {
  agentHealth,
  authenticateAgentToken,
  findAgent,
  getAgent,
  listAgents,
  mintAgent,
  pruneHealthHistory,
  recordHello,
  recordRefusedHello,
  revokeAgent,
  storeHealthSample,
  touchAgentLiveness,
  RESERVED_NAME_PREFIX,
} from '../../src/agents/service.ts';
import { ManualClock, isoMicros, nowIso, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { agentTokenHash, deriveProjectSecret } from '../../src/transport/credentials.ts';
import { offlineSweep } from '../../src/transport/jobs.ts';
import { agentStatusSampleRow } from '../../src/transport/status.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { insertProject, TEST_ACTOR } from '../helpers/agents.ts';
import { decodeHmacSecret } from '../helpers/test-agent.ts';

let svc: TestService;
let project: { id: string; slug: string };
beforeEach(async () => {
  svc = await testService();
  project = await insertProject(svc.ctx.db);
});
afterEach(async () => {
  resetClock();
  await svc.close();
});

const actions = async () => (await svc.ctx.db.all<{ action: string }>(sql`SELECT action FROM audit_log ORDER BY occurred_at, id`)).map((r) => r.action);
const hello = { protocolVersion: '2', framework: 'bare', engines: ['celery'], schedulers: [], capabilities: {}, runtimeFeatures: null, metadata: {}, worker: null };

describe(`agents on ${testDialect()}`, () => {
  test('mint returns the token and hmac_secret once; only the hash is stored; the audit row names the agent', async () => {
    const minted = await mintAgent(svc.ctx, project.id, '  worker-1 ', TEST_ACTOR);
    expect(minted.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(minted.hmac_secret).toMatch(/^[A-Za-z0-9_-]{43}=$/);
    expect(decodeHmacSecret(minted.hmac_secret)).toEqual(deriveProjectSecret(svc.ctx.config.SVC_SECRET, project.id));
    expect(minted.agent).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      project_id: project.id,
      name: 'worker-1',
      state: 'unknown',
      protocol_version: '',
      framework_adapter: '',
      engine_adapters: [],
      scheduler_adapters: [],
      capabilities: {},
      last_seen_at: null,
      last_connect_at: null,
      created_at: expect.any(String),
      is_outdated: false,
    });
    const row = (await findAgent(svc.ctx.db, minted.agent.id))!;
    expect(row.token_hash).toBe(agentTokenHash(svc.ctx.config.SVC_SECRET, minted.token));
    const dump = JSON.stringify(await svc.ctx.db.all(sql`SELECT * FROM audit_log`));
    expect(dump).not.toContain(minted.token);
    expect(dump).not.toContain(minted.hmac_secret);
    expect(await actions()).toEqual(['agent.token.minted']);
  });

  test('a live name is unique per project (409 conflict), also under concurrent mints; other projects may reuse it', async () => {
    await mintAgent(svc.ctx, project.id, 'dup', TEST_ACTOR);
    await expect(mintAgent(svc.ctx, project.id, 'dup', TEST_ACTOR)).rejects.toMatchObject({ status: 409, error: 'conflict' });
    const results = await Promise.allSettled([1, 2, 3].map(() => mintAgent(svc.ctx, project.id, 'race', TEST_ACTOR)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r) => r.status === 'rejected')) expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 409, error: 'conflict' });
    const other = await insertProject(svc.ctx.db);
    expect((await mintAgent(svc.ctx, other.id, 'dup', TEST_ACTOR)).agent.name).toBe('dup');
    await expect(mintAgent(svc.ctx, project.id, `${RESERVED_NAME_PREFIX}x`, TEST_ACTOR)).rejects.toMatchObject({ status: 422 });
    await expect(mintAgent(svc.ctx, project.id, 'x'.repeat(201), TEST_ACTOR)).rejects.toMatchObject({ status: 422 });
  });

  test('revoke leaves a hidden tombstone with its token hash overwritten; the token stops working; re-minting moves the tombstone aside', async () => {
    const first = await mintAgent(svc.ctx, project.id, 'edge', TEST_ACTOR);
    expect((await authenticateAgentToken(svc.ctx, first.token))?.agent.id).toBe(first.agent.id);
    await revokeAgent(svc.ctx, project.id, first.agent.id, TEST_ACTOR);
    const tomb = (await findAgent(svc.ctx.db, first.agent.id))!;
    expect(tomb.revoked_at).not.toBeNull();
    expect(tomb.token_hash).not.toBe(agentTokenHash(svc.ctx.config.SVC_SECRET, first.token));
    expect(await listAgents(svc.ctx.db, project.id)).toEqual([]);
    expect(await authenticateAgentToken(svc.ctx, first.token)).toBeNull();
    await expect(getAgent(svc.ctx.db, project.id, first.agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(agentHealth(svc.ctx.db, project.id, first.agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(revokeAgent(svc.ctx, project.id, first.agent.id, TEST_ACTOR)).rejects.toMatchObject({ status: 404 });

    const second = await mintAgent(svc.ctx, project.id, 'edge', TEST_ACTOR);
    expect(second.agent.id).not.toBe(first.agent.id);
    expect((await findAgent(svc.ctx.db, first.agent.id))!.name).toBe(`${RESERVED_NAME_PREFIX}${first.agent.id}:edge`);
    expect((await listAgents(svc.ctx.db, project.id)).map((a) => a.id)).toEqual([second.agent.id]);
    expect(await actions()).toEqual(['agent.token.minted', 'agent.token.revoked', 'agent.token.minted']);
  });

  test('agents of another project are foreign: 404 for get, health and revoke', async () => {
    const other = await insertProject(svc.ctx.db);
    const theirs = await mintAgent(svc.ctx, other.id, 'theirs', TEST_ACTOR);
    await expect(getAgent(svc.ctx.db, project.id, theirs.agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(agentHealth(svc.ctx.db, project.id, theirs.agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(revokeAgent(svc.ctx, project.id, theirs.agent.id, TEST_ACTOR)).rejects.toMatchObject({ status: 404 });
    expect((await findAgent(svc.ctx.db, theirs.agent.id))!.revoked_at).toBeNull();
  });

  test('tokens: checked against SVC_SECRET and every previous master; missing, malformed and unknown are refused', async () => {
    const minted = await mintAgent(svc.ctx, project.id, 'a', TEST_ACTOR);
    for (const bad of [null, '', 'has spaces', 'A'.repeat(600), 'A'.repeat(43)]) expect(await authenticateAgentToken(svc.ctx, bad)).toBeNull();
    const old = 'a-retired-master-secret-of-sufficient-length-000';
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET token_hash = ${agentTokenHash(old, minted.token)} WHERE id = ${minted.agent.id}`));
    expect(await authenticateAgentToken(svc.ctx, minted.token)).toBeNull();
    const rotated = { ...svc.ctx, config: { ...svc.ctx.config, SVC_PREVIOUS_SECRETS: ['another-retired-master-secret-of-length-xxxxx', old] } };
    expect(await authenticateAgentToken(rotated, minted.token)).toMatchObject({ agent: { id: minted.agent.id }, previousMaster: true });
  });

  test('health: at most 100 samples, newest first, with telemetry_loss or null; re-sent frames are stored once', async () => {
    const minted = await mintAgent(svc.ctx, project.id, 'h', TEST_ACTOR);
    const where = { agentId: minted.agent.id, projectId: project.id, workerId: 'bare-1-1' };
    const base = nowMicros();
    // Sent side by side: the samples share transactions (agents/pulse.ts), the re-sent one among them.
    const outcomes = await Promise.all(
      Array.from({ length: 105 }, (_, i) => {
        const loss = i === 104 ? { buffer_id: 'b', runtime_id: 'r', event_records: 2 } : null;
        return storeHealthSample(svc.ctx.db, agentStatusSampleRow(where, `as_${i}`, isoMicros(base + i * 1000), { telemetry_loss: loss, buffer_depth: i }));
      }),
    );
    expect(new Set(outcomes)).toEqual(new Set(['stored']));
    expect(await storeHealthSample(svc.ctx.db, agentStatusSampleRow(where, 'as_104', isoMicros(base), {}))).toBe('duplicate');
    const samples = await agentHealth(svc.ctx.db, project.id, minted.agent.id);
    expect(samples).toHaveLength(100);
    expect(samples[0]).toEqual({ id: expect.any(String), captured_at: isoMicros(base + 104_000), worker_id: 'bare-1-1', telemetry_loss: { buffer_id: 'b', runtime_id: 'r', event_records: 2 } });
    expect(samples[1]!.telemetry_loss).toBeNull();
    expect(samples[99]!.captured_at).toBe(isoMicros(base + 5000));
    expect(await pruneHealthHistory(svc.ctx.db, isoMicros(nowMicros() + 1000))).toBe(105);
  });

  test('is_outdated: false until connected; true after an older protocol was advertised; false again on "2"', async () => {
    const { agent } = await mintAgent(svc.ctx, project.id, 'o', TEST_ACTOR);
    const row = (await findAgent(svc.ctx.db, agent.id))!;
    await recordRefusedHello(svc.ctx.db, agent.id, '1');
    expect((await getAgent(svc.ctx.db, project.id, agent.id)).is_outdated).toBe(true);
    expect(await recordHello(svc.ctx.db, row, hello)).toEqual({ live: true, cameOnline: true });
    expect(await recordHello(svc.ctx.db, row, hello)).toEqual({ live: true, cameOnline: false });
    expect(await getAgent(svc.ctx.db, project.id, agent.id)).toMatchObject({ is_outdated: false, state: 'online', engine_adapters: ['celery'] });
    await recordRefusedHello(svc.ctx.db, agent.id, '3');
    expect((await getAgent(svc.ctx.db, project.id, agent.id)).is_outdated).toBe(false);
  });

  test('offline detection: online agents silent past SVC_AGENT_OFFLINE_TIMEOUT_SECONDS go offline; liveness brings them back', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const a = (await mintAgent(svc.ctx, project.id, 'quiet', TEST_ACTOR)).agent;
    const b = (await mintAgent(svc.ctx, project.id, 'chatty', TEST_ACTOR)).agent;
    await touchAgentLiveness(svc.ctx.db, a.id);
    clock.advance(20_000);
    await touchAgentLiveness(svc.ctx.db, b.id);
    clock.advance(11_000);
    expect(await offlineSweep(svc.ctx as never)).toEqual([a.id]);
    expect((await listAgents(svc.ctx.db, project.id)).map((x) => [x.name, x.state]).sort()).toEqual([
      ['chatty', 'online'],
      ['quiet', 'offline'],
    ]);
    // Back online (agent.online fires); then merely seen.
    expect(await touchAgentLiveness(svc.ctx.db, a.id)).toEqual({ live: true, cameOnline: true });
    expect(await touchAgentLiveness(svc.ctx.db, a.id)).toEqual({ live: true, cameOnline: false });
    expect((await getAgent(svc.ctx.db, project.id, a.id)).state).toBe('online');
    await revokeAgent(svc.ctx, project.id, a.id, TEST_ACTOR);
    expect(await touchAgentLiveness(svc.ctx.db, a.id)).toEqual({ live: false, cameOnline: false });
    const where = { agentId: a.id, projectId: project.id, workerId: 'w' };
    expect(await storeHealthSample(svc.ctx.db, agentStatusSampleRow(where, 'as_revoked', nowIso(), {}))).toBe('revoked');
  });

  test('liveness of many agents at once: each is seen, comes online once, a revoked one is refused', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => mintAgent(svc.ctx, project.id, `many-${i}`, TEST_ACTOR).then((m) => m.agent)));
    const [gone, ...rest] = agents;
    await revokeAgent(svc.ctx, project.id, gone!.id, TEST_ACTOR);
    // Touched side by side (twice each, as two frames of one agent): they share transactions (agents/pulse.ts).
    const first = await Promise.all(agents.flatMap((a) => [touchAgentLiveness(svc.ctx.db, a.id), touchAgentLiveness(svc.ctx.db, a.id)]));
    expect(first.slice(0, 2)).toEqual([{ live: false, cameOnline: false }, { live: false, cameOnline: false }]);
    // agent.online fires once per agent.
    expect(first.slice(2).filter((s) => s.cameOnline)).toHaveLength(rest.length);
    expect(first.slice(2).every((s) => s.live)).toBe(true);
    const listed = await listAgents(svc.ctx.db, project.id);
    const t1 = clock.nowMicros();
    for (const a of rest) expect(listed.find((x) => x.id === a.id)).toMatchObject({ state: 'online', last_seen_at: isoMicros(t1) });
    // Seen again later: last_seen_at advances, nothing comes online again.
    clock.advance(5_000);
    const again = await Promise.all(rest.map((a) => touchAgentLiveness(svc.ctx.db, a.id)));
    expect(again).toEqual(rest.map(() => ({ live: true, cameOnline: false })));
    const relisted = await listAgents(svc.ctx.db, project.id);
    for (const a of rest) expect(relisted.find((x) => x.id === a.id)!.last_seen_at).toBe(isoMicros(clock.nowMicros()));
  });
});
