// The task events the ingest benches send, as a worker's agent reports them.
// Insert-only (the default): each event a task.succeeded of a new task with a
// random UUID id. Lifecycle: each task reported three times, as a Celery worker's
// agent does: task.received (name, queue, arguments), task.started (worker) in
// a later batch, task.succeeded (result, runtime) in a later one still; in the
// steady state a batch holds a third of each, so two events in three update a
// stored task (the insert-only stream never does). A batch is what the bench
// stores at once: a transaction (ingest-store.ts) or an upload (agent-ingest.ts).
import type { JsonInput } from '../../src/transport/json-convert.ts';
import { taskEvent } from '../../tests/helpers/test-agent.ts';

export class TaskEvents {
  private n = 0;
  /** Tasks received (or started) in earlier batches, waiting for their next event. */
  private readonly toStart: string[] = [];
  private readonly toFinish: string[] = [];
  private startable = 0;
  private finishable = 0;

  constructor(private readonly lifecycle: boolean) {}

  /** A new batch begins: only tasks of earlier batches take their next step in it. */
  nextBatch(): void {
    this.startable = this.toStart.length;
    this.finishable = this.toFinish.length;
  }

  next(): Record<string, JsonInput> {
    const n = ++this.n;
    if (!this.lifecycle) {
      return taskEvent({ task_id: crypto.randomUUID(), kind: 'task.succeeded', data: { task_name: 'app.tasks.add', queue: 'default', worker: 'w1@host', result: 3, runtime_ms: 12 } });
    }
    const step = n % 3;
    if (step === 2 && this.finishable > 0) {
      this.finishable--;
      return taskEvent({ task_id: this.toFinish.shift()!, kind: 'task.succeeded', data: { task_name: 'app.tasks.add', result: { total: n % 1000, items: [n % 7, n % 11] }, runtime_ms: n % 5000 } });
    }
    if (step === 1 && this.startable > 0) {
      this.startable--;
      const taskId = this.toStart.shift()!;
      this.toFinish.push(taskId);
      return taskEvent({ task_id: taskId, kind: 'task.started', data: { task_name: 'app.tasks.add', worker: `w${n % 4}@host` } });
    }
    const taskId = crypto.randomUUID();
    this.toStart.push(taskId);
    return taskEvent({ task_id: taskId, kind: 'task.received', data: { task_name: 'app.tasks.add', queue: 'default', args: [n % 100, 'user-' + (n % 977)], kwargs: { retry: false } } });
  }
}
