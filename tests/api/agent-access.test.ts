// Who may use the agent transports, on both long-poll routes and the
// WebSocket connect: the address allow-list (before the token is read), the
// shared per-IP bucket, the bearer token against every accepted master, and
// archived projects; with their audit rows (once per ten minutes) and counter.
import { afterEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { findAgent } from '../../src/agents/service.ts';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { agentTokenHash } from '../../src/transport/credentials.ts';
import { archiveProjectRow, insertProject, liveService, mintTestAgent, type LiveService } from '../helpers/agents.ts';
import { metricValue } from '../helpers/metrics.ts';
import { TestAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
afterEach(async () => {
  resetClock();
  await svc?.close();
});

async function setup(env: Record<string, string> = {}) {
  svc = await liveService({ env });
  const project = await insertProject(svc.ctx.db);
  const agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  return { project, agent };
}

const auditRows = async (action: string) =>
  svc.ctx.db.all<{ action: string; source_ip: string | null; project_id: string | null; target_id: string; metadata: unknown }>(
    sql`SELECT action, source_ip, project_id, target_id, metadata FROM audit_log WHERE action = ${action} ORDER BY occurred_at`,
  );
const meta = (m: unknown) => (typeof m === 'string' ? JSON.parse(m) : m);
const withToken = (a: TestAgent, token: string) => new TestAgent({ baseUrl: a.baseUrl, token, hmacSecret: a.hmacSecretText, agentId: a.agentId, projectId: a.projectId });

describe('address allow-list', () => {
  test('outside SVC_AGENT_IP_ALLOWLIST: 403 ip_denied on both routes and close 4403, whatever the token; one audit row per ten minutes; every refusal counted', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const { agent } = await setup({ SVC_AGENT_IP_ALLOWLIST: '10.0.0.0/8' });
    const stranger = withToken(agent, 'not-a-token');
    for (const r of [await agent.probe(), await stranger.upload([agent.heartbeat()]), await agent.poll({ query: 'wait=999' })]) {
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ error: 'ip_denied', details: { surface: 'agent' } });
    }
    const ws = await agent.connect({ hello: false });
    expect((await ws.closed).code).toBe(4403);
    const rows = await auditRows('auth.ip_denied');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ source_ip: '127.0.0.1', project_id: null });
    expect(JSON.stringify(rows[0])).not.toContain(agent.agentId);
    clock.advance(10 * 60_000 + 1000);
    await agent.probe();
    expect(await auditRows('auth.ip_denied')).toHaveLength(2);
    expect(metricValue(await svc.ctx.metrics.text(), 'svc_auth_ip_denied_total', { surface: 'agent' })).toBe(5);
  });

  test('inside the list: served', async () => {
    const { agent } = await setup({ SVC_AGENT_IP_ALLOWLIST: '10.0.0.0/8,127.0.0.1' });
    expect((await agent.probe()).status).toBe(200);
  });
});

describe('per-IP bucket', () => {
  test('600 requests a minute per address across both long-poll routes and WebSocket connects, then 429 and close 4429', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const { agent } = await setup();
    for (let i = 0; i < 599; i++) {
      // Cheapest requests that still take a token from the bucket: refused by validation.
      const r = await agent.poll({ query: 'wait=999' });
      expect(r.status).toBe(422);
    }
    const ws = await agent.connect(); // the 600th
    expect(ws.closeInfo).toBeNull();
    const limited = await agent.probe();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body.detail).toMatch(/too many requests; please try again in \d+ seconds \(agent-connect\)/);
    const refused = await agent.connect({ hello: false });
    expect((await refused.closed).code).toBe(4429);
    ws.close();
    clock.advance(60_001);
    expect((await agent.probe()).status).toBe(200);
  });
});

describe('bearer token', () => {
  test('missing, malformed, unknown or revoked: 401 invalid agent token on both routes; WebSocket close 4401 with one bearer_failed row per address', async () => {
    const { agent } = await setup();
    const cases = [withToken(agent, ''), withToken(agent, 'not a token'), withToken(agent, 'A'.repeat(43))];
    for (const who of cases) {
      for (const r of [await who.probe(), await who.upload([agent.heartbeat()])]) {
        expect(r.status).toBe(401);
        expect(r.body).toMatchObject({ error: 'invalid_agent_token', message: 'invalid agent token', detail: 'invalid agent token' });
        expect(r.headers.get('x-svc-agent-id')).toBeNull();
      }
    }
    for (const who of cases) {
      const ws = await who.connect({ hello: false });
      expect((await ws.closed).code).toBe(4401);
    }
    const rows = await auditRows('agent.auth.bearer_failed');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.source_ip).toBe('127.0.0.1');
    expect(JSON.stringify(rows)).not.toContain(agent.token);
  });

  test('a token hashed with a previous master still authenticates (SVC_PREVIOUS_SECRETS)', async () => {
    const old = 'an-old-master-secret-that-is-long-enough-0123456789';
    const { agent } = await setup({ SVC_PREVIOUS_SECRETS: old });
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET token_hash = ${agentTokenHash(old, agent.token)} WHERE id = ${agent.agentId}`));
    expect((await agent.probe()).status).toBe(200);
    const ws = await agent.connect();
    expect(ws.helloAck.payload.agent_id).toBe(agent.agentId);
    ws.close();
  });
});

describe('archived project', () => {
  test('403 project_inactive on both routes, close 4401; one agent.auth.project_inactive row per agent per ten minutes', async () => {
    const { agent, project } = await setup();
    await archiveProjectRow(svc.ctx.db, project.id);
    for (const r of [await agent.probe(), await agent.upload([agent.heartbeat()]), await agent.probe()]) {
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('project_inactive');
    }
    const ws = await agent.connect({ hello: false });
    expect((await ws.closed).code).toBe(4401);
    const rows = await auditRows('agent.auth.project_inactive');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ project_id: project.id, target_id: agent.agentId, source_ip: '127.0.0.1' });
    expect(meta(rows[0]!.metadata)).toEqual({ agent_id: agent.agentId, project_id: project.id, address: '127.0.0.1', route: '/api/v1/agent/commands' });
    expect((await findAgent(svc.ctx.db, agent.agentId))!.last_seen_at).toBeNull();
  });

  test('a project archived while a poll waits ends it with 403 project_inactive', async () => {
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    const { agent, project } = await setup();
    const waiting = agent.poll({ wait: 30 });
    while (svc.ctx.agentTransport.waitingOn(agent.agentId) === 0) await Bun.sleep(2);
    await archiveProjectRow(svc.ctx.db, project.id);
    clock.advance(250);
    const r = await waiting;
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('project_inactive');
  });
});

describe('the WebSocket route', () => {
  test('a plain GET of /ws/agent (no upgrade) is 426 in the envelope', async () => {
    await setup();
    const r = await fetch(`${svc.baseUrl}/ws/agent`);
    expect(r.status).toBe(426);
    expect(await r.json()).toMatchObject({ error: 'upgrade_required' });
  });
});
