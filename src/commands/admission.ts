// Which agent an operator action goes to, and whether it may go there at all:
// checked against what the agent advertised in its WebSocket hello (engines,
// per-engine capability tokens, the retry-by-reference contract) before a
// command row is written, so the user sees a refusal at once instead of a
// command that times out. Long-poll agents report no inventory: an action is
// admitted for them only when the request names the agent (agent_id), and the
// agent itself refuses what its adapter cannot do (spec, long-poll transport (c)).
import { findAgent, onlineAgentsOfProject, type AgentRow } from '../agents/service.ts';
import type { Executor } from '../db/connect.ts';
import { ApiError, conflict, notFound } from '../http/errors.ts';

/** The capability token an agent adapter advertises for each action svc issues. */
export const CAPABILITY_OF: Readonly<Record<string, string>> = {
  // Through the generic POST /commands only (an adapter that cannot submit by name must refuse it here).
  submit_task: 'submit_task',
  retry_task: 'retry_task',
  cancel_task: 'cancel_task',
  bulk_retry: 'bulk_retry',
  purge_queue: 'purge_queue',
  restart_worker: 'restart_worker',
  pool_grow: 'pool_grow',
  pool_shrink: 'pool_shrink',
  add_consumer: 'add_consumer',
  cancel_consumer: 'cancel_consumer',
  rate_limit: 'rate_limit',
  requeue_dead_letter: 'requeue_dead_letter',
  'dlq.list': 'list_dead_letters',
};

/** z4j agents attest a safe retry by reference with this token (the WebSocket form of X-SVC-Retry-Contracts). */
export const RETRY_CONTRACT_TOKEN = 'retry_by_reference_v1';
const RETRY_FAMILY = new Set(['retry_task', 'bulk_retry']);
/** z4j restarts a worker without native support by exiting under a supervisor (agent-protocol 7.1); a
 * retry with both argument halves it submits by name (see refusalOf). */
const POLYFILLED = new Set(['restart_worker']);

/** Refusals the issue routes answer (409 in the error envelope), by code. */
export const ADMISSION_ERRORS = ['no_agent', 'engine_not_advertised', 'capability_not_advertised', 'retry_contract_unsatisfied'] as const;

export interface AdmissionRequest {
  projectId: string;
  action: string;
  /** The engine the action needs; null when the agent may pick its single engine. */
  engine: string | null;
  /** The agent named by the request, if any. */
  agentId?: string | null;
  /** A retry carrying both argument halves replays nothing by reference (no contract needed). */
  carriesArguments?: boolean;
  /** Without agent_id, fall back to an online agent that reported no inventory (dead-letter listing). */
  unreportedFallback?: boolean;
}

/** An agent reported its inventory (a WebSocket hello); long-poll agents never do. */
export const hasInventory = (agent: AgentRow): boolean => agent.engine_adapters.length > 0;

/** Why `agent` cannot take the action, or null when it can (or cannot tell: no inventory). */
export function refusalOf(agent: AgentRow, req: Pick<AdmissionRequest, 'action' | 'engine' | 'carriesArguments'>): ApiError | null {
  if (!hasInventory(agent)) return null;
  const engines = agent.engine_adapters;
  const engine = req.engine ?? (engines.length === 1 ? engines[0]! : null);
  const details = { agent_id: agent.id, action: req.action, engine };
  if (engine === null) return new ApiError(422, 'validation_failed', 'engine is required: the agent runs more than one engine', { fields: [{ path: '/engine', message: 'is required' }] });
  if (!engines.includes(engine)) return conflict(`agent ${agent.name} does not run the ${engine} engine (it advertises ${engines.join(', ')})`, details, 'engine_not_advertised');
  const tokens = agent.capabilities[engine] ?? [];
  const capability = CAPABILITY_OF[req.action];
  // A retry carrying both argument halves is lowered by z4j agents to the adapter's submit_task.
  const lowered = req.action === 'retry_task' && req.carriesArguments === true && tokens.includes('submit_task');
  if (capability && !tokens.includes(capability) && !POLYFILLED.has(req.action) && !lowered) {
    return conflict(`the ${engine} adapter of agent ${agent.name} does not support ${req.action} (capability ${capability} is not advertised)`, details, 'capability_not_advertised');
  }
  if (RETRY_FAMILY.has(req.action) && !req.carriesArguments && !tokens.includes(RETRY_CONTRACT_TOKEN)) {
    return conflict(
      `agent ${agent.name} does not attest the ${engine} retry contract (${RETRY_CONTRACT_TOKEN}); a retry by reference would never be delivered to it`,
      details,
      'retry_contract_unsatisfied',
    );
  }
  return null;
}

/** The live agent of the project the action goes to, or the refusal the user sees. */
export async function admit(ex: Executor, req: AdmissionRequest): Promise<AgentRow> {
  if (req.agentId) {
    const agent = await findAgent(ex, req.agentId);
    if (!agent || agent.project_id !== req.projectId || agent.revoked_at !== null) throw notFound('agent');
    const refusal = refusalOf(agent, req);
    if (refusal) throw refusal;
    return agent;
  }
  const online = await onlineAgentsOfProject(ex, req.projectId);
  const reported = online.filter(hasInventory);
  const fit = reported.find((a) => refusalOf(a, req) === null && (req.engine === null ? a.engine_adapters.length === 1 : true));
  if (fit) return fit;
  if (req.unreportedFallback) {
    const fallback = online.find((a) => !hasInventory(a));
    if (fallback) return fallback;
  }
  // The closest refusal: an agent running the engine that lacks the capability or contract says more than "none".
  const running = req.engine ? reported.find((a) => a.engine_adapters.includes(req.engine!)) : undefined;
  if (running) throw refusalOf(running, req)!;
  const what = req.engine ? `the ${req.engine} engine` : 'a single engine';
  throw conflict(`no online agent advertises ${what}; pass agent_id to choose one (agents on the long-poll transport report no inventory)`, { engine: req.engine, action: req.action }, 'no_agent');
}
