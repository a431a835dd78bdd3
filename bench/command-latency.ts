// Command delivery latency, from the call that issues a command to the agent
// holding the verified command frame, p50 and p99.
//   bun bench/command-latency.ts [--pg] [samples=300]
// The service runs in this process listening on loopback (the issuing call
// runs where the management API will run it); agents talk real HTTP and
// WebSocket to it. Four paths:
//   poll (same process)       a waiting long-poll, woken at once by the issue
//   ws (same process)         a connected WebSocket, pushed at once
//   poll (other process)      issued through another process's context: found by the 250 ms re-check
//   ws (other process)        found by the 300 ms delivery sweep
// --pg needs SVC_TEST_PG_URL (an admin URL; a fresh database is created).
import { issueCommand } from '../src/commands/service.ts';
import { AgentTransport } from '../src/transport/runtime.ts';
import { insertProject, liveService, mintTestAgent, TEST_ACTOR } from '../tests/helpers/agents.ts';
import { dialectName, percentile, usePostgres } from './lib/setup.ts';

if (usePostgres) process.env.SVC_TEST_DIALECT = 'postgres';
const samples = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 300);

// Polls and acknowledgements come from many (forwarded) addresses: one address is
// allowed 600 agent requests a minute, fewer than a run makes.
const svc = await liveService({ env: { SVC_COMMAND_TIMEOUT_SECONDS: '600', SVC_TRUSTED_PROXIES: '127.0.0.1' } });
let requests = 0;
const fromAddress = () => ({ 'x-forwarded-for': `10.77.${(++requests >> 8) & 255}.${requests & 255}` });
await svc.startJobs();
const project = await insertProject(svc.ctx.db);
const other = { ...svc.ctx, agentTransport: new AgentTransport(svc.ctx.config) };

type Ctx = typeof svc.ctx;
const issue = (ctx: Ctx, agentId: string) =>
  issueCommand(ctx, { projectId: project.id, agentId, action: 'cancel_task', targetType: 'task', targetId: 'celery:x', payload: { engine: 'celery', task_id: 'x' } }, TEST_ACTOR);

function summary(name: string, ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  return { path: name, samples: s.length, p50_ms: Number(percentile(s, 50).toFixed(2)), p99_ms: Number(percentile(s, 99).toFixed(2)), max_ms: Number(s[s.length - 1]!.toFixed(2)) };
}

async function pollPath(ctx: Ctx, n: number): Promise<number[]> {
  const agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  await agent.probe();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const waiting = agent.poll({ wait: 30, headers: fromAddress() });
    let answered = false;
    void waiting.then(() => (answered = true));
    while (svc.ctx.agentTransport.waitingOn(agent.agentId) === 0) {
      if (answered) throw new Error(`the poll returned before a command was issued: ${JSON.stringify((await waiting).body)}`);
      await Bun.sleep(0);
    }
    const t0 = performance.now();
    const cmd = await issue(ctx, agent.agentId);
    const r = await waiting;
    const [frame] = agent.verifyAll(r.body.frames);
    if (frame?.id !== cmd.id) throw new Error('wrong frame');
    out.push(performance.now() - t0);
    // Acknowledged, as agents do: an unacknowledged command is sent again after the
    // redispatch interval, and the next poll would return at once with it.
    await agent.upload([agent.ack(cmd.id)], fromAddress());
  }
  return out;
}

async function wsPath(ctx: Ctx, n: number): Promise<number[]> {
  const agent = await mintTestAgent(svc, project.id, svc.baseUrl);
  const ws = await agent.connect();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const arrived = ws.nextSigned(5000);
    const cmd = await issue(ctx, agent.agentId);
    const frame = await arrived;
    if (frame.id !== cmd.id) throw new Error('wrong frame');
    out.push(performance.now() - t0);
    ws.send('command_ack', { delivery_claim_token: null }, cmd.id);
    await Bun.sleep(1);
  }
  ws.close();
  return out;
}

// Warm up both paths (JIT, statement caches) before measuring.
await pollPath(svc.ctx, 30);
await wsPath(svc.ctx, 30);
const results = [
  summary('poll (same process)', await pollPath(svc.ctx, samples)),
  summary('ws (same process)', await wsPath(svc.ctx, samples)),
  summary('poll (other process)', await pollPath(other, Math.min(samples, 40))),
  summary('ws (other process)', await wsPath(other, Math.min(samples, 40))),
];
await svc.close();
for (const r of results) console.log(JSON.stringify({ bench: 'command-latency', dialect: dialectName, ...r }));
