// The answers of /api/v1/projects/{slug}/tasks, /workers and /queues.
import { Type, type Static } from '@sinclair/typebox';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';

export const TASK_STATES = ['pending', 'received', 'started', 'success', 'failure', 'retry', 'revoked', 'rejected', 'unknown'] as const;
export const TaskStateSchema = Type.Union(TASK_STATES.map((s) => Type.Literal(s)));

const PRIORITY = '(critical|high|normal|low)';
/** The task list's priority filter (GET /tasks, its exports, bulk filters): tasks with one of these priorities. */
export const PriorityFilterSchema = Type.String({ pattern: `^${PRIORITY}(,${PRIORITY}){0,3}$`, description: 'comma-separated priorities: critical, high, normal, low' });

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

/** A field's search matches: plain text (never HTML) and [start, end) offsets into it in UTF-16
 * code units; a dashboard wraps those ranges in <mark> as text nodes. */
export const Highlight = Answer(
  {
    field: Type.Union(['task_id', 'name', 'exception', 'args', 'kwargs', 'result'].map((f) => Type.Literal(f))),
    text: Type.String({ description: 'the field (args, kwargs and result as JSON), or a window of it with … where cut' }),
    ranges: Type.Array(Type.Array(Type.Integer({ minimum: 0 }), { minItems: 2, maxItems: 2 }), { description: '[start, end) offsets into text' }),
  },
  'Highlight',
);

/** A row of the list: the task, and with `q` its matches field by field. */
export const TaskListItem = Type.Composite([TaskPublic, Type.Object({ highlights: Type.Optional(Type.Array(Highlight)) })], {
  additionalProperties: false,
  $id: 'TaskListItem',
});
export type TaskListItem = Static<typeof TaskListItem>;

export const TaskPage = Answer(
  {
    items: Type.Array(TaskListItem),
    next_cursor: Nullable(Type.String()),
    scan_limited: Type.Boolean({
      description:
        'true when the page read its budget of tasks (2,000, in the sort\'s order) before it held `limit` matches of a filter its index does not serve (a name, queue, worker, engine, priority, or a state in a sort other than created_at or state): it may hold fewer rows, even none, and next_cursor continues from the last task read. With q, only on PostgreSQL, for a phrase whose words are in most tasks of the filter and which no task near the start holds (see docs/tasks.md); false otherwise',
    }),
    search_truncated: Type.Boolean({
      description:
        'true when the search left matches out of the sort: on SQLite a search sorted by another column than created_at sorts the project\'s 5,000 most recent matches found among the 20,000 most recent of all projects; narrow q or sort by created_at for the rest. Always false otherwise',
    }),
  },
  'TaskPage',
);
export type TaskPage = Static<typeof TaskPage>;
export type TaskListPage = TaskPage;

export const TaskEvent = Answer({ id: Uuid, kind: Type.String(), occurred_at: Timestamp, agent_id: Uuid, payload: AnyObject }, 'TaskEvent');
export const TaskDetail = Type.Composite(
  [
    TaskPublic,
    Type.Object({
      events: Type.Array(TaskEvent, { description: 'the oldest events, at most 200' }),
      events_truncated: Type.Boolean({ description: 'the task has more events than `events` holds: GET .../events pages through all' }),
    }),
  ],
  { additionalProperties: false, $id: 'TaskDetail' },
);
export type TaskDetail = Static<typeof TaskDetail>;

export const TaskEventPage = Answer({ items: Type.Array(TaskEvent), next_cursor: Nullable(Type.String()) }, 'TaskEventPage');
export type TaskEventPage = Static<typeof TaskEventPage>;

export const TaskTreeNode = Answer(
  {
    task_id: Type.String(),
    name: Nullable(Type.String()),
    state: TaskStateSchema,
    parent_task_id: Nullable(Type.String()),
    root_task_id: Nullable(Type.String()),
    depth: Type.Integer({ minimum: 0, description: '0 for the root; children of a parent svc never stored count from the root' }),
    detached: Type.Boolean({
      description:
        'true when its parent links do not lead to the root as stored (a parent svc never stored or no longer keeps, a loop, or more levels than max_depth above the task asked for): the subtree hangs under the root, its top at depth 1',
    }),
    worker_name: Nullable(Type.String()),
    received_at: Nullable(Timestamp),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    runtime_ms: Nullable(Type.Number()),
  },
  'TaskTreeNode',
);

export const TaskTree = Answer(
  {
    engine: Type.String(),
    root_task_id: Type.String({ description: 'the root (it is among the nodes only if svc stored it)' }),
    node_count: Type.Integer({ minimum: 0 }),
    truncated: Type.Boolean({ description: 'true when the limits left tasks of the tree out' }),
    limits: Answer({ max_depth: Type.Integer(), max_width: Type.Integer(), max_nodes: Type.Integer() }),
    nodes: Type.Array(TaskTreeNode, {
      description: 'breadth first from the root, then a detached subtree that holds the task asked for; the task asked for is always among them (with its parents up to the tree when the limits cut it)',
    }),
  },
  'TaskTree',
);
export type TaskTree = Static<typeof TaskTree>;

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

export const WorkerDetail = Type.Composite(
  [
    WorkerPublic,
    Type.Object({
      queue_details: Type.Array(QueuePublic, { description: 'the queues it consumes that agents reported, with their depth where reported' }),
      task_counts: Answer({
        window_seconds: Type.Integer(),
        since: Timestamp,
        by_state: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
        total: Type.Integer({ minimum: 0 }),
        complete: Type.Boolean({ description: 'false when the window held more of the project\'s tasks than one answer reads (the counts are of the newest)' }),
      }),
    }),
  ],
  { additionalProperties: false, $id: 'WorkerDetail' },
);
export type WorkerDetail = Static<typeof WorkerDetail>;
