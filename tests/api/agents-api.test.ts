// The project-scoped management API for agents, commands and tasks, through
// real sessions, with an agent talking real HTTP to the same service.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { liveService, type LiveService } from '../helpers/agents.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { TestAgent, taskEvent } from '../helpers/test-agent.ts';

let svc: LiveService;
let admin: Browser;
let viewer: Browser;
let operator: Browser;

beforeAll(async () => {
  svc = await liveService({ env: FAST_IDENTITY_ENV });
  admin = await mfaAdmin(svc);
  viewer = await userBrowser(admin, 'viewer@example.com');
  operator = await userBrowser(admin, 'operator@example.com');
  for (const [b, role] of [[viewer, 'viewer'], [operator, 'operator']] as const) {
    await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: (b as Browser & { id: string }).id, role } });
  }
  await admin.call('POST', '/api/v1/projects', { body: { slug: 'other', name: 'Other' } });
});
afterAll(() => svc.close());

const mint = (b: Browser, name: string, slug = 'default') => b.call('POST', `/api/v1/projects/${slug}/agents`, { body: { name } });

describe('agents', () => {
  test('mint: admin with fresh MFA only; token and hmac_secret once; 409 on a duplicate name', async () => {
    expect((await mint(viewer, 'x')).status).toBe(403);
    expect((await mint(operator, 'x')).status).toBe(403);
    const r = await mint(admin, 'worker-1');
    expect(r.status).toBe(201);
    expect(r.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(r.body.hmac_secret, 'base64url')).toHaveLength(32);
    expect(r.body.agent).toMatchObject({ name: 'worker-1', engine_adapters: [], capabilities: {}, is_outdated: false });
    expect((await mint(admin, 'worker-1')).body).toMatchObject({ error: 'conflict' });
    // The list shows the agent but never its credentials.
    const list = await viewer.call('GET', '/api/v1/projects/default/agents');
    expect(list.body.map((a: any) => a.name)).toContain('worker-1');
    expect(list.text).not.toContain(r.body.token);
    expect(list.text).not.toContain(r.body.hmac_secret);
    const stored = await svc.ctx.db.all<{ token_hash: string }>(sql`SELECT token_hash FROM agents`);
    expect(JSON.stringify(stored)).not.toContain(r.body.token);
    expect((await svc.ctx.db.all(sql`SELECT id FROM audit_log WHERE action = 'agent.token.minted'`)).length).toBe(1);
  });

  test('API keys may list agents but never mint or revoke them', async () => {
    const key = (await admin.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['admin:*'] } })).body.token;
    const headers = { authorization: `Bearer ${key}` };
    expect((await svc.call('GET', '/api/v1/projects/default/agents', { headers })).status).toBe(200);
    expect((await svc.call('POST', '/api/v1/projects/default/agents', { headers, body: { name: 'k-agent' } })).body.error).toBe('api_key_not_allowed');
    const id = (await viewer.call('GET', '/api/v1/projects/default/agents')).body[0].id;
    expect((await svc.call('DELETE', `/api/v1/projects/default/agents/${id}`, { headers })).body.error).toBe('api_key_not_allowed');
  });

  test('the minted credentials connect; revoke hides the agent, fails its token, and a re-mint of the name is a new agent', async () => {
    const minted = (await mint(admin, 'short-lived')).body;
    const agent = new TestAgent({ baseUrl: svc.baseUrl, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId: minted.agent.project_id });
    const probe = await agent.probe();
    expect(probe.status).toBe(200);
    expect(probe.headers.get('x-svc-agent-id')).toBe(minted.agent.id);
    expect((await agent.upload([agent.heartbeat()])).body.accepted).toBe(1);
    expect((await viewer.call('GET', `/api/v1/projects/default/agents/${minted.agent.id}/health`)).status).toBe(200);
    // Viewers cannot revoke; the admin can.
    expect((await viewer.call('DELETE', `/api/v1/projects/default/agents/${minted.agent.id}`)).status).toBe(403);
    expect((await admin.call('DELETE', `/api/v1/projects/default/agents/${minted.agent.id}`)).body).toEqual({ success: true });
    expect((await viewer.call('GET', '/api/v1/projects/default/agents')).body.map((a: any) => a.id)).not.toContain(minted.agent.id);
    expect((await viewer.call('GET', `/api/v1/projects/default/agents/${minted.agent.id}/health`)).status).toBe(404);
    const refused = await agent.newSession().probe();
    expect(refused.status).toBe(401);
    expect(JSON.stringify(refused.body)).toContain('invalid agent token');
    const again = (await mint(admin, 'short-lived')).body;
    expect(again.agent.id).not.toBe(minted.agent.id);
  });

  test('health of another project\'s agent is 404', async () => {
    const foreign = (await mint(admin, 'elsewhere', 'other')).body.agent.id;
    expect((await admin.call('GET', `/api/v1/projects/default/agents/${foreign}/health`)).status).toBe(404);
    expect((await admin.call('GET', `/api/v1/projects/other/agents/${foreign}/health`)).status).toBe(200);
  });
});

describe('tasks and commands', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    const minted = (await mint(admin, 'celery-box')).body;
    agent = new TestAgent({ baseUrl: svc.baseUrl, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId: minted.agent.project_id });
    await agent.probe();
    const events = [
      taskEvent({ kind: 'task.succeeded', task_id: 'ok-1', data: { task_name: 'app.add', queue: 'default', worker: 'w1', result: 3, runtime_ms: 5 } }),
      taskEvent({ kind: 'task.failed', task_id: 'bad-1', data: { task_name: 'app.explode', queue: 'high', worker: 'w2', exception: 'ValueError', exception_message: 'boom', traceback: 'Traceback…' } }),
      taskEvent({ kind: 'task.started', task_id: 'run-1', data: { task_name: 'app.slow_%_thing', queue: 'default', worker: 'w1', args: [1], kwargs: {} } }),
    ];
    const up = await agent.upload(events.map((e) => agent.eventBatch([e])));
    expect(up.body.accepted).toBe(3);
  });

  test('tasks: list with filters and paging, detail with its events; viewers read, outsiders do not', async () => {
    const all = await viewer.call('GET', '/api/v1/projects/default/tasks');
    expect(all.status).toBe(200);
    expect(all.body.items.map((t: any) => t.task_id).sort()).toEqual(['bad-1', 'ok-1', 'run-1']);
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks?state=failure')).body.items.map((t: any) => t.task_id)).toEqual(['bad-1']);
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks?queue=high')).body.items).toHaveLength(1);
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks?worker=w1')).body.items).toHaveLength(2);
    expect((await viewer.call('GET', `/api/v1/projects/default/tasks?name=${encodeURIComponent('_%_')}`)).body.items.map((t: any) => t.task_id)).toEqual(['run-1']);
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks?name=EXPLODE')).body.items.map((t: any) => t.task_id)).toEqual(['bad-1']);
    const first = await viewer.call('GET', '/api/v1/projects/default/tasks?limit=2');
    expect(first.body.items).toHaveLength(2);
    const rest = await viewer.call('GET', `/api/v1/projects/default/tasks?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(rest.body.items).toHaveLength(1);
    expect(rest.body.next_cursor).toBeNull();
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks?state=bogus')).status).toBe(422);
    const detail = await viewer.call('GET', '/api/v1/projects/default/tasks/celery/bad-1');
    expect(detail.body).toMatchObject({ state: 'failure', name: 'app.explode', exception: 'ValueError', worker_name: 'w2' });
    expect(detail.body.events.map((e: any) => e.kind)).toEqual(['task.failed']);
    expect((await viewer.call('GET', '/api/v1/projects/default/tasks/celery/nope')).status).toBe(404);
    const outsider = await userBrowser(admin, 'outsider@example.com');
    expect((await outsider.call('GET', '/api/v1/projects/default/tasks')).status).toBe(404);
  });

  test('commands: operators issue (202, audited), viewers read, the agent receives and answers, the outcome is recorded', async () => {
    expect((await viewer.call('POST', '/api/v1/projects/default/commands/cancel-task', { body: { engine: 'celery', task_id: 'run-1', agent_id: agent.agentId } })).status).toBe(403);
    const issued = await operator.call('POST', '/api/v1/projects/default/commands/cancel-task', { body: { engine: 'celery', task_id: 'run-1', agent_id: agent.agentId } });
    expect(issued.status).toBe(202);
    expect(issued.body).toMatchObject({ action: 'cancel_task', status: 'pending', target_id: 'celery:run-1', payload: { engine: 'celery', task_id: 'run-1' } });
    // Without agent_id and no agent advertising the engine (a long-poll agent reports none): a clear refusal.
    const noAgent = await operator.call('POST', '/api/v1/projects/default/commands/retry-task', { body: { engine: 'celery', task_id: 'bad-1' } });
    expect(noAgent.status).toBe(409);
    expect(noAgent.body.error).toBe('no_agent');
    // A retry is by reference: the task's name from svc's records, never its stored arguments.
    const retry = await operator.call('POST', '/api/v1/projects/default/commands/retry-task', { body: { engine: 'celery', task_id: 'bad-1', agent_id: agent.agentId, eta_seconds: 5 } });
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ action: 'retry_task', target_id: 'celery:bad-1', payload: { task_name: 'app.explode', args: null, kwargs: null, override_args: null, eta_seconds: 5 } });
    // Bad bodies are refused with nothing stored.
    const before = (await viewer.call('GET', '/api/v1/projects/default/commands')).body.items.length;
    for (const body of [
      { engine: 'celery', task_id: 'bad-1', agent_id: agent.agentId, surprise: 1 },
      { engine: 'celery', task_id: 'bad-1', agent_id: agent.agentId, eta_seconds: 86401 },
      { engine: 'celery', task_id: '', agent_id: agent.agentId },
      { engine: 'celery', task_id: 'bad-1', agent_id: 'not-a-uuid' },
    ]) {
      const refused = await operator.call('POST', '/api/v1/projects/default/commands/retry-task', { body });
      expect(refused.status).toBe(422);
      expect(refused.body.error).toBe('validation_failed');
    }
    const foreign = await operator.call('POST', '/api/v1/projects/default/commands/cancel-task', { body: { engine: 'celery', task_id: 'bad-1', agent_id: crypto.randomUUID() } });
    expect(foreign.status).toBe(404);
    expect((await viewer.call('GET', '/api/v1/projects/default/commands')).body.items).toHaveLength(before);
    // The agent polls, acknowledges and answers.
    const polled = await agent.poll({ wait: 0 });
    // (This poll declared no retry contract, so the retry is held back for an agent that does.)
    const frames = agent.verifyAll(polled.body.frames);
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ type: 'command', id: issued.body.id, payload: { action: 'cancel_task' } });
    const up = await agent.upload([agent.ack(issued.body.id), agent.result(issued.body.id, 'success', { revoked: true })]);
    expect(up.body.accepted).toBe(2);
    const done = await viewer.call('GET', `/api/v1/projects/default/commands/${issued.body.id}`);
    expect(done.body).toMatchObject({ status: 'completed', result: { revoked: true } });
    const list = await viewer.call('GET', '/api/v1/projects/default/commands?status=completed');
    expect(list.body.items.map((c: any) => c.id)).toContain(issued.body.id);
    const audit = await svc.ctx.db.all<{ user_id: string }>(sql`SELECT user_id FROM audit_log WHERE action = 'command.issue.cancel_task'`);
    expect(audit).toEqual([{ user_id: (operator as Browser & { id: string }).id }]);
    // Generic issue with bad input; purge needs the project admin.
    expect((await operator.call('POST', '/api/v1/projects/default/commands', { body: { action: '', target_type: 'task' } })).status).toBe(422);
    expect((await operator.call('POST', '/api/v1/projects/default/commands', { body: { action: 'purge_queue', target_type: 'queue', target_id: 'default', agent_id: agent.agentId } })).status).toBe(403);
    // ...and goes through /commands/purge-queue with its confirm token, never the generic route (docs/operator-actions.md).
    expect((await admin.call('POST', '/api/v1/projects/default/commands', { body: { action: 'purge_queue', target_type: 'queue', target_id: 'default', agent_id: agent.agentId, parameters: { queue: 'default', force: true } } })).status).toBe(422);
  });
});
