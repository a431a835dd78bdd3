// The triggers fire from what causes them and reach the subscriptions they
// should: task events uploaded by an agent (one fire per task and trigger per
// batch), agent liveness, the schedule dispatch call; filters, mutes,
// membership and cooldowns decide who hears; a dead receiver costs a failed
// delivery row, never the agent's time, and a storm of sends to it stays
// bounded. On both databases.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { ManualClock, nowMicros, resetClock, setClock } from '../../src/lib/clock.ts';
import { SEND_BACKLOG } from '../../src/notifications/dispatch.ts';
import { fireSchedule } from '../../src/notifications/triggers.ts';
import { offlineSweep } from '../../src/transport/jobs.ts';
import { countRows, liveService, mintTestAgent, until, type LiveService } from '../helpers/agents.ts';
import { testDialect } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';
import { taskEvent, type TestAgent } from '../helpers/test-agent.ts';

let svc: LiveService;
let admin: Browser;
let member: Browser & { id: string };
let project: { id: string; slug: string };
let agent: TestAgent;

const noHost = unavailable();
let host: Receiver | undefined;

beforeAll(async () => {
  if (!noHost) host = await startReceiver();
  svc = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '2', SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true' } });
  admin = await mfaAdmin(svc);
  const p = (await admin.call('GET', '/api/v1/projects/default')).body;
  project = { id: p.id, slug: p.slug };
  member = await userBrowser(admin, 'member@example.com');
  expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: member.id, role: 'operator' } })).status).toBe(201);
  agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  agent.newSession();
  expect((await agent.probe()).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await svc.close();
  await host?.stop();
});

const inboxOf = async (who: Browser) => (await who.call('GET', '/api/v1/user/notifications?limit=200')).body.items as any[];
const clearInbox = async (who: Browser) => {
  await who.call('POST', '/api/v1/user/notifications/read-all');
  await svc.ctx.db.tx((tx) => tx.run(sql`DELETE FROM user_notifications`));
};
const subscribe = async (who: Browser, body: Record<string, unknown>) => {
  for (const s of (await who.call('GET', `/api/v1/user/subscriptions?project_id=${project.id}`)).body) {
    if (s.trigger === body.trigger) await who.call('DELETE', `/api/v1/user/subscriptions/${s.id}`);
  }
  const r = await who.call('POST', '/api/v1/user/subscriptions', { body: { project_id: project.id, ...body } });
  expect(r.status).toBe(201);
  return r.body;
};
const upload = async (events: Record<string, unknown>[]) => {
  const r = await agent.upload([agent.eventBatch(events as never)]);
  expect(r.status).toBe(200);
  await svc.ctx.notifications.settled();
};

describe(`notification triggers on ${testDialect()}`, () => {
  test('task.failed from uploaded events reaches the materialised default subscription, once per task per batch, with a deep link', async () => {
    await clearInbox(member);
    const taskId = `fail-${crypto.randomUUID()}`;
    const at = (ms: number) => new Date(Date.now() - ms).toISOString().replace('Z', '+00:00');
    // The same instant in the re-sent batch below: an event's identity includes its second, and a
    // fresh at(1000) there could fall in the next second on a slow run (a new event, a new fire).
    const last = at(1000);
    await upload([
      taskEvent({ kind: 'task.received', task_id: taskId, data: { task_name: 'billing.charge', args: [1] } }),
      taskEvent({ kind: 'task.failed', task_id: taskId, occurred_at: at(3000), data: { exception: 'ValueError: first' } }),
      taskEvent({ kind: 'task.failed', task_id: taskId, occurred_at: last, data: { exception: 'ValueError: card declined' } }),
    ]);
    const rows = await inboxOf(member);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      trigger: 'task.failed',
      title: 'Task failed: billing.charge',
      body: 'ValueError: card declined',
      project_slug: 'default',
      data: { path: `/projects/default/tasks/celery/${taskId}`, task_id: taskId, task_name: 'billing.charge', engine: 'celery' },
      read_at: null,
    });
    expect((await member.call('GET', '/api/v1/user/notifications/unread-count')).body.unread).toBe(1);
    // A re-sent batch stores nothing new and fires nothing.
    await upload([taskEvent({ kind: 'task.failed', task_id: taskId, occurred_at: last, data: { exception: 'ValueError: card declined' } })]);
    expect(await inboxOf(member)).toHaveLength(1);
  });

  test('filters decide: a glob and a priority list', async () => {
    await clearInbox(member);
    await subscribe(member, { trigger: 'task.succeeded', filters: { task_name_pattern: 'reports.*', priority: ['high', 'critical'] } });
    await upload([
      taskEvent({ kind: 'task.succeeded', data: { task_name: 'reports.daily', priority: 'high' } }),
      taskEvent({ kind: 'task.succeeded', data: { task_name: 'reports.weekly', priority: 'low' } }),
      taskEvent({ kind: 'task.succeeded', data: { task_name: 'billing.charge', priority: 'high' } }),
    ]);
    expect((await inboxOf(member)).map((r) => r.title)).toEqual(['Task succeeded: reports.daily']);
  });

  test('a muted or paused subscription hears nothing; nor does a user who left the project or was deactivated', async () => {
    const sub = await subscribe(member, { trigger: 'task.retried' });
    await clearInbox(member);
    const fire = () => upload([taskEvent({ kind: 'task.retried', data: { task_name: 'flaky.job' } })]);
    await member.call('PATCH', `/api/v1/user/subscriptions/${sub.id}`, { body: { muted_until: new Date(Date.now() + 3600_000).toISOString() } });
    await fire();
    await member.call('PATCH', `/api/v1/user/subscriptions/${sub.id}`, { body: { muted_until: null, is_active: false } });
    await fire();
    expect(await inboxOf(member)).toHaveLength(0);
    await member.call('PATCH', `/api/v1/user/subscriptions/${sub.id}`, { body: { is_active: true } });
    await fire();
    expect(await inboxOf(member)).toHaveLength(1);
    // Left the project: the subscription stays but is not fired.
    const leaver = await userBrowser(admin, `leaver-${crypto.randomUUID().slice(0, 6)}@example.com`);
    const m = await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: leaver.id, role: 'viewer' } });
    await admin.call('DELETE', `/api/v1/projects/default/memberships/${m.body.id}`);
    const gone = await userBrowser(admin, `gone-${crypto.randomUUID().slice(0, 6)}@example.com`);
    await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: gone.id, role: 'viewer' } });
    await admin.call('PATCH', `/api/v1/users/${gone.id}`, { body: { is_active: false } });
    await upload([taskEvent({ kind: 'task.failed', data: { task_name: 'x.y' } })]);
    expect(await countRows(svc.ctx.db, 'user_notifications', sql`user_id IN (${leaver.id}, ${gone.id})`)).toBe(0);
  });

  test('cooldown: one fire opens the window, later ones in it are suppressed (across tasks)', async () => {
    await clearInbox(member);
    await subscribe(member, { trigger: 'task.failed', cooldown_seconds: 3600 });
    await upload([taskEvent({ kind: 'task.failed', data: { task_name: 'a.one' } })]);
    await upload([taskEvent({ kind: 'task.failed', data: { task_name: 'a.two' } })]);
    await upload([taskEvent({ kind: 'task.failed', data: { task_name: 'a.three' } }), taskEvent({ kind: 'task.failed', data: { task_name: 'a.four' } })]);
    expect((await inboxOf(member)).map((r) => r.title)).toEqual(['Task failed: a.one']);
  });

  test('the cooldown claim: three processes claiming the same windows at once, exactly one wins each', async () => {
    const sub = await subscribe(member, { trigger: 'agent.online', cooldown_seconds: 60 });
    const url = svc.ctx.database.dialect === 'sqlite' ? `sqlite://${svc.ctx.database.path}` : svc.ctx.loaded.config.SVC_DATABASE_URL;
    const rounds = 40;
    const base = nowMicros() + 3600_000_000;
    const procs = [0, 1, 2].map(() =>
      Bun.spawn([process.execPath, `${import.meta.dir}/../helpers/cooldown-child.ts`, url, sub.id, String(rounds), String(base)], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' }),
    );
    const errs = procs.map((p) => new Response(p.stderr).text());
    // The start barrier: every claimant is connected before any claims (each prints `ready`, then waits for stdin to close).
    const outs = await Promise.all(
      procs.map(async (p) => {
        const reader = p.stdout.getReader();
        const decoder = new TextDecoder();
        let text = '';
        while (!text.startsWith('ready\n')) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        return { reader, decoder, text };
      }),
    );
    for (const o of outs) expect(o.text).toStartWith('ready\n');
    for (const p of procs) p.stdin.end();
    const results = await Promise.all(
      procs.map(async (p, i) => {
        const { reader, decoder } = outs[i]!;
        let out = outs[i]!.text.slice('ready\n'.length);
        for (let r = await reader.read(); !r.done; r = await reader.read()) out += decoder.decode(r.value, { stream: true });
        return { code: await p.exited, out, err: await errs[i]! };
      }),
    );
    for (const r of results) expect([r.code, r.err]).toEqual([0, '']);
    const wins = results.flatMap((r) => JSON.parse(r.out) as number[]).sort((a, b) => a - b);
    expect(wins).toEqual(Array.from({ length: rounds }, (_, k) => k));
  }, 60_000);

  test('agent.online when an agent comes back, agent.offline when the sweep marks it offline', async () => {
    await clearInbox(member);
    await subscribe(member, { trigger: 'agent.offline' });
    await subscribe(member, { trigger: 'agent.online' });
    // A fresh agent's first verified upload brings it online (the transport reports it).
    const pager = await mintTestAgent(svc, project.id, svc.baseUrl, `pager-${crypto.randomUUID().slice(0, 6)}`);
    pager.newSession();
    expect((await pager.upload([pager.heartbeat()])).status).toBe(200);
    const a = { id: pager.agentId, name: (await admin.call('GET', `/api/v1/projects/default/agents/${pager.agentId}`)).body.name as string };
    await until(async () => (await inboxOf(member)).some((r) => r.trigger === 'agent.online' && r.data.agent_id === a.id), 5000, 'agent.online row');
    const clock = new ManualClock(nowMicros());
    setClock(clock);
    try {
      clock.advance((svc.ctx.config.SVC_AGENT_OFFLINE_TIMEOUT_SECONDS + 1) * 1000);
      // Other agents of the fixture may go offline too: only this one matters here.
      await offlineSweep(svc.ctx);
      await until(async () => (await inboxOf(member)).some((r) => r.trigger === 'agent.offline' && r.data.agent_id === a.id), 5000, 'agent.offline row');
      const rows = (await inboxOf(member)).filter((r) => r.data.agent_id === a.id);
      expect(rows.map((r) => r.title).sort()).toEqual([`Agent offline: ${a.name}`, `Agent online: ${a.name}`]);
      expect(rows.find((r) => r.trigger === 'agent.online').data.path).toBe(`/projects/default/agents/${a.id}`);
    } finally {
      resetClock();
    }
  });

  test('the schedule triggers go through the one dispatch call', async () => {
    await clearInbox(member);
    await subscribe(member, { trigger: 'schedule.misfired' });
    fireSchedule(svc.ctx.notifications, 'schedule.misfired', project.id, { id: 's-1', name: 'nightly-report', error: 'late by 120 s (grace 60 s)' });
    await svc.ctx.notifications.settled();
    expect((await inboxOf(member))[0]).toMatchObject({ title: 'Schedule misfired: nightly-report', body: 'late by 120 s (grace 60 s)', data: { schedule_id: 's-1', path: '/projects/default/schedules/s-1' } });
  });

  test.skipIf(Boolean(noHost))('a receiver that never answers costs a failed delivery row after the timeout, not the agent time', async () => {
    // A test host in a network namespace that takes the request and never answers.
    await host!.respond('/hang', { hang: true });
    const channel = await admin.call('POST', '/api/v1/projects/default/notifications/channels', { body: { name: 'void', type: 'webhook', config: { url: `http://${host!.address}/hang` } } });
    expect(channel.status).toBe(201);
    await subscribe(member, { trigger: 'task.failed', project_channel_ids: [channel.body.id] });
    const started = performance.now();
    const r = await agent.upload([agent.eventBatch([taskEvent({ kind: 'task.failed', data: { task_name: 'slow.receiver' } })] as never)]);
    const took = performance.now() - started;
    expect(r.status).toBe(200);
    expect(took).toBeLessThan(1000);
    // The inbox row is written before any send; the delivery row once the send gave up.
    await until(async () => (await inboxOf(member)).some((x) => x.title === 'Task failed: slow.receiver'), 3000, 'the inbox row');
    await svc.ctx.notifications.settled();
    const log = (await admin.call('GET', '/api/v1/projects/default/notifications/deliveries')).body.items;
    expect(log[0]).toMatchObject({ trigger: 'task.failed', status: 'failed', channel_name: 'void', task_name: 'slow.receiver', response_code: null });
    expect(log[0].error).toMatch(/timed out/);
  }, 30_000);

  test.skipIf(Boolean(noHost))(
    'a storm of sends to a receiver that never answers: the backlog stays bounded, the overflow is counted and logged, uploads go on; stopping logs what it gave up',
    async () => {
      // A service of its own: its backlog is left to stop(), which the other tests' service must not go through.
      const storm = await liveService({ env: { ...FAST_IDENTITY_ENV, SVC_NOTIFICATIONS_TIMEOUT_SECONDS: '2', SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true' } });
      let sampler: ReturnType<typeof setInterval> | undefined;
      try {
        const boss = await mfaAdmin(storm);
        const projectId = (await boss.call('GET', '/api/v1/projects/default')).body.id as string;
        await host!.respond('/storm', { hang: true });
        const channel = await boss.call('POST', '/api/v1/projects/default/notifications/channels', { body: { name: 'storm', type: 'webhook', config: { url: `http://${host!.address}/storm` } } });
        const sub = await boss.call('POST', '/api/v1/user/subscriptions', { body: { project_id: projectId, trigger: 'schedule.misfired', in_app: false, project_channel_ids: [channel.body.id] } });
        expect([channel.status, sub.status]).toEqual([201, 201]);
        const n = storm.ctx.notifications;
        const overflowed = async () => Number(/^svc_notifications_backlog_full_total (\d+)/m.exec(await storm.ctx.metrics.text())?.[1] ?? 0);
        let most = 0;
        sampler = setInterval(() => (most = Math.max(most, n.status().sending)), 2);
        // Each fire is one send to the dead receiver: more than the backlog holds.
        const fires = SEND_BACKLOG + 100;
        for (let i = 0; i < fires; i++) fireSchedule(n, 'schedule.misfired', projectId, { id: `s-${i}`, name: `storm-${i}` });
        await until(async () => n.status().queued === 0 && (await overflowed()) > 0, 20_000, 'the backlog overflowing');
        // Agents' uploads are stored meanwhile.
        const uploader = await mintTestAgent(storm, projectId, storm.baseUrl);
        uploader.newSession();
        const up = await uploader.upload([uploader.eventBatch([taskEvent({ kind: 'task.received', data: { task_name: 'during.storm' } })] as never)]);
        expect([up.status, up.body.accepted]).toEqual([200, 1]);
        // Stopping gives up on the sends still waiting for a slot (after its grace) and logs them too.
        await n.stop();
        clearInterval(sampler);
        expect(most).toBeLessThanOrEqual(SEND_BACKLOG);
        const rows = await storm.ctx.db.all<{ status: string; error: string | null }>(sql`SELECT status, error FROM notification_deliveries WHERE channel_id = ${channel.body.id}`);
        const count = (error: RegExp) => rows.filter((r) => error.test(r.error ?? '')).length;
        const full = count(new RegExp(`^not sent: ${SEND_BACKLOG} sends were already waiting \\(receivers slow or down\\)$`));
        const timedOut = count(/^request timed out after 2000 ms$/);
        const givenUp = count(/^not sent: the service stopped first$/);
        // Every fire is accounted for by one failed row: timed out, not attempted (backlog full), or given up at stop.
        expect(rows.length).toBe(fires);
        expect(rows.every((r) => r.status === 'failed')).toBe(true);
        expect(full + timedOut + givenUp).toBe(fires);
        expect(full).toBe(await overflowed());
        expect(full).toBeGreaterThan(0);
        expect(timedOut).toBeGreaterThanOrEqual(16);
        expect(givenUp).toBeGreaterThan(0);
        // The project's delivery log shows the overflow as it shows any failure (newest first: page back to it).
        const shown: any[] = [];
        for (let cursor = ''; ; ) {
          const page = (await boss.call('GET', `/api/v1/projects/default/notifications/deliveries?limit=500${cursor}`)).body;
          shown.push(...page.items);
          if (!page.next_cursor) break;
          cursor = `&cursor=${encodeURIComponent(page.next_cursor)}`;
        }
        expect(shown.filter((x) => x.channel_name === 'storm' && x.error === `not sent: ${SEND_BACKLOG} sends were already waiting (receivers slow or down)`)).toHaveLength(full);
      } finally {
        clearInterval(sampler);
        await storm.close();
        await host!.respond('/storm', null);
      }
    },
    90_000,
  );
});
