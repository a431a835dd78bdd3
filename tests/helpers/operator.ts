// Fixtures for the operator-action and bulk-job suites: agents with and
// without an advertised inventory, workers and queue depths as heartbeats
// report them, and stored tasks (with events) at any age.
import { sql } from 'drizzle-orm';
import { findAgent, mintAgent, recordHello, touchAgentLiveness } from '../../src/agents/service.ts';
import type { EventRecord } from '../../src/ingest/events.ts';
import { storeEvents } from '../../src/ingest/service.ts';
import { isoMicros, nowIso, nowMicros } from '../../src/lib/clock.ts';
import { projectAdapterHealth } from '../../src/tasks/service.ts';
import type { TestService } from './app.ts';
import { TEST_ACTOR } from './agents.ts';

export const CELERY_CAPABILITIES = [
  'submit_task', 'retry_task', 'cancel_task', 'bulk_retry', 'purge_queue', 'restart_worker',
  'pool_grow', 'pool_shrink', 'add_consumer', 'cancel_consumer', 'rate_limit', 'retry_by_reference_v1',
];

export async function projectIdOf(svc: TestService, slug = 'default'): Promise<string> {
  return (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = ${slug}`))[0]!.id;
}

/** A WebSocket-style agent: online, with the engines and capabilities given (its hello). */
export async function helloAgent(svc: TestService, projectId: string, name: string, capabilities: Record<string, string[]>): Promise<string> {
  const id = (await mintAgent(svc.ctx, projectId, name, TEST_ACTOR)).agent.id;
  const row = (await findAgent(svc.ctx.db, id))!;
  await recordHello(svc.ctx.db, row, {
    protocolVersion: '2',
    framework: 'bare',
    engines: Object.keys(capabilities),
    schedulers: [],
    capabilities,
    runtimeFeatures: null,
    metadata: {},
    worker: null,
  });
  return id;
}

/** A long-poll-style agent: online, no inventory reported. */
export async function pollingAgent(svc: TestService, projectId: string, name: string): Promise<string> {
  const id = (await mintAgent(svc.ctx, projectId, name, TEST_ACTOR)).agent.id;
  await touchAgentLiveness(svc.ctx.db, id);
  return id;
}

/** Workers and queue depths as a z4j-celery heartbeat reports them. */
export async function reportInventory(svc: TestService, projectId: string, workers: Record<string, number>, depths: Record<string, number>, engine = 'celery'): Promise<void> {
  const details = Object.fromEntries(Object.entries(workers).map(([name, concurrency]) => [name, { stats: { pid: 1, pool: { 'max-concurrency': concurrency } }, active_queues: [{ name: 'celery' }] }]));
  await svc.ctx.db.tx((tx) =>
    projectAdapterHealth(tx, projectId, { [`${engine}.worker_details`]: JSON.stringify(details), [`${engine}.queue_depths`]: JSON.stringify(depths) }, nowIso()),
  );
}

/** Stores tasks through the ingest path: one task.failed (or the `kind` given) event each, `ageDays` ago. */
export async function storeTasks(
  svc: TestService,
  projectId: string,
  agentId: string,
  n: number,
  opts: { kind?: string; ageDays?: number; name?: string; engine?: string; prefix?: string; extraEvents?: number; exception?: string } = {},
): Promise<string[]> {
  const at = nowMicros() - (opts.ageDays ?? 0) * 86_400_000_000;
  const ids: string[] = [];
  const records: EventRecord[] = [];
  for (let i = 0; i < n; i++) {
    const taskId = `${opts.prefix ?? 't'}-${i}-${crypto.randomUUID().slice(0, 8)}`;
    ids.push(taskId);
    const base = { engine: opts.engine ?? 'celery', taskId, data: { task_name: opts.name ?? 'app.tasks.fail', queue: 'celery', worker: 'celery@w1', exception: opts.exception ?? 'ValueError: boom' } };
    for (let k = 0; k < (opts.extraEvents ?? 0); k++) {
      records.push({ ...base, id: crypto.randomUUID(), kind: 'task.received', occurredAt: isoMicros(at - 1000 - k), occurredMicros: at - 1000 - k });
    }
    records.push({ ...base, id: crypto.randomUUID(), kind: opts.kind ?? 'task.failed', occurredAt: isoMicros(at), occurredMicros: at });
  }
  for (let i = 0; i < records.length; i += 1000) {
    // Stored as if at that time: the task row's created_at and the events' received_at say so.
    await svc.ctx.db.tx((tx) => storeEvents(tx, { projectId, agentId, frameId: null }, records.slice(i, i + 1000), isoMicros(at)));
  }
  return ids;
}

/** The default project ready for operator actions: a WebSocket celery agent, a long-poll agent,
 * workers and queue depths, and failed tasks to retry (the role matrix's fixture). */
export async function operatorFixture(svc: TestService): Promise<{ projectId: string; wsAgent: string; lpAgent: string }> {
  const projectId = await projectIdOf(svc);
  const wsAgent = await helloAgent(svc, projectId, 'matrix-ws', { celery: CELERY_CAPABILITIES });
  const lpAgent = await pollingAgent(svc, projectId, 'matrix-lp');
  await reportInventory(svc, projectId, { 'celery@matrix': 2 }, { parked: 3 });
  await storeTasks(svc, projectId, lpAgent, 3, { name: 'app.tasks.matrix' });
  return { projectId, wsAgent, lpAgent };
}
