import { col, defineTable } from '../db/define.ts';

export type AgentState = 'unknown' | 'online' | 'offline';
export type AgentTransportKind = 'ws' | 'longpoll';

/** Host, versions and worker details from the last WebSocket hello. */
export interface AgentMetadata {
  host_name?: string | null;
  agent_version?: string | null;
  worker_role?: string | null;
}

export const agents = defineTable('agents', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  name: col.text('name').notNull(),
  token_hash: col.text('token_hash').notNull(),
  state: col.text('state').$type<AgentState>().notNull(),
  transport: col.text('transport').$type<AgentTransportKind>(),
  protocol_version: col.text('protocol_version').notNull(),
  framework_adapter: col.text('framework_adapter').notNull(),
  engine_adapters: col.json<string[]>('engine_adapters').notNull(),
  scheduler_adapters: col.json<string[]>('scheduler_adapters').notNull(),
  capabilities: col.json<Record<string, string[]>>('capabilities').notNull(),
  runtime_features: col.json<string[]>('runtime_features').notNull(),
  metadata: col.json<AgentMetadata>('metadata').notNull(),
  last_seen_at: col.ts('last_seen_at'),
  last_connect_at: col.ts('last_connect_at'),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
  revoked_at: col.ts('revoked_at'),
});

/** One row per worker process of an agent, from WebSocket hellos (long-poll agents have none). */
export const agentWorkers = defineTable('agent_workers', {
  id: col.text('id').primaryKey(),
  agent_id: col.text('agent_id').notNull(),
  project_id: col.text('project_id').notNull(),
  worker_id: col.text('worker_id').notNull(),
  role: col.text('role'),
  framework: col.text('framework').notNull(),
  pid: col.int('pid'),
  started_at: col.ts('started_at'),
  state: col.text('state').$type<'online' | 'offline'>().notNull(),
  last_seen_at: col.ts('last_seen_at').notNull(),
  last_connect_at: col.ts('last_connect_at').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

/** Stored agent_status frames: the agent health history. */
export const agentHealthSamples = defineTable('agent_health_samples', {
  id: col.text('id').primaryKey(),
  project_id: col.text('project_id').notNull(),
  agent_id: col.text('agent_id').notNull(),
  frame_id: col.text('frame_id').notNull(),
  worker_id: col.text('worker_id').notNull(),
  captured_at: col.ts('captured_at').notNull(),
  received_at: col.ts('received_at').notNull(),
  telemetry_loss: col.json<Record<string, unknown>>('telemetry_loss'),
  payload: col.json<Record<string, unknown>>('payload').notNull(),
});
