// The answers of /api/v1/projects/{slug}/tasks, /workers and /queues.
import { Type, type Static } from '@sinclair/typebox';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';

export const TASK_STATES = ['pending', 'received', 'started', 'success', 'failure', 'retry', 'revoked', 'rejected', 'unknown'] as const;
export const TaskStateSchema = Type.Union(TASK_STATES.map((s) => Type.Literal(s)));

export const TaskPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    engine: Type.String(),
    task_id: Type.String(),
    name: Nullable(Type.String()),
    queue: Nullable(Type.String()),
    state: TaskStateSchema,
    priority: Nullable(Type.String()),
    args: Type.Unknown({ description: 'as the agent reported them (after its redaction), or null' }),
    kwargs: Type.Unknown(),
    result: Type.Unknown(),
    exception: Nullable(Type.String()),
    traceback: Nullable(Type.String()),
    retry_count: Type.Integer(),
    eta: Nullable(Type.String()),
    received_at: Nullable(Timestamp),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    runtime_ms: Nullable(Type.Number()),
    worker_name: Nullable(Type.String()),
    parent_task_id: Nullable(Type.String()),
    root_task_id: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'TaskPublic',
);
export type TaskPublic = Static<typeof TaskPublic>;

export const TaskPage = Answer({ items: Type.Array(TaskPublic), next_cursor: Nullable(Type.String()) }, 'TaskPage');
export type TaskPage = Static<typeof TaskPage>;

export const TaskEvent = Answer({ id: Uuid, kind: Type.String(), occurred_at: Timestamp, agent_id: Uuid, payload: AnyObject }, 'TaskEvent');
export const TaskDetail = Type.Composite([TaskPublic, Type.Object({ events: Type.Array(TaskEvent) })], { additionalProperties: false, $id: 'TaskDetail' });
export type TaskDetail = Static<typeof TaskDetail>;

export const WorkerPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    engine: Type.String(),
    name: Type.String(),
    hostname: Nullable(Type.String()),
    pid: Nullable(Type.Integer()),
    concurrency: Nullable(Type.Integer()),
    queues: Type.Array(Type.String()),
    state: Type.Union([Type.Literal('online'), Type.Literal('offline'), Type.Literal('draining'), Type.Literal('unknown')]),
    last_heartbeat: Nullable(Timestamp),
    load_average: Nullable(Type.Array(Type.Number())),
    active_tasks: Nullable(Type.Integer()),
    metadata: AnyObject,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'WorkerPublic',
);

export const QueuePublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    engine: Type.String(),
    name: Type.String(),
    broker_type: Nullable(Type.String()),
    last_seen_at: Timestamp,
    pending_count: Nullable(Type.Integer()),
    consumer_count: Nullable(Type.Integer()),
    metadata: AnyObject,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'QueuePublic',
);
