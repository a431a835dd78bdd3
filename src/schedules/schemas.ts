// The shapes of the schedule routes: answers (as the OpenAPI document and the
// dashboard read them) and request bodies.
import { Type, type Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { AnyObject, Answer, Body, Nullable, Timestamp, Uuid } from '../http/schemas.ts';

/** svc's own scheduler (the `svc scheduler` process): schedules it owns are fired as schedule.fire commands. */
export const SVC_SCHEDULER = 'svc-scheduler';
export const CATCH_UP = ['skip', 'fire_one_missed', 'fire_all_missed'] as const;
export const PRIORITIES = ['critical', 'high', 'normal', 'low'] as const;
export const FIRE_STATUSES = ['buffered', 'pending', 'dispatched', 'succeeded', 'failed', 'timeout', 'buffer_expired'] as const;

const Kind = Type.Union(['cron', 'interval', 'clocked', 'solar'].map((k) => Type.Literal(k)));
const CatchUp = Type.Union(CATCH_UP.map((c) => Type.Literal(c)));
const Priority = Type.Union(PRIORITIES.map((p) => Type.Literal(p)));
const FireStatus = Type.Union(FIRE_STATUSES.map((s) => Type.Literal(s)));
/** Scheduler and engine names: lower-case words as the z4j adapters name themselves. */
const AdapterName = Type.String({ minLength: 1, maxLength: 40, pattern: '^[a-z][a-z0-9_.-]{0,39}$' });

export const SchedulePublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    engine: Type.String(),
    scheduler: Type.String(),
    name: Type.String(),
    task_name: Type.String(),
    kind: Type.String(),
    expression: Type.String(),
    timezone: Type.String(),
    queue: Nullable(Type.String()),
    priority: Type.String(),
    args: Type.Array(Type.Unknown()),
    kwargs: AnyObject,
    is_enabled: Type.Boolean(),
    last_run_at: Nullable(Timestamp),
    next_run_at: Nullable(Timestamp),
    total_runs: Type.Integer(),
    external_id: Nullable(Type.String()),
    catch_up: Type.String(),
    source: Type.String(),
    source_hash: Nullable(Type.String()),
    agent_id: Nullable(Uuid),
    reported_at: Nullable(Timestamp),
    consecutive_failures: Type.Integer(),
    paused_by: Nullable(Type.String({ description: '`circuit_breaker` when svc paused it after repeated failed fires' })),
    misfired_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'SchedulePublic',
);
export type SchedulePublic = Static<typeof SchedulePublic>;

export const SchedulePage = Answer({ items: Type.Array(SchedulePublic), next_cursor: Nullable(Type.String()) }, 'SchedulePage');
export type SchedulePage = Static<typeof SchedulePage>;

export const FirePublic = Answer(
  {
    id: Uuid,
    fire_id: Type.String(),
    schedule_id: Uuid,
    command_id: Nullable(Uuid),
    action: Type.String({ description: '`schedule.fire` or `schedule.trigger_now`' }),
    status: FireStatus,
    scheduled_for: Timestamp,
    fired_at: Timestamp,
    acked_at: Nullable(Timestamp),
    latency_ms: Nullable(Type.Integer({ description: 'from scheduled_for to the agent reporting the outcome' })),
    error_code: Nullable(Type.String()),
    error_message: Nullable(Type.String()),
    task_id: Nullable(Type.String()),
  },
  'ScheduleFire',
);
export type FirePublic = Static<typeof FirePublic>;

export const MisfirePublic = Answer(
  {
    id: Uuid,
    schedule_id: Uuid,
    detected_at: Timestamp,
    name: Type.String(),
    engine: Type.String(),
    kind: Type.String(),
    scheduler: Type.String(),
    expected_at: Timestamp,
    lateness_seconds: Type.Number(),
    grace_seconds: Type.Integer(),
  },
  'ScheduleMisfire',
);
export type MisfirePublic = Static<typeof MisfirePublic>;
export const MisfireList = Answer({ project: Type.String(), misfires: Type.Array(MisfirePublic) }, 'ScheduleMisfireList');
export type MisfireList = Static<typeof MisfireList>;

/** The definition fields a caller may set (create, import; PATCH takes them optionally). */
const definition = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  engine: AdapterName,
  kind: Kind,
  expression: Type.String({ minLength: 1, maxLength: 1024 }),
  task_name: Type.String({ minLength: 1, maxLength: 500 }),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  queue: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
  priority: Type.Optional(Priority),
  args: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 1000 })),
  kwargs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  catch_up: Type.Optional(CatchUp),
  is_enabled: Type.Optional(Type.Boolean()),
  source: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  source_hash: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
};

export const ScheduleCreate = Body({ ...definition, scheduler: Type.Optional(AdapterName) });
export type ScheduleCreate = Static<typeof ScheduleCreate>;

export const SchedulePatch = Body({
  name: Type.Optional(definition.name),
  engine: Type.Optional(definition.engine),
  kind: Type.Optional(definition.kind),
  expression: Type.Optional(definition.expression),
  task_name: Type.Optional(definition.task_name),
  timezone: definition.timezone,
  queue: definition.queue,
  priority: definition.priority,
  args: definition.args,
  kwargs: definition.kwargs,
  catch_up: definition.catch_up,
  is_enabled: definition.is_enabled,
  source_hash: definition.source_hash,
});
export type SchedulePatch = Static<typeof SchedulePatch>;

const Imported = Type.Object({ ...definition, scheduler: Type.Optional(AdapterName) }, { additionalProperties: false, $id: 'ImportedSchedule' });
export type Imported = Static<typeof Imported>;

export const ImportBody = Body({
  schedules: Type.Array(Imported, { maxItems: 2000 }),
  mode: Type.Optional(Type.Union([Type.Literal('upsert'), Type.Literal('replace_for_source')])),
  source_filter: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});
export type ImportBody = Static<typeof ImportBody>;

export const ImportResult = Answer(
  {
    inserted: Type.Integer(),
    updated: Type.Integer(),
    unchanged: Type.Integer(),
    deleted: Type.Integer(),
    failed: Type.Integer(),
    errors: Type.Record(Type.String(), Type.String(), { description: 'index of the refused entry -> why' }),
  },
  'ScheduleImportResult',
);
export type ImportResult = Static<typeof ImportResult>;

const DiffEntry = Type.Object(
  { name: Type.String(), scheduler: Type.String(), proposed: Nullable(AnyObject), current: Nullable(AnyObject) },
  { additionalProperties: false },
);
export const DiffResult = Answer(
  {
    inserted: Type.Array(DiffEntry),
    updated: Type.Array(DiffEntry),
    unchanged: Type.Array(DiffEntry),
    deleted: Type.Array(DiffEntry),
    errors: Type.Record(Type.String(), Type.String()),
    summary: Type.Object({ inserted: Type.Integer(), updated: Type.Integer(), unchanged: Type.Integer(), deleted: Type.Integer(), failed: Type.Integer() }),
  },
  'ScheduleImportDiff',
);
export type DiffResult = Static<typeof DiffResult>;

export const ResyncResult = Answer(
  { agents_dispatched: Type.Integer(), schedulers_observed: Type.Array(Type.String()), command_ids: Type.Array(Uuid) },
  'ScheduleResyncResult',
);
export type ResyncResult = Static<typeof ResyncResult>;

export const ControlResult = Answer({ schedule: SchedulePublic, command_id: Nullable(Uuid), fire: Nullable(FirePublic) }, 'ScheduleControlResult');
export type ControlResult = Static<typeof ControlResult>;

export const ListQuery = Type.Object({
  cursor: Type.Optional(Type.String({ maxLength: 300 })),
  limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })),
  scheduler: Type.Optional(Type.String({ maxLength: 40 })),
});
export const FiresQuery = Type.Object({ limit: Type.Optional(t.Integer({ minimum: 1, maximum: 500 })) });
export const MisfiresQuery = Type.Object({
  limit: Type.Optional(t.Integer({ minimum: 1, maximum: 1000 })),
  schedule_id: Type.Optional(Uuid),
});

/** A run as the dashboard shows it: the instant and its wall-clock time in each zone asked for. */
const ZonedTime = Type.Object(
  {
    zone: Type.String(),
    local: Type.String({ description: 'YYYY-MM-DD HH:MM:SS in the zone' }),
    offset: Type.String({ description: 'UTC offset in the zone, e.g. +02:00' }),
    dst_change: Nullable(Type.String({ description: 'the offset change since the previous run (a DST transition), e.g. "+01:00 → +02:00"' })),
  },
  { additionalProperties: false },
);
const UpcomingRun = Type.Object(
  { at: Timestamp, zones: Type.Array(ZonedTime), dst_transition: Type.Boolean({ description: 'a zone changed its UTC offset since the previous run' }) },
  { additionalProperties: false },
);
export const UpcomingList = Answer(
  {
    project_timezone: Type.String(),
    schedules: Type.Array(Type.Object({ schedule_id: Uuid, timezone: Type.String(), runs: Type.Array(UpcomingRun) }, { additionalProperties: false })),
  },
  'ScheduleUpcomingRuns',
);
export type UpcomingList = Static<typeof UpcomingList>;
export const UpcomingQuery = Type.Object({
  count: Type.Optional(t.Integer({ minimum: 1, maximum: 20 })),
  // 100 ids of 36 characters and their commas, in the characters ids have: the whole request line (percent-encoded)
  // stays well inside the server's 16 KiB header limit.
  ids: Type.Optional(Type.String({ maxLength: 3800, pattern: '^[0-9A-Za-z_,-]*$', description: 'comma-separated schedule ids, at most 100 (default: all, at most 500)' })),
});
export const ScheduleCountQuery = Type.Object({ count: Type.Optional(t.Integer({ minimum: 1, maximum: 20 })) });
export const ProjectTimezone = Answer({ timezone: Type.String() }, 'ProjectScheduleTimezone');
export type ProjectTimezone = Static<typeof ProjectTimezone>;
export const ProjectTimezoneBody = Body({ timezone: Type.String({ minLength: 1, maxLength: 64 }) });
