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
  /** The command ends `failed` with an error matching this (the agent's answer, over long-poll). */
  error: RegExp;
  /** svc's refusal of a WebSocket agent (409), from what it advertised; default capability_not_advertised. */
  code?: string;
}

export interface CancelSupport {
  /** What the cancel command's result holds (a subset), where the test checks it. */
  result?: Record<string, unknown>;
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

/** A bulk retry (POST /bulk-jobs, by reference) of `count` failed tasks, and what comes of it. */
export type BulkRetry =
  /** Each item's retry re-runs its task: as a new task (`new`, the result's new_task_id) or the
   * failed job itself, requeued under its own id (`same`). */
  | { count: number; reruns: 'new' | 'same' }
  /** Admitted (the agent attests the retry contract), and the agent fails each item with this error. */
  | { count: number; itemsFail: RegExp; why: string }
  /** The adapter has neither retry_task nor the retry contract: svc refuses the job at once for a
   * WebSocket agent; a long-poll one is sent nothing (its polls attest no contract for the engine), so
   * the item's retry waits, undelivered, until commands time out. */
  | { undeliverable: string };

/** An engine's operator-action cells (operator-actions.test.ts). Actions the adapter does not
 * advertise (Engine.capabilities) are tested as refused there, from one table. */
export interface OperatorActions {
  /** The worker's argv for these cells; default: the engine's worker. */
  worker?(bin: string, cell: { transport: Transport; name: string }): string[];
  /** The app's client script (fail <n> <marker>, park <n>, llen <queue>; see app/celery/ops_client.py).
   * Without one, failed tasks are enqueued with enqueue.py. */
  client?: string;
  bulkRetry: BulkRetry;
  /** A queue the cell's worker does not consume, filled with `park` and purged in the test. */
  purge?: {
    queue: string;
    /** Why the agent reports no depth for that queue, if it does not: svc then cannot confirm a depth,
     * and the purge goes with force after the confirm token (the agent skips its own depth check). */
    noDepth?: string;
  };
  /** Celery's remote control, observed with celery inspect: pool resize, restart, rate limit, and a
   * queue the worker is told to consume, then to stop consuming. */
  inspect?: { extraQueue: string };
  /** The dead-letter store: failed tasks are listed (dlq.list); with `requeue`, one is requeued and runs again. */
  deadLetters?: {
    queue: string;
    requeue: boolean;
    /** What an entry's task_id is: the task's own id, or the broker's id of the stored message (not
     * one svc knows the task by). */
    ids: 'task' | 'broker';
  };
  /** Why svc knows no worker of the engine (its agent reports none), if so: actions addressed to a
   * worker (pool resize, restart, consumers) are refused with 409 unknown_worker, whatever the adapter
   * advertises. */
  noWorkers?: string;
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
  /** Every capability token a WebSocket agent of this engine advertises. */
  capabilities: string[];
  actions: OperatorActions;
}

export const isRefusal = (x: object): x is Refusal => 'why' in x;
