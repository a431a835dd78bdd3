// The answers of the statistics routes: project stats, trends, the home
// summary across projects, failure groups and a group's failed tasks.
import { Type, type Static } from '@sinclair/typebox';
import { Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';

export const WINDOWS = { '1h': 3600, '6h': 21_600, '24h': 86_400, '7d': 604_800, '30d': 2_592_000 } as const;
export type WindowName = keyof typeof WINDOWS;
export const BUCKETS = { '1m': 60, '5m': 300, '15m': 900, '1h': 3600, '1d': 86_400 } as const;
export type BucketName = keyof typeof BUCKETS;

const literals = (names: readonly string[], description: string) => Type.Union(names.map((n) => Type.Literal(n)), { description });
export const WindowParam = literals(Object.keys(WINDOWS), 'how far back: 1h, 6h, 24h, 7d or 30d (default 24h)');
export const BucketParam = literals(['auto', ...Object.keys(BUCKETS)], 'width of a point: auto (1m for 1h, 5m for 6h, 15m for 24h, 1h for 7d, 1d for 30d) or 1m, 5m, 15m, 1h, 1d');

/** Said by every answer over a window: whether the window starts before the statistics kept (retention). */
const Retention = {
  partial: Type.Boolean({
    description: 'the window starts before kept_since: statistics that old are pruned (SVC_STATS_RETENTION_DAYS), so the figures cover only the part from kept_since',
  }),
  kept_since: Type.String({
    format: 'date-time',
    description: 'the oldest time the statistics this answer reads are kept from (hour rows: SVC_STATS_RETENTION_DAYS; minute rows: SVC_STATS_MINUTE_RETENTION_HOURS)',
  }),
};

const Rate = Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'failed / (succeeded + failed); null when nothing finished' }));
const Ms = Nullable(Type.Number({ minimum: 0 }));
const Trend = Nullable(Type.Union([Type.Literal('rising'), Type.Literal('steady'), Type.Literal('falling')]));
export const HealthSchema = Type.Union([Type.Literal('offline'), Type.Literal('degraded'), Type.Literal('idle'), Type.Literal('healthy')]);

export const StateCounts = Answer(
  {
    received: Type.Integer(),
    started: Type.Integer(),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    retried: Type.Integer(),
    revoked: Type.Integer(),
    rejected: Type.Integer(),
  },
  'StatsStateCounts',
);

export const AttentionItem = Answer(
  {
    kind: Type.Union(
      ['failing_task', 'high_failure_rate', 'agent_offline', 'agent_never_connected', 'stuck_commands', 'background_job_failing'].map((k) => Type.Literal(k)),
      { description: 'what needs attention (docs/tasks-stats.md)' },
    ),
    severity: Type.Union([Type.Literal('critical'), Type.Literal('warning')]),
    message: Type.String(),
    project_id: Nullable(Uuid),
    project_slug: Nullable(Type.String()),
    project_name: Nullable(Type.String()),
    task_name: Nullable(Type.String()),
    agent_id: Nullable(Uuid),
    job: Nullable(Type.String()),
    count: Nullable(Type.Integer()),
    failure_rate: Rate,
    trend: Trend,
  },
  'AttentionItem',
);
export type AttentionItem = Static<typeof AttentionItem>;

export const FailingTask = Answer(
  {
    task_name: Type.String(),
    failed: Type.Integer(),
    finished: Type.Integer({ description: 'succeeded + failed' }),
    failure_rate: Rate,
    first_half_failure_rate: Rate,
    second_half_failure_rate: Rate,
    trend: Trend,
  },
  'FailingTask',
);

export const ProjectStats = Answer(
  {
    project: Answer({ id: Uuid, slug: Type.String(), name: Type.String() }),
    window: WindowParam,
    since: Timestamp,
    until: Timestamp,
    ...Retention,
    counts: StateCounts,
    finished: Type.Integer({ description: 'succeeded + failed + revoked + rejected' }),
    failure_rate: Rate,
    throughput_per_minute: Type.Number({ description: 'finished tasks per minute over the window' }),
    runtime_ms: Answer({ count: Type.Integer(), mean: Ms, p50: Ms, p95: Ms, max: Ms }, 'RuntimeSummary'),
    agents: Answer({ online: Type.Integer(), offline: Type.Integer(), unknown: Type.Integer(), total: Type.Integer() }),
    workers: Answer({ online: Type.Integer(), total: Type.Integer() }),
    commands: Answer(
      {
        pending: Type.Integer(),
        dispatched: Type.Integer(),
        stuck: Type.Integer({ description: 'pending or dispatched past their timeout_at' }),
        completed: Type.Integer({ description: 'issued in the window' }),
        failed: Type.Integer({ description: 'issued in the window' }),
        timeout: Type.Integer({ description: 'issued in the window' }),
      },
      'CommandCounts',
    ),
    failing_tasks: Type.Array(FailingTask),
    last_activity_at: Nullable(Timestamp),
    health: HealthSchema,
    attention: Type.Array(AttentionItem),
  },
  'ProjectStats',
);
export type ProjectStats = Static<typeof ProjectStats>;

export const TrendPoint = Type.Composite(
  [
    Type.Object({ t: Timestamp }),
    StateCounts,
    Type.Object({ finished: Type.Integer(), throughput_per_minute: Type.Number(), failure_rate: Rate, runtime_mean_ms: Ms, runtime_p50_ms: Ms, runtime_p95_ms: Ms }),
  ],
  { additionalProperties: false, $id: 'TrendPoint' },
);

export const Trends = Answer(
  {
    window: WindowParam,
    bucket: Type.String(),
    bucket_seconds: Type.Integer(),
    since: Timestamp,
    until: Timestamp,
    ...Retention,
    task_name: Nullable(Type.String()),
    points: Type.Array(TrendPoint),
  },
  'Trends',
);
export type Trends = Static<typeof Trends>;

export const HomeProject = Answer(
  {
    id: Uuid,
    slug: Type.String(),
    name: Type.String(),
    role: Type.String(),
    health: HealthSchema,
    finished: Type.Integer(),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    failure_rate: Rate,
    throughput_per_minute: Type.Number(),
    runtime_p95_ms: Ms,
    agents_online: Type.Integer(),
    agents_total: Type.Integer(),
    workers_online: Type.Integer(),
    workers_total: Type.Integer(),
    stuck_commands: Type.Integer(),
    last_activity_at: Nullable(Timestamp),
    attention_critical: Type.Integer(),
    attention_warning: Type.Integer(),
  },
  'HomeProject',
);

export const HomeSummary = Answer(
  {
    window: WindowParam,
    since: Timestamp,
    until: Timestamp,
    ...Retention,
    attention: Type.Array(AttentionItem),
    totals: Answer({
      projects: Type.Integer(),
      finished: Type.Integer(),
      succeeded: Type.Integer(),
      failed: Type.Integer(),
      failure_rate: Rate,
      throughput_per_minute: Type.Number(),
      agents_online: Type.Integer(),
      agents_total: Type.Integer(),
      workers_online: Type.Integer(),
      workers_total: Type.Integer(),
      stuck_commands: Type.Integer(),
    }),
    projects: Type.Array(HomeProject),
  },
  'HomeSummary',
);
export type HomeSummary = Static<typeof HomeSummary>;

export const GroupKey = Type.String({ pattern: '^[0-9a-f]{16}$', description: 'failure group key: 16 hex digits (docs/tasks-stats.md)' });

export const FailureGroup = Answer(
  {
    group_key: GroupKey,
    exception_type: Type.String(),
    message: Type.String({ description: 'the normalised message' }),
    sample_message: Type.String({ description: 'one message as reported' }),
    failures: Type.Integer({ description: 'in the window' }),
    failures_total: Type.Integer({ description: 'since first seen (within retention)' }),
    first_seen: Timestamp,
    last_seen: Timestamp,
    task_names: Type.Array(Answer({ task_name: Type.String(), failures: Type.Integer() })),
    series: Type.Array(Type.Integer(), { description: 'failures per bucket, oldest first (a sparkline)' }),
  },
  'FailureGroup',
);

export const FailureGroups = Answer(
  {
    window: WindowParam,
    bucket: Type.String(),
    bucket_seconds: Type.Integer(),
    since: Timestamp,
    until: Timestamp,
    ...Retention,
    total_failures: Type.Integer(),
    groups: Type.Array(FailureGroup),
  },
  'FailureGroups',
);
export type FailureGroups = Static<typeof FailureGroups>;

export const FailedTask = Answer(
  {
    engine: Type.String(),
    task_id: Type.String(),
    task_name: Type.String(),
    failed_at: Timestamp,
    task_ref: Nullable(Uuid),
    state: Nullable(Type.String({ description: 'the task state now (null once the task row was pruned)' })),
    queue: Nullable(Type.String()),
    worker_name: Nullable(Type.String()),
    exception: Nullable(Type.String()),
    retry_count: Nullable(Type.Integer()),
    runtime_ms: Nullable(Type.Number()),
  },
  'FailedTask',
);

export const FailedTaskPage = Answer(
  {
    group: Answer({ group_key: GroupKey, exception_type: Type.String(), message: Type.String() }),
    items: Type.Array(FailedTask),
    next_cursor: Nullable(Type.String()),
  },
  'FailedTaskPage',
);
export type FailedTaskPage = Static<typeof FailedTaskPage>;
