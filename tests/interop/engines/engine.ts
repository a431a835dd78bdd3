// What the interop suite needs to know of one engine: how its worker starts
// with the z4j agent, how tasks are enqueued, and what svc should then show.
// Each engine's app lives in app/<app>/ with an `enqueue.py` that takes a kind
// (add, fail, flaky, sleepy) and its arguments and prints {"task_id": ...} as
// its last line; those app modules are also the examples of docs/agents.md.
import type { Api, Proc, Transport, World } from '../harness.ts';

/** One cell of the matrix: an engine's worker, its agent and transport, up and online. */
export interface Cell {
  world: World;
  api: Api;
  engine: Engine;
  transport: Transport;
  agentId: string;
  proc: Proc;
  /** The app directory (cwd of the worker and of enqueue.py). */
  appDir: string;
  /** The environment enqueue.py and the worker share (INTEROP_BROKER_URL and the engine's own). */
  env: Record<string, string>;
  /** Enqueues a task through the engine's own client; returns its id. */
  enqueue(kind: 'add' | 'fail' | 'flaky' | 'sleepy' | string, ...args: string[]): Promise<string>;
}

/** A command the adapter does not support: what the user sees instead. */
export interface Refusal {
  /** Why the engine's adapter cannot do it (written for the reader of the test). */
  why: string;
  /** The command ends `failed` with an error matching this (the agent's answer). */
  error: RegExp;
}

export interface CancelSupport {
  /** Arguments of the `sleepy` task to cancel: it must still be cancellable when the command arrives. */
  sleepy: string[];
  /** The state the task shows before the cancel (it has reached svc). */
  before: string;
  /** The state svc records once the engine reports the cancel. Null when the adapter reports the
   * cancel only in the command's result (the engine sends no event for it). */
  after: string | null;
}

export interface RetrySupport {
  /** Extra body fields of POST /commands/retry-task (engines without a native retry need the
   * arguments given again: svc never sends stored arguments). */
  body?: (args: unknown[]) => Record<string, unknown>;
  /** The id of the re-run task, from the command's result. */
  newTaskId(result: Record<string, unknown>): string;
  /** What svc shows of the re-run besides its state and name; default: its arguments. Adapters
   * that never report arguments show them otherwise (the exception text names them). */
  rerun?: (args: unknown[]) => Record<string, unknown>;
}

/** An engine's operator-action cells (operator-actions.test.ts): a worker whose pool can be resized and
 * restarted, a client script to ask the engine and its broker what happened, and the refusals the user
 * sees for the actions its adapter does not support. */
export interface OperatorActions {
  /** The worker's argv for these cells; `bin` is the venv's bin directory. */
  worker(bin: string, cell: { transport: Transport; name: string }): string[];
  /** The app's client script (fail, park, llen, inspect; see app/celery/ops_client.py). */
  client: string;
  /** A queue the cell's worker does not consume: purged in the test. */
  parkedQueue: string;
  /** Why the agent reports no depth for that queue, if it does not: svc then cannot confirm a depth, and the
   * purge goes with force after the confirm token (the agent skips its own depth check). */
  noDepth?: string;
  /** A queue the worker is told to consume, then to stop consuming. */
  extraQueue: string;
  /** Actions the adapter does not advertise: the agent's refusal (long-poll; svc refuses them at once for a
   * WebSocket agent, from what it advertised). Keyed by the route under /commands and its body. */
  refused: { route: string; body: Record<string, unknown>; refusal: Refusal }[];
}

export interface Engine {
  /** svc's name of the engine (task URLs, engine_adapters). */
  name: string;
  /** Folder under app/. */
  app: string;
  /** The venv (requirements/<venv>.txt) its worker runs in; default: `app`. */
  venv?: string;
  /** The worker's argv; `bin` is the venv's bin directory. */
  worker(bin: string, cell: { transport: Transport; name: string }): string[];
  /** Extra environment for the worker and enqueue.py. */
  env?: Record<string, string>;
  /** Task names as svc shows them. */
  names: { add: string; fail: string; flaky: string };
  /** What svc shows of the finished `add 2 3` beyond its state and name. */
  added: Record<string, unknown>;
  /** The exception text of `fail` matches this; null where the adapter sends no exception text. */
  failure: RegExp | null;
  /** The flaky task's retries: the events svc records for them. */
  retriedEvents: string[];
  cancel: CancelSupport | Refusal;
  retry: RetrySupport | Refusal;
  /** Cells that cannot pass for a reason outside svc, with the reason. */
  skip?: Partial<Record<Transport, string>>;
  /** Capabilities a WebSocket agent of this engine advertises (a subset is enough). */
  capabilities: string[];
  /** Operator-action cells; engines without them are listed as not described there. */
  actions?: OperatorActions;
}

export const isRefusal = (x: object): x is Refusal => 'why' in x;
