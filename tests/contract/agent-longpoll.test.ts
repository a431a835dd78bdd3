// The long-poll transport over real HTTP on loopback (on SQLite and PostgreSQL), driven by the
// TypeScript test agent: uploads, polls, the session registry and its
// invalidation markers, every bad input of the issue with its answer.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { findAgent, revokeAgent } from '../../src/agents/service.ts';
import { getCommand, issueCommand, timeOutCommands, type IssueCommandInput } from '../../src/commands/service.ts';
import type { Db, Tx } from '../../src/db/connect.ts';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { setLogDestination, setLogLevel } from '../../src/lib/log.ts';
import { formatFrameTimestamp } from '../../src/transport/timestamp.ts';
import { AgentTransport } from '../../src/transport/runtime.ts';
import { countRows, insertProject, issueTestCommand, liveAgentFixture, mintTestAgent, TEST_ACTOR, until, type LiveService } from '../helpers/agents.ts';
import { taskEvent, type TestAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let project: { id: string; slug: string };
let agent: TestAgent;

async function start(env: Record<string, string> = {}): Promise<void> {
  ({ svc, project, agent } = await liveAgentFixture(env));
}

beforeEach(() => start());
afterEach(async () => {
  resetClock();
  await svc.close();
});

const count = countRows;
const issue = (fields: Partial<IssueCommandInput> = {}) => issueTestCommand(svc.ctx, project.id, agent.agentId, fields);
const manualClock = () => {
  const clock = new ManualClock(Date.now() * 1000);
  setClock(clock);
  return clock;
};
/** Advances the clock in 250 ms steps (letting the server run between them) until `p` settles. */
async function advanceUntil<T>(clock: ManualClock, p: Promise<T>, limitMs = 120_000): Promise<T> {
  let settled = false;
  void p.finally(() => (settled = true)).catch(() => {});
  for (let spent = 0; !settled && spent < limitMs; spent += 250) {
    clock.advance(250);
    await Bun.sleep(1);
  }
  return p;
}

describe('connect probe', () => {
  test('max_frames=0 claims nothing, answers the identity headers under both prefixes and records runtime features', async () => {
    const cmd = await issue();
    const r = await agent.probe({ features: 'retry_by_reference, external_schedule_protocol_v1,retry_by_reference,' + 'x'.repeat(65) });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ frames: [] });
    for (const prefix of ['x-svc-', 'x-z4j-']) {
      expect(r.headers.get(`${prefix}agent-id`)).toBe(agent.agentId);
      expect(r.headers.get(`${prefix}project-id`)).toBe(project.id);
      expect(r.headers.get(`${prefix}longpoll-worker`)).toBe(String(process.pid));
    }
    expect((await getCommand(svc.ctx.db, project.id, cmd.id)).status).toBe('pending');
    const row = (await findAgent(svc.ctx.db, agent.agentId))!;
    expect(row.runtime_features).toEqual(['retry_by_reference', 'external_schedule_protocol_v1']);
    expect(row.transport).toBe('longpoll');
    // A probe is not liveness.
    expect(row.state).toBe('unknown');
    expect(row.last_seen_at).toBeNull();
  });

  test('X-SVC- request headers work as well as X-Z4J-, and no nonce header means the shared legacy session', async () => {
    const svcNonce = await fetch(`${svc.baseUrl}/api/v1/agent/commands?wait=0&max_frames=0`, {
      headers: { authorization: `Bearer ${agent.token}`, 'x-svc-session-nonce': 'svc-header-nonce' },
    });
    expect(svcNonce.status).toBe(200);
    const legacy = agent.newSession('');
    const up = await fetch(`${svc.baseUrl}/api/v1/agent/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ frames: [legacy.heartbeat()] }),
    });
    expect(up.status).toBe(200);
    expect(await up.json()).toMatchObject({ accepted: 1, rejected: 0 });
  });
});

describe('upload validation', () => {
  test('frame count and size limits: 0 or 501 frames, a frame over 1 MiB, a non-string frame are 422; a non-JSON body is 400', async () => {
    const hb = agent.heartbeat();
    for (const frames of [[], Array.from({ length: 501 }, () => hb), ['x'.repeat(1024 * 1024 + 1)], [42], 'not-a-list']) {
      const r = await agent.upload(frames);
      expect(r.status).toBe(422);
      expect(r.body.error).toBe('validation_failed');
    }
    const r = await agent.uploadRaw('{"frames": [');
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_json');
    // Nothing of that reached the router.
    expect((await findAgent(svc.ctx.db, agent.agentId))!.last_seen_at).toBeNull();
  });
});

describe('concurrent uploads of one session', () => {
  /** Holds the first upload after its frames are decoded until `release()`; counts decodings. */
  function gateFirstUpload() {
    const pool = svc.ctx.agentTransport.decoders;
    const decode = pool.decodeUpload.bind(pool);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const state = { calls: 0, release };
    pool.decodeUpload = async (...args) => {
      const n = ++state.calls;
      const decoded = await decode(...args);
      if (n === 1) await gate;
      return decoded;
    };
    return state;
  }

  test('are admitted in the order they arrived, though the later one decodes first', async () => {
    const gate = gateFirstUpload();
    const first = Array.from({ length: 40 }, () => agent.eventBatch([taskEvent()])); // decoded in a thread
    const a = agent.upload(first);
    await until(() => gate.calls === 1, 5000, 'the first upload decoding');
    const b = agent.upload([agent.heartbeat()]); // seq 41, decoded inline at once
    await until(() => gate.calls === 2, 5000, 'the second upload decoding');
    await Bun.sleep(30); // every chance to overtake
    gate.release();
    expect((await a).body).toEqual({ accepted: 40, rejected: 0, errors: [], error_code: null });
    expect((await b).body).toEqual({ accepted: 1, rejected: 0, errors: [], error_code: null });
    expect(await count(svc.ctx.db, 'events')).toBe(40);
  });

  test('a later upload waiting its turn gets 409 when the earlier one ends the session', async () => {
    const gate = gateFirstUpload();
    const bad = [agent.craft({ seq: 1 }, { hmac: 'ab'.repeat(32) }), ...Array.from({ length: 39 }, () => agent.eventBatch([taskEvent()]))];
    const a = agent.upload(bad);
    await until(() => gate.calls === 1, 5000, 'the first upload decoding');
    const b = agent.upload([agent.eventBatch([taskEvent({ task_id: 'too-late' })])]);
    await until(() => gate.calls === 2, 5000, 'the second upload decoding');
    gate.release();
    expect((await a).status).toBe(409);
    const late = await b;
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('session_invalidated');
    expect(await count(svc.ctx.db, 'events')).toBe(0);
  });
});

// Every upload rule holds whether the frames are decoded on the event loop or
// in the decoding threads (large uploads go there; here every upload does).
for (const [mode, minFrames] of [
  ['decoded inline', Infinity],
  ['decoded in worker threads', 1],
] as const) {
  describe(`uploads (${mode})`, () => {
    beforeEach(() => {
      svc.ctx.agentTransport.decoders.minFrames = minFrames;
    });
    afterEach(() => {
      // Every test of this group has at least one upload decoded.
      const threaded = svc.ctx.agentTransport.decoders.threaded;
      if (minFrames === 1) expect(threaded).toBeGreaterThan(0);
      else expect(threaded).toBe(0);
    });

    test('every accepted frame type is stored or applied and counted accepted; events project onto tasks', async () => {
      const cmd = await issue();
      await agent.probe();
      const ev = taskEvent({ kind: 'task.started', task_id: 'job-1' });
      const done = taskEvent({ kind: 'task.succeeded', task_id: 'job-1' });
      const frames = [
        agent.eventBatch([ev, done]),
        agent.heartbeat({ adapter_health: { 'celery.queue_depths': JSON.stringify({ default: 7 }) } }),
        agent.agentStatus(),
        agent.ack(cmd.id),
        agent.result(cmd.id, 'success', { cancelled: true }),
        agent.sign('registry_delta', { engine: 'celery', added: [], removed: [], updated: [] }),
        agent.sign('error', { code: 'x', message: 'y', fatal: false }),
      ];
      const r = await agent.upload(frames);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ accepted: frames.length, rejected: 0, errors: [], error_code: null });
      expect(await count(svc.ctx.db, 'events', sql`project_id = ${project.id}`)).toBe(2);
      const [task] = await svc.ctx.db.all<{ state: string; name: string; result: unknown }>(sql`SELECT state, name FROM tasks WHERE task_id = 'job-1'`);
      expect(task).toMatchObject({ state: 'success', name: 'app.tasks.add' });
      expect(await count(svc.ctx.db, 'queues', sql`name = 'default' AND pending_count = 7`)).toBe(1);
      expect(await count(svc.ctx.db, 'agent_health_samples', sql`agent_id = ${agent.agentId}`)).toBe(1);
      expect(await getCommand(svc.ctx.db, project.id, cmd.id)).toMatchObject({ status: 'completed', result: { cancelled: true } });
      const row = (await findAgent(svc.ctx.db, agent.agentId))!;
      expect(row.state).toBe('online');
      expect(row.last_seen_at).not.toBeNull();
    });

    test('a re-sent batch (new session, same frame and event ids) is absorbed: accepted again, stored once', async () => {
      const events = [taskEvent(), taskEvent({ kind: 'worker.online', task_id: '', data: { hostname: 'w1' } })];
      expect((await agent.upload([agent.eventBatch(events, 'ev_0000000000aa')])).body.accepted).toBe(1);
      agent.newSession();
      const again = await agent.upload([agent.eventBatch(events, 'ev_0000000000aa')]);
      expect(again.body).toMatchObject({ accepted: 1, rejected: 0 });
      expect(await count(svc.ctx.db, 'events')).toBe(2);
    });

    test('500 frames are fine; unreadable frames and unknown types are dropped (accepted) with at most ten errors', async () => {
      const good = Array.from({ length: 485 }, () => agent.eventBatch([taskEvent()]));
      const junk = [...Array.from({ length: 12 }, () => 'not json'), agent.craft({ type: 'telepathy', seq: 9999 }), '[1,2]', '{"type": 5}'];
      const r = await agent.upload([...good, ...junk]);
      expect(r.status).toBe(200);
      expect(r.body.accepted).toBe(500);
      expect(r.body.rejected).toBe(0);
      expect(r.body.errors).toHaveLength(10);
      expect(r.body.errors[0]).toMatch(/^frame 485: frame is not valid JSON/);
      expect(await count(svc.ctx.db, 'events')).toBe(485);
    });

    test('unknown frame type alone: accepted (dropped), nothing stored', async () => {
      const r = await agent.upload([agent.craft({ type: 'mystery', seq: 1 })]);
      expect(r.body).toMatchObject({ accepted: 1, rejected: 0, errors: ['frame 0: unknown frame type'] });
    });

    test('another protocol version is rejected (re-sent later); hello frames are accepted but never liveness', async () => {
      const hello = JSON.stringify({ v: 2, id: 'hello_0123456789abcdef', ts: null, type: 'hello', payload: { protocol_version: '2' } });
      const r = await agent.upload([agent.craft({ v: 3, seq: 1 }), hello]);
      expect(r.body).toMatchObject({ accepted: 1, rejected: 1 });
      expect(r.body.errors[0]).toMatch(/unsupported frame version/);
      expect((await findAgent(svc.ctx.db, agent.agentId))!.state).toBe('unknown');
    });

    const badFrames: [string, (a: TestAgent, other: { id: string }) => string, RegExp][] = [
      ['wrong HMAC', (a) => a.craft({ seq: 2 }, { hmac: 'ab'.repeat(32) }), /hmac signature mismatch/],
      ['replayed nonce', (a) => a.craft({ seq: 2, nonce: 'nonce-used-twice-xxxxx' }), /nonce replayed/],
      ['stale ts', (a) => a.craft({ seq: 2, ts: formatFrameTimestamp(nowMicros() - 61_000_000) }), /skew window/],
      ['seq going back', (a) => a.craft({ seq: 1 }), /seq not greater/],
      ['frame bound to another project', (a, other) => a.craft({ seq: 2 }, { binding: { ...a.binding, projectId: other.id } }), /hmac signature mismatch/],
      ['frame signed for another session', (a) => a.craft({ seq: 2 }, { binding: { ...a.binding, sessionId: 'someone-else' } }), /hmac signature mismatch/],
    ];
    for (const [name, make, message] of badFrames) {
      test(`${name}: that frame and all later ones are rejected, the session invalidated (409); earlier frames are kept`, async () => {
        const other = await insertProject(svc.ctx.db);
        await agent.probe();
        const kept = taskEvent({ task_id: `kept-${name}` });
        const first = agent.craft({ seq: 1, nonce: 'nonce-used-twice-xxxxx', type: 'event_batch', payload: { events: [kept] } });
        const later = agent.craft({ seq: 5, type: 'event_batch', payload: { events: [taskEvent()] } });
        const r = await agent.upload([first, make(agent, other), later]);
        expect(r.status).toBe(409);
        expect(r.body).toMatchObject({ error: 'session_invalidated', details: { accepted: 1, rejected: 2 } });
        expect(r.body.details.errors[0]).toMatch(message);
        expect(await count(svc.ctx.db, 'events')).toBe(1);
        expect(await count(svc.ctx.db, 'tasks', sql`task_id = ${`kept-${name}`}`)).toBe(1);
      });
    }

    test('an invalidated session answers 409 on every route and nonce until a probe under a fresh nonce', async () => {
      const stale = agent.nonce;
      expect((await agent.upload([agent.craft({ seq: 1 }, { hmac: '00'.repeat(32) })])).status).toBe(409);
      expect((await agent.upload([agent.heartbeat()])).status).toBe(409);
      expect((await agent.poll({ wait: 0 })).status).toBe(409);
      expect((await agent.probe()).status).toBe(409); // the same (invalidated) nonce
      agent.newSession();
      expect((await agent.upload([agent.heartbeat()])).status).toBe(409); // a fresh nonce, but not a probe
      expect((await agent.probe()).status).toBe(200);
      expect((await agent.upload([agent.heartbeat()])).body).toMatchObject({ accepted: 1 });
      agent.newSession(stale);
      expect((await agent.probe()).status).toBe(200); // markers are retired; the old nonce starts afresh
    });

    test('scheduler_upgrade_required: the frame is rejected and the code reported', async () => {
      svc.ctx.agentTransport.needsSchedulerUpgrade = (records) => records.some((r) => r.kind === 'schedule.snapshot');
      const snapshot = taskEvent({ kind: 'schedule.snapshot', task_id: '', engine: 'celery-beat', data: { scheduler: 'celery-beat', schedules: [] } });
      const r = await agent.upload([agent.eventBatch([taskEvent()]), agent.eventBatch([snapshot])]);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ accepted: 1, rejected: 1, error_code: 'scheduler_upgrade_required' });
    });

    test('a token revoked mid-batch ends the batch with 401; frames stored before it stay', async () => {
      const db = svc.ctx.db;
      const realTx = db.tx.bind(db);
      let calls = 0;
      let revoking = false;
      // Revoke right before the batch's second transaction (the command_ack between the two batches).
      (db as { tx: Db['tx'] }).tx = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => {
        if (!revoking && ++calls === 2) {
          revoking = true;
          await revokeAgent(svc.ctx, project.id, agent.agentId, TEST_ACTOR);
        }
        return realTx(fn);
      };
      const r = await agent.upload([agent.eventBatch([taskEvent({ task_id: 'before' })]), agent.ack(crypto.randomUUID()), agent.eventBatch([taskEvent({ task_id: 'after' })])]);
      (db as { tx: Db['tx'] }).tx = realTx;
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ error: 'invalid_agent_token', detail: 'invalid agent token' });
      expect(await count(svc.ctx.db, 'events', sql`task_id = 'before'`)).toBe(1);
      expect(await count(svc.ctx.db, 'events', sql`task_id = 'after'`)).toBe(0);
      expect((await agent.probe()).status).toBe(401);
    });

    test('liveness: a verified upload promotes an offline agent to online even when dispatch fails', async () => {
      await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE agents SET state = 'offline' WHERE id = ${agent.agentId}`));
      svc.ctx.agentTransport.needsSchedulerUpgrade = () => true;
      const r = await agent.upload([agent.eventBatch([taskEvent()])]);
      expect(r.body.rejected).toBe(1);
      expect((await findAgent(svc.ctx.db, agent.agentId))!.state).toBe('online');
    });

    test('status samples: at most 12 per minute per session are stored, the rest accepted and dropped', async () => {
      const clock = manualClock();
      agent.newSession();
      const frames = Array.from({ length: 14 }, () => agent.agentStatus());
      const r = await agent.upload(frames);
      expect(r.body).toMatchObject({ accepted: 14, rejected: 0 });
      expect(await count(svc.ctx.db, 'agent_health_samples')).toBe(12);
      clock.advance(61_000);
      expect((await agent.upload([agent.agentStatus()])).body.accepted).toBe(1);
      expect(await count(svc.ctx.db, 'agent_health_samples')).toBe(13);
    });

    test('the telemetry-loss warning is logged at most once a minute per session, when the counters change', async () => {
      const clock = manualClock();
      agent.newSession();
      const lines: string[] = [];
      setLogDestination({ write: (l: string) => void lines.push(l) } as never);
      setLogLevel('warn');
      const loss = (n: number) => ({ telemetry_loss: { buffer_id: 'buf1', runtime_id: 'rt1', event_records: n, other_frames: 0 } });
      try {
        await agent.upload([agent.heartbeat(loss(0)), agent.heartbeat(loss(3)), agent.agentStatus(loss(3)), agent.heartbeat(loss(5))]);
        clock.advance(60_000);
        await agent.upload([agent.heartbeat(loss(5)), agent.heartbeat(loss(9))]);
      } finally {
        setLogLevel('silent');
      }
      const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'agent reports telemetry loss');
      // 3 warns; 5 changes within the minute (quiet); after it, 5 still differs from what was warned; 9 is quiet again.
      expect(warnings.map((w) => w.telemetry_loss.event_records)).toEqual([3, 5]);
      expect(warnings[0]).toMatchObject({ level: 'warn', agent_id: agent.agentId });
    });
  });
}

describe('status samples switched off', () => {
  test('SVC_AGENT_STATUS_DISABLED: agent_status frames are accepted and not stored', async () => {
    await svc.close();
    await start({ SVC_AGENT_STATUS_DISABLED: 'true' });
    expect((await agent.upload([agent.agentStatus()])).body).toMatchObject({ accepted: 1, rejected: 0 });
    expect(await count(svc.ctx.db, 'agent_health_samples')).toBe(0);
  });
});

describe('polls', () => {
  test('wait and max_frames outside their ranges are 422', async () => {
    for (const query of ['wait=61', 'wait=-1', 'max_frames=501', 'max_frames=-1', 'wait=soon', 'max_frames=1.5']) {
      const r = await agent.poll({ query });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe('validation_failed');
    }
  });

  test('pending commands come back signed for this session, oldest first, at most max_frames, then are not sent again', async () => {
    const a = await issue({ targetId: 'celery:a', action: 'restart_worker' });
    const b = await issue({ targetId: 'celery:b', action: 'restart_worker' });
    const c = await issue({ targetId: 'celery:c', action: 'restart_worker' });
    await agent.probe();
    const first = await agent.poll({ wait: 0, max_frames: 2 });
    const frames = agent.verifyAll(first.body.frames);
    expect(frames.map((f) => f.id)).toEqual([a.id, b.id]);
    expect(frames.map((f) => f.seq)).toEqual([1n, 2n]);
    expect(frames[0]!.payload).toEqual({
      action: 'restart_worker',
      target: { type: 'task', id: 'celery:a' },
      parameters: { engine: 'celery', task_id: 't1' },
      timeout_seconds: 60,
      issued_by: null,
      delivery_claim_token: null,
    });
    expect((await getCommand(svc.ctx.db, project.id, a.id)).status).toBe('dispatched');
    const second = await agent.poll({ wait: 0 });
    expect(agent.verifyAll(second.body.frames).map((f) => f.id)).toEqual([c.id]);
    expect((await agent.poll({ wait: 0 })).body.frames).toEqual([]);
  });

  test('retry_task and bulk_retry only reach a poll whose retry-contracts header covers their engine', async () => {
    const retry = await issue({ action: 'retry_task', payload: { engine: 'celery', task_id: 't1' } });
    const bulk = await issue({ action: 'bulk_retry', targetType: 'bulk', targetId: null, payload: { filter: { engine: 'rq' }, max: 10 } });
    for (const contracts of [undefined, '', 'celery=2', 'celery=1,bogus', 'rq=1']) {
      const r = await agent.poll({ wait: 0, ...(contracts !== undefined ? { contracts } : {}) });
      const ids = agent.verifyAll(r.body.frames).map((f) => f.id);
      expect(ids).not.toContain(retry.id);
      expect(ids).toEqual(contracts === 'rq=1' ? [bulk.id] : []);
    }
    const r = await agent.poll({ wait: 0, contracts: 'celery=1,rq=1' });
    expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([retry.id]);
  });

  test('bulk_retry frames name the engine in the target', async () => {
    await issue({ action: 'bulk_retry', targetType: 'bulk', targetId: null, payload: { filter: { engine: 'rq' }, max: 10 } });
    const [frame] = agent.verifyAll((await agent.poll({ wait: 0, contracts: 'rq=1' })).body.frames);
    expect(frame!.payload.target).toEqual({ type: 'bulk', id: null, engine: 'rq' });
  });

  test('redispatch: only redeliverable actions, only inside the window, no more often than the minimum interval', async () => {
    const clock = manualClock();
    agent.newSession();
    const cancel = await issue({ action: 'cancel_task' });
    clock.advance(1); // issued_at order needs distinct instants
    const restart = await issue({ action: 'restart_worker' });
    const ids = async () => agent.verifyAll((await agent.poll({ wait: 0 })).body.frames).map((f) => f.id);
    expect(await ids()).toEqual([cancel.id, restart.id]);
    clock.advance(9_000);
    expect(await ids()).toEqual([]); // under the 10 s minimum interval
    clock.advance(1_500);
    expect(await ids()).toEqual([cancel.id]); // re-sent; restart_worker is at-most-once
    clock.advance(5_000);
    expect(await ids()).toEqual([]);
    clock.advance(6_000);
    expect(await ids()).toEqual([cancel.id]);
    clock.advance(50_000); // past the 60 s window after dispatch
    expect(await ids()).toEqual([]);
  });

  test('two concurrent polls: each pending command is claimed by exactly one', async () => {
    const issued = await Promise.all(Array.from({ length: 20 }, (_, i) => issue({ targetId: `celery:${i}`, action: 'restart_worker' })));
    const other = await mintTestAgent(svc, project.id, svc.baseUrl);
    // Same agent, two sessions (two processes of one agent).
    const twin = Object.assign(Object.create(Object.getPrototypeOf(agent)), agent) as TestAgent;
    twin.newSession();
    const [r1, r2] = await Promise.all([agent.poll({ wait: 0, max_frames: 500 }), twin.poll({ wait: 0, max_frames: 500 })]);
    const got = [...agent.verifyAll(r1.body.frames), ...twin.verifyAll(r2.body.frames)].map((f) => f.id).sort();
    expect(got).toEqual(issued.map((c) => c.id).sort());
    expect((await other.poll({ wait: 0 })).body.frames).toEqual([]);
  });

  test('a claimed command that cannot be signed ends failed with "longpoll sign failed"', async () => {
    const bad = await issue({ action: 'restart_worker', payload: { worker_name: 'w1', huge: 1e20 } });
    const good = await issue({ action: 'restart_worker', payload: { worker_name: 'w2' } });
    const r = await agent.poll({ wait: 0 });
    expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([good.id]);
    expect(await getCommand(svc.ctx.db, project.id, bad.id)).toMatchObject({ status: 'failed', error: 'longpoll sign failed' });
  });

  test('a waiting poll wakes at once for a command issued in this process', async () => {
    manualClock();
    const waiting = agent.poll({ wait: 30 });
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) > 0, 5000, 'the poll to wait');
    const cmd = await issue();
    const r = await waiting; // the clock never moved: the wake-up delivered it
    expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([cmd.id]);
  });

  test('a command issued elsewhere is found by the 250 ms re-check; an empty wait ends with no frames', async () => {
    const clock = manualClock();
    const waiting = agent.poll({ wait: 30 });
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) > 0, 5000, 'the poll to wait');
    // Another process's issue: committed, but no wake-up reaches this one.
    const elsewhere = { ...svc.ctx, agentTransport: new AgentTransport(svc.ctx.config) };
    const cmd = await issueCommand(elsewhere, { projectId: project.id, agentId: agent.agentId, action: 'cancel_task', targetType: 'task' }, TEST_ACTOR);
    expect(svc.ctx.agentTransport.waitingOn(agent.agentId)).toBe(1);
    const r = await advanceUntil(clock, waiting);
    expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([cmd.id]);
    const empty = await advanceUntil(clock, agent.poll({ wait: 2 }));
    expect(empty).toMatchObject({ status: 200, body: { frames: [] } });
  });

  test('a revoke committed during a wait ends the poll with 401', async () => {
    manualClock();
    const waiting = agent.poll({ wait: 30 });
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) > 0, 5000, 'the poll to wait');
    await revokeAgent(svc.ctx, project.id, agent.agentId, TEST_ACTOR);
    const r = await waiting;
    expect(r.status).toBe(401);
    expect(r.body.detail).toBe('invalid agent token');
  });

  // The re-checks after a quiet wait ask one statement whether anything is there (commands/store.ts quietPassOf).
  test('a re-send falling due during a wait is found by a re-check, with no wake-up', async () => {
    const clock = manualClock();
    const cmd = await issue({ action: 'cancel_task' });
    expect(agent.verifyAll((await agent.poll({ wait: 0 })).body.frames).map((f) => f.id)).toEqual([cmd.id]);
    const waiting = agent.poll({ wait: 30 });
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) > 0, 5000, 'the poll to wait');
    const r = await advanceUntil(clock, waiting);
    expect(agent.verifyAll(r.body.frames).map((f) => f.id)).toEqual([cmd.id]);
  });

  test('a project archived during a wait (no signal) ends the poll at a re-check with 403 project_inactive', async () => {
    const clock = manualClock();
    const waiting = agent.poll({ wait: 30 });
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) > 0, 5000, 'the poll to wait');
    await svc.ctx.db.tx((tx) => tx.run(sql`UPDATE projects SET archived_at = ${new Date().toISOString()} WHERE id = ${project.id}`));
    const r = await advanceUntil(clock, waiting);
    expect(r).toMatchObject({ status: 403, body: { error: 'project_inactive' } });
  });

  test('command ack and result through uploads; a late result after a timeout is ignored', async () => {
    const clock = manualClock();
    agent.newSession();
    const cmd = await issue({ action: 'restart_worker' });
    const late = await issue({ action: 'restart_worker', targetId: 'celery:late' });
    agent.verifyAll((await agent.poll({ wait: 0 })).body.frames);
    await agent.upload([agent.ack(cmd.id), agent.result(cmd.id, 'failed', null, 'no such worker')]);
    expect(await getCommand(svc.ctx.db, project.id, cmd.id)).toMatchObject({ status: 'failed', error: 'no such worker' });
    clock.advance(61_000);
    expect(await timeOutCommands(svc.ctx.db)).toEqual([late.id]);
    agent.newSession();
    await agent.upload([agent.result(late.id, 'success', { ok: true })]);
    expect(await getCommand(svc.ctx.db, project.id, late.id)).toMatchObject({ status: 'timeout', result: null });
  });
});

describe('session registry', () => {
  test('16 sessions per agent: a 17th nonce while all are busy gets 503 with Retry-After 1; an idle one is then evicted', async () => {
    const clock = manualClock();
    const twins = Array.from({ length: 16 }, () => (Object.assign(Object.create(Object.getPrototypeOf(agent)), agent) as TestAgent).newSession());
    const waits = twins.map((t) => t.poll({ wait: 10 }));
    await until(() => svc.ctx.agentTransport.waitingOn(agent.agentId) === 16, 5000, '16 parked polls');
    agent.newSession();
    const full = await agent.probe();
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toBe('1');
    await advanceUntil(clock, Promise.all(waits));
    expect((await agent.probe()).status).toBe(200);
    expect(svc.ctx.agentTransport.sessions.size).toBe(16);
  });
});
