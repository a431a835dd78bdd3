// The schedules area's rules: the inventory (list, read, create, update,
// delete, import with a dry-run diff), controls routed to the scheduler that
// owns a schedule (enable, disable, trigger now, resync), fires and their
// history, and the misfire list. Every write commits with its audit row.
//
// Who fires a schedule is its `scheduler`: a scheduler adapter of a z4j agent
// (celery-beat, rq-scheduler, apscheduler, ...) or svc's own (svc-scheduler).
// Controls of an adapter's schedule are commands to an online WebSocket agent
// advertising that adapter (a long-poll agent reports none, so it never gets
// one); svc's own schedules fire as schedule.fire commands, which the commands
// area routes to an agent advertising the engine or buffers.
import { onlineAgentsOfProject, type AgentRow } from '../agents/service.ts';
import type { Actor } from '../auth/actor.ts';
import { issueCommandIn } from '../commands/service.ts';
import type { Executor, Tx } from '../db/connect.ts';
import { conflict, notFound, validationFailed, type FieldError } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros, parseIsoMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import { cronProblem, intervalSeconds, knownZone, nextRunAfter, solarProblem } from './next-run.ts';
import {
  SVC_SCHEDULER,
  type ControlResult,
  type DiffResult,
  type FirePublic,
  type ImportBody,
  type ImportResult,
  type Imported,
  type MisfireList,
  type ResyncResult,
  type ScheduleCreate,
  type SchedulePage,
  type SchedulePatch,
  type SchedulePublic,
} from './schemas.ts';
import {
  deleteSchedules,
  firesOf,
  insertFire,
  insertSchedule,
  misfiresOf,
  scheduleById,
  schedulesOf,
  schedulesPage,
  updateSchedule,
  type FireRow,
  type ScheduleRow,
} from './store.ts';
import type { FireStatus } from './tables.ts';

export { SVC_SCHEDULER };

const MAX_JSON_BYTES = 64 * 1024;
/** Labels of imports that `replace_for_source` may replace wholesale. */
const REPLACEABLE_SOURCE = /^(declarative:|imported)/;

export function toSchedulePublic(r: ScheduleRow): SchedulePublic {
  return {
    id: r.id,
    project_id: r.project_id,
    engine: r.engine,
    scheduler: r.scheduler,
    name: r.name,
    task_name: r.task_name,
    kind: r.kind,
    expression: r.expression,
    timezone: r.timezone,
    queue: r.queue,
    priority: r.priority,
    args: r.args,
    kwargs: r.kwargs,
    is_enabled: r.is_enabled,
    last_run_at: r.last_run_at,
    next_run_at: r.next_run_at,
    total_runs: r.total_runs,
    external_id: r.external_id,
    catch_up: r.catch_up,
    source: r.source,
    source_hash: r.source_hash,
    agent_id: r.agent_id,
    reported_at: r.reported_at,
    consecutive_failures: r.consecutive_failures,
    paused_by: r.paused_by,
    misfired_at: r.misfired_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function toFirePublic(f: FireRow): FirePublic {
  return {
    id: f.id,
    fire_id: f.fire_id,
    schedule_id: f.schedule_id,
    command_id: f.command_id,
    action: f.action,
    status: f.status,
    scheduled_for: f.scheduled_for,
    fired_at: f.fired_at,
    acked_at: f.acked_at,
    latency_ms: f.latency_ms,
    error_code: f.error_code,
    error_message: f.error_message,
    task_id: f.task_id,
  };
}

/** Background actions (breaker, activations) are attributed to svc itself. */
export const SYSTEM_ACTOR: Actor = { user_id: null, api_key_id: null, source_ip: null, user_agent: 'svc (schedules)' };

// --- reading -----------------------------------------------------------------------

/** A project's schedules by name; `cursor` is `<name>|<id>` from next_cursor. */
export async function listSchedules(ex: Executor, projectId: string, opts: { cursor?: string; limit?: number; scheduler?: string } = {}): Promise<SchedulePage> {
  const limit = Math.min(Math.max(opts.limit ?? 50, 1), 500);
  let after: { name: string; id: string } | undefined;
  if (opts.cursor) {
    const cut = opts.cursor.lastIndexOf('|');
    if (cut <= 0) throw validationFailed([{ path: '/cursor', message: 'is not a cursor this endpoint returned', location: 'query' }]);
    after = { name: opts.cursor.slice(0, cut), id: opts.cursor.slice(cut + 1) };
  }
  const rows = await schedulesPage(ex, projectId, { ...(after ? { after } : {}), ...(opts.scheduler ? { scheduler: opts.scheduler } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page.map(toSchedulePublic), next_cursor: rows.length > limit && last ? `${last.name}|${last.id}` : null };
}

/** One schedule of the project; 404 otherwise. */
export async function scheduleOf(ex: Executor, projectId: string, id: string): Promise<ScheduleRow> {
  const row = await scheduleById(ex, id);
  if (!row || row.project_id !== projectId) throw notFound('schedule');
  return row;
}

export const getSchedule = async (ex: Executor, projectId: string, id: string): Promise<SchedulePublic> => toSchedulePublic(await scheduleOf(ex, projectId, id));

/** The schedule's fires, newest first. */
export async function listFires(ex: Executor, projectId: string, id: string, limit = 100): Promise<FirePublic[]> {
  await scheduleOf(ex, projectId, id);
  return (await firesOf(ex, id, Math.min(Math.max(limit, 1), 500))).map(toFirePublic);
}

export const MISFIRES_DEFAULT_LIMIT = 50;
export const MISFIRES_MAX_LIMIT = 1000;

/** A project's detected misfires, newest first (the API and `svc misfires`). */
export async function listMisfires(ex: Executor, project: { id: string; slug: string }, limit = MISFIRES_DEFAULT_LIMIT, scheduleId?: string): Promise<MisfireList> {
  const rows = await misfiresOf(ex, project.id, Math.min(Math.max(limit, 1), MISFIRES_MAX_LIMIT), scheduleId);
  return {
    project: project.slug,
    misfires: rows.map((m) => ({
      id: m.id,
      schedule_id: m.schedule_id,
      detected_at: m.detected_at,
      name: m.name,
      engine: m.engine,
      kind: m.kind,
      scheduler: m.scheduler,
      expected_at: m.expected_at,
      lateness_seconds: m.lateness_seconds,
      grace_seconds: m.grace_seconds,
    })),
  };
}

// --- definitions -------------------------------------------------------------------

type Definition = Pick<ScheduleRow, 'engine' | 'kind' | 'expression' | 'task_name' | 'timezone' | 'queue' | 'priority' | 'args' | 'kwargs' | 'catch_up' | 'is_enabled' | 'source' | 'source_hash'>;
const DEFINITION_KEYS: (keyof Definition)[] = ['engine', 'kind', 'expression', 'task_name', 'timezone', 'queue', 'priority', 'args', 'kwargs', 'catch_up', 'is_enabled', 'source', 'source_hash'];

const hasControlChars = (s: string) => /[\u0000-\u001f\u007f]/.test(s);

/** The rules TypeBox cannot state: expression per kind, time zone, task name, argument sizes. */
export function definitionProblems(d: { name: string; kind: string; expression: string; timezone: string; task_name: string; args: unknown; kwargs: unknown; scheduler?: string }, at = ''): FieldError[] {
  const out: FieldError[] = [];
  const p = (path: string, message: string) => out.push({ path: `${at}/${path}`, message, location: 'body' });
  if (d.name.trim() === '' || hasControlChars(d.name)) p('name', 'must be a non-blank name without control characters');
  if (d.task_name.trim() === '' || hasControlChars(d.task_name)) p('task_name', 'must be a task name without control characters');
  if (!knownZone(d.timezone)) p('timezone', 'is not a time zone this service knows (an IANA name such as Europe/Berlin)');
  if (d.kind === 'interval' && intervalSeconds(d.expression) === null) p('expression', 'an interval is a positive number of seconds');
  if (d.kind === 'cron' && knownZone(d.timezone)) {
    const problem = cronProblem(d.expression, d.timezone);
    if (problem) p('expression', `is not a cron expression: ${problem}`);
  }
  if (d.kind === 'clocked' && parseIsoMicros(d.expression.trim()) === null) p('expression', 'a clocked schedule is one ISO 8601 instant with an offset');
  // svc's own scheduler computes solar runs itself, so it needs the place (an adapter keeps it in its own entry).
  if (d.kind === 'solar' && (d.scheduler ?? SVC_SCHEDULER) === SVC_SCHEDULER) {
    const problem = solarProblem(d.expression);
    if (problem) p('expression', problem);
  }
  if (JSON.stringify(d.args ?? []).length > MAX_JSON_BYTES) p('args', 'must serialise to at most 64 KiB');
  if (JSON.stringify(d.kwargs ?? {}).length > MAX_JSON_BYTES) p('kwargs', 'must serialise to at most 64 KiB');
  return out;
}

function definitionOf(input: Imported | ScheduleCreate, source: string): Definition & { name: string; scheduler: string } {
  return {
    name: input.name.trim(),
    scheduler: input.scheduler ?? SVC_SCHEDULER,
    engine: input.engine,
    kind: input.kind,
    expression: input.expression.trim(),
    task_name: input.task_name.trim(),
    timezone: input.timezone ?? 'UTC',
    queue: input.queue ?? null,
    priority: input.priority ?? 'normal',
    args: input.args ?? [],
    kwargs: input.kwargs ?? {},
    catch_up: input.catch_up ?? 'skip',
    is_enabled: input.is_enabled ?? true,
    source: input.source ?? source,
    source_hash: input.source_hash ?? null,
  };
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const changedKeys = (row: ScheduleRow, d: Definition): (keyof Definition)[] => DEFINITION_KEYS.filter((k) => !sameJson(row[k], d[k]));

function newRow(projectId: string, d: Definition & { name: string; scheduler: string }, now: string): ScheduleRow {
  return {
    id: crypto.randomUUID(),
    project_id: projectId,
    ...d,
    last_run_at: null,
    next_run_at: d.is_enabled ? nextRunAfter(d, nowMicros()) : null,
    total_runs: 0,
    external_id: null,
    source_key: null,
    agent_id: null,
    reported_at: null,
    consecutive_failures: 0,
    paused_by: null,
    misfired_at: null,
    created_at: now,
    updated_at: now,
  };
}

const isUniqueViolation = (e: unknown): boolean => {
  for (let c: any = e; c; c = c.cause) if (c.code === '23505' || c.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint/.test(String(c.message))) return true;
  return false;
};

const nameTaken = (d: { name: string; scheduler: string }) =>
  conflict(`a schedule named ${JSON.stringify(d.name)} already exists for scheduler ${d.scheduler}`, { name: d.name, scheduler: d.scheduler });

/** POST: a new schedule (201); 409 when (scheduler, name) is taken; audit `schedule.create`. */
export async function createSchedule(ctx: AppContext, projectId: string, input: ScheduleCreate, actor: Actor): Promise<SchedulePublic> {
  const d = definitionOf(input, 'dashboard');
  const problems = definitionProblems(d);
  if (problems.length > 0) throw validationFailed(problems);
  const row = newRow(projectId, d, nowIso());
  try {
    await ctx.db.tx(async (tx) => {
      await insertSchedule(tx, row);
      await ctx.audit.append(tx, { ...actor, action: 'schedule.create', target_type: 'schedule', target_id: row.id, project_id: projectId, metadata: { name: row.name, scheduler: row.scheduler, engine: row.engine, kind: row.kind } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw nameTaken(d);
    throw e;
  }
  return toSchedulePublic(row);
}

/** PATCH: changes the definition (not the scheduler); audit `schedule.update` naming the fields changed. */
export async function patchSchedule(ctx: AppContext, projectId: string, id: string, patch: SchedulePatch, actor: Actor): Promise<SchedulePublic> {
  try {
    return await ctx.db.tx(async (tx) => {
      const row = await scheduleOf(tx, projectId, id);
      const merged = { ...row, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) } as ScheduleRow;
      merged.name = merged.name.trim();
      const problems = definitionProblems(merged);
      if (problems.length > 0) throw validationFailed(problems);
      const changed = [...changedKeys(row, merged), ...(merged.name !== row.name ? ['name' as const] : [])];
      if (changed.length === 0) return toSchedulePublic(row);
      const now = nowIso();
      const timing = changed.some((k) => k === 'kind' || k === 'expression' || k === 'timezone' || k === 'is_enabled');
      const set: Partial<ScheduleRow> = { ...Object.fromEntries(changed.map((k) => [k, merged[k]])), updated_at: now };
      if (timing) set.next_run_at = merged.is_enabled ? nextRunAfter(merged, nowMicros()) : null;
      if (changed.includes('is_enabled') && merged.is_enabled) Object.assign(set, { paused_by: null, consecutive_failures: 0, misfired_at: null });
      const updated = (await updateSchedule(tx, id, set))!;
      await ctx.audit.append(tx, { ...actor, action: 'schedule.update', target_type: 'schedule', target_id: id, project_id: projectId, metadata: { name: updated.name, changed } });
      return toSchedulePublic(updated);
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`a schedule with that name already exists for its scheduler`, { name: patch.name });
    throw e;
  }
}

/** DELETE: removes svc's row (and its fire history); the scheduler's own entry is untouched. Audit `schedule.delete`. */
export async function deleteSchedule(ctx: AppContext, projectId: string, id: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const row = await scheduleOf(tx, projectId, id);
    await deleteSchedules(tx, [id]);
    await ctx.audit.append(tx, { ...actor, action: 'schedule.delete', target_type: 'schedule', target_id: id, project_id: projectId, metadata: { name: row.name, scheduler: row.scheduler } });
  });
}

// --- controls ----------------------------------------------------------------------

/** Online WebSocket agents of the project advertising the scheduler adapter, freshest first. */
export async function schedulerAgents(ex: Executor, projectId: string, scheduler: string): Promise<AgentRow[]> {
  return (await onlineAgentsOfProject(ex, projectId)).filter((a) => a.transport === 'ws' && a.scheduler_adapters.includes(scheduler));
}

const noAgent = (scheduler: string) =>
  conflict(`no online agent advertises the ${scheduler} scheduler adapter (a WebSocket agent must run inside the scheduler)`, { scheduler }, 'no_online_agent');

/** What a scheduler adapter needs to find the entry: its own id for it. */
export const adapterScheduleId = (s: ScheduleRow): string => s.external_id ?? s.source_key ?? s.name;

/** The parameters of a control command for an adapter's schedule. */
const controlParameters = (s: ScheduleRow, extra: Record<string, unknown> = {}) => ({
  schedule_id: adapterScheduleId(s),
  schedule_name: s.name,
  external_id: s.external_id,
  scheduler: s.scheduler,
  ...extra,
});

/** Issues `action` for an adapter's schedule to its scheduler's freshest online agent, in `tx`. */
async function issueControl(ctx: AppContext, tx: Tx, s: ScheduleRow, action: string, actor: Actor, extra: Record<string, unknown> = {}, agents?: AgentRow[]) {
  const agent = (agents ?? (await schedulerAgents(tx, s.project_id, s.scheduler)))[0];
  if (!agent) throw noAgent(s.scheduler);
  return issueCommandIn(ctx, tx, { projectId: s.project_id, agentId: agent.id, action, targetType: 'schedule', targetId: s.id, payload: controlParameters(s, extra) }, actor);
}

/** enable / disable: svc's own schedules flip here; an adapter's schedule is switched in its scheduler
 * (a command to an agent advertising the adapter; 409 no_online_agent when none) and flipped here at
 * once, the next snapshot saying what the scheduler holds. Audit `schedule.enable|disable`. */
export async function setEnabled(ctx: AppContext, projectId: string, id: string, enabled: boolean, actor: Actor, reason?: string): Promise<ControlResult> {
  return ctx.db.tx(async (tx) => {
    const s = await scheduleOf(tx, projectId, id);
    const action = enabled ? 'schedule.enable' : 'schedule.disable';
    const command = s.scheduler === SVC_SCHEDULER ? null : await issueControl(ctx, tx, s, action, actor);
    const now = nowIso();
    const set: Partial<ScheduleRow> = { is_enabled: enabled, updated_at: now };
    if (enabled) Object.assign(set, { paused_by: null, consecutive_failures: 0, misfired_at: null, next_run_at: nextRunAfter(s, nowMicros()) });
    else Object.assign(set, { paused_by: reason ?? null, next_run_at: null });
    const updated = (await updateSchedule(tx, id, set))!;
    await ctx.audit.append(tx, {
      ...actor,
      action,
      target_type: 'schedule',
      target_id: id,
      project_id: projectId,
      metadata: { name: s.name, scheduler: s.scheduler, command_id: command?.id ?? null, ...(reason ? { reason } : {}) },
    });
    return { schedule: toSchedulePublic(updated), command_id: command?.id ?? null, fire: null };
  });
}

/** Fire `s` once through svc: a schedule.fire command (routed to an agent advertising the engine, or
 * buffered) and its fire row, in `tx`. Used for trigger-now of svc's own schedules and by svc's scheduler. */
export async function issueFire(ctx: AppContext, tx: Tx, s: ScheduleRow, opts: { scheduledFor: string; actor: Actor; action?: string }): Promise<FireRow> {
  const fireId = crypto.randomUUID();
  const firedAt = nowIso();
  const command = await issueCommandIn(
    ctx,
    tx,
    {
      projectId: s.project_id,
      agentId: null,
      action: 'schedule.fire',
      targetType: 'schedule',
      targetId: s.id,
      payload: {
        schedule_id: s.id,
        schedule_name: s.name,
        task_name: s.task_name,
        engine: s.engine,
        queue: s.queue,
        args: s.args,
        kwargs: s.kwargs,
        fire_id: fireId,
        scheduled_for: opts.scheduledFor,
        fired_at: firedAt,
      },
      idempotencyKey: `schedule:${s.id}:fire:${fireId}`,
    },
    opts.actor,
  );
  return recordFire(tx, s, { fireId, commandId: command.id, action: opts.action ?? 'schedule.fire', status: command.status === 'buffered' ? 'buffered' : 'pending', scheduledFor: opts.scheduledFor, firedAt, actor: opts.actor });
}

/** Stores the fire row of a command just issued for `s`. */
async function recordFire(
  tx: Tx,
  s: ScheduleRow,
  f: { fireId: string; commandId: string; action: string; status: FireStatus; scheduledFor: string; firedAt: string; actor: Actor },
): Promise<FireRow> {
  const fire: FireRow = {
    id: crypto.randomUUID(),
    fire_id: f.fireId,
    schedule_id: s.id,
    project_id: s.project_id,
    command_id: f.commandId,
    action: f.action,
    status: f.status,
    scheduled_for: f.scheduledFor,
    fired_at: f.firedAt,
    acked_at: null,
    completed_at: null,
    latency_ms: null,
    error_code: null,
    error_message: null,
    task_id: null,
    issued_by: f.actor.user_id ?? null,
  };
  await insertFire(tx, fire);
  return fire;
}

/** trigger now: one fire that leaves the next run alone. An adapter's schedule gets schedule.trigger_now in
 * its scheduler (409 no_online_agent when no agent advertises it); svc's own fires as schedule.fire
 * (buffered when no agent advertises its engine). Either way a fire row tracks it. Audit `schedule.trigger_now`. */
export async function triggerNow(ctx: AppContext, projectId: string, id: string, actor: Actor): Promise<ControlResult> {
  return ctx.db.tx(async (tx) => {
    const s = await scheduleOf(tx, projectId, id);
    const now = nowIso();
    let fire: FireRow;
    if (s.scheduler === SVC_SCHEDULER) {
      fire = await issueFire(ctx, tx, s, { scheduledFor: now, actor, action: 'schedule.trigger_now' });
    } else {
      const fireId = crypto.randomUUID();
      const command = await issueControl(ctx, tx, s, 'schedule.trigger_now', actor, { fire_id: fireId });
      fire = await recordFire(tx, s, { fireId, commandId: command.id, action: 'schedule.trigger_now', status: 'pending', scheduledFor: now, firedAt: now, actor });
    }
    await ctx.audit.append(tx, {
      ...actor,
      action: 'schedule.trigger_now',
      target_type: 'schedule',
      target_id: id,
      project_id: projectId,
      metadata: { name: s.name, scheduler: s.scheduler, fire_id: fire.fire_id, command_id: fire.command_id },
    });
    return { schedule: toSchedulePublic(s), command_id: fire.command_id, fire: toFirePublic(fire) };
  });
}

/** resync: schedule.resync to every online WebSocket agent of the project with scheduler adapters (their
 * snapshots then reconcile the inventory); 409 no_online_agent when there is none. Audit `schedule.resync`. */
export async function resync(ctx: AppContext, project: { id: string; slug: string }, actor: Actor): Promise<ResyncResult> {
  return ctx.db.tx(async (tx) => {
    const agents = (await onlineAgentsOfProject(tx, project.id)).filter((a) => a.transport === 'ws' && a.scheduler_adapters.length > 0);
    if (agents.length === 0) throw conflict('no online agent of the project runs a scheduler adapter', {}, 'no_online_agent');
    const ids: string[] = [];
    for (const a of agents) {
      const c = await issueCommandIn(ctx, tx, { projectId: project.id, agentId: a.id, action: 'schedule.resync', targetType: 'project', targetId: project.slug, payload: {} }, actor);
      ids.push(c.id);
    }
    const schedulers = [...new Set(agents.flatMap((a) => a.scheduler_adapters))].sort();
    await ctx.audit.append(tx, { ...actor, action: 'schedule.resync', target_type: 'project', target_id: project.id, project_id: project.id, metadata: { agents: agents.map((a) => a.id), schedulers } });
    return { agents_dispatched: agents.length, schedulers_observed: schedulers, command_ids: ids };
  });
}

// --- import ------------------------------------------------------------------------

interface Plan {
  inserts: (Definition & { name: string; scheduler: string })[];
  updates: { row: ScheduleRow; def: Definition & { name: string; scheduler: string }; changed: (keyof Definition)[] }[];
  unchanged: ScheduleRow[];
  deletes: ScheduleRow[];
  errors: Record<string, string>;
}

const keyOf = (scheduler: string, name: string) => `${scheduler}\u0000${name}`;
const shown = (r: ScheduleRow | (Definition & { name: string; scheduler: string })): Record<string, unknown> =>
  Object.fromEntries(['name', 'scheduler', ...DEFINITION_KEYS].map((k) => [k, (r as Record<string, unknown>)[k]]));

async function planImport(ex: Executor, projectId: string, body: ImportBody): Promise<Plan> {
  const mode = body.mode ?? 'upsert';
  if (mode === 'replace_for_source') {
    if (!body.source_filter) throw validationFailed([{ path: '/source_filter', message: 'is required with mode replace_for_source', location: 'body' }]);
    if (!REPLACEABLE_SOURCE.test(body.source_filter)) {
      throw validationFailed([{ path: '/source_filter', message: 'replace_for_source replaces only imported sources (declarative:* or imported*)', location: 'body' }]);
    }
  }
  const defaultSource = mode === 'replace_for_source' ? body.source_filter! : 'imported';
  const existing = new Map((await schedulesOf(ex, projectId)).map((r) => [keyOf(r.scheduler, r.name), r]));
  const plan: Plan = { inserts: [], updates: [], unchanged: [], deletes: [], errors: {} };
  const seen = new Set<string>();
  body.schedules.forEach((entry, i) => {
    const def = definitionOf(entry, defaultSource);
    const problems = definitionProblems(def);
    if (mode === 'replace_for_source' && def.source !== body.source_filter) problems.push({ path: '/source', message: 'must equal source_filter in replace_for_source mode' });
    const key = keyOf(def.scheduler, def.name);
    if (seen.has(key)) problems.push({ path: '/name', message: 'appears twice in this import' });
    if (problems.length > 0) {
      plan.errors[String(i)] = problems.map((p) => `${p.path.replace(/^\//, '')}: ${p.message}`).join('; ');
      return;
    }
    seen.add(key);
    const row = existing.get(key);
    if (!row) plan.inserts.push(def);
    else {
      const changed = changedKeys(row, def);
      if (changed.length === 0) plan.unchanged.push(row);
      else plan.updates.push({ row, def, changed });
    }
  });
  if (mode === 'replace_for_source') {
    for (const row of existing.values()) if (row.source === body.source_filter && !seen.has(keyOf(row.scheduler, row.name))) plan.deletes.push(row);
  }
  return plan;
}

/** The dry run: what an import of `body` would insert, update, leave and delete. Changes nothing. */
export async function diffImport(ex: Executor, projectId: string, body: ImportBody): Promise<DiffResult> {
  const plan = await planImport(ex, projectId, body);
  const entry = (name: string, scheduler: string, proposed: Record<string, unknown> | null, current: Record<string, unknown> | null) => ({ name, scheduler, proposed, current });
  return {
    inserted: plan.inserts.map((d) => entry(d.name, d.scheduler, shown(d), null)),
    updated: plan.updates.map((u) => entry(u.row.name, u.row.scheduler, shown(u.def), shown(u.row))),
    unchanged: plan.unchanged.map((r) => entry(r.name, r.scheduler, shown(r), shown(r))),
    deleted: plan.deletes.map((r) => entry(r.name, r.scheduler, null, shown(r))),
    errors: plan.errors,
    summary: { inserted: plan.inserts.length, updated: plan.updates.length, unchanged: plan.unchanged.length, deleted: plan.deletes.length, failed: Object.keys(plan.errors).length },
  };
}

/** Applies an import in one transaction (entries that fail their checks are counted and named in
 * `errors`; the rest apply). Audit `schedules.import` with the counts. */
export async function applyImport(ctx: AppContext, projectId: string, body: ImportBody, actor: Actor): Promise<ImportResult> {
  return ctx.db.tx(async (tx) => {
    const plan = await planImport(tx, projectId, body);
    const now = nowIso();
    for (const d of plan.inserts) await insertSchedule(tx, newRow(projectId, d, now));
    for (const u of plan.updates) {
      const set: Partial<ScheduleRow> = { ...Object.fromEntries(u.changed.map((k) => [k, u.def[k]])), updated_at: now };
      if (u.changed.some((k) => k === 'kind' || k === 'expression' || k === 'timezone' || k === 'is_enabled')) {
        set.next_run_at = u.def.is_enabled ? nextRunAfter(u.def, nowMicros()) : null;
      }
      await updateSchedule(tx, u.row.id, set);
    }
    await deleteSchedules(tx, plan.deletes.map((r) => r.id));
    const result: ImportResult = {
      inserted: plan.inserts.length,
      updated: plan.updates.length,
      unchanged: plan.unchanged.length,
      deleted: plan.deletes.length,
      failed: Object.keys(plan.errors).length,
      errors: plan.errors,
    };
    await ctx.audit.append(tx, {
      ...actor,
      action: 'schedules.import',
      target_type: 'project',
      target_id: projectId,
      project_id: projectId,
      metadata: { mode: body.mode ?? 'upsert', ...(body.source_filter ? { source_filter: body.source_filter } : {}), ...result, errors: undefined },
    });
    return result;
  });
}

/** The next expected run after now, for a schedule that just changed hands or was seen alive. */
export const expectedAfterNow = (s: Pick<ScheduleRow, 'kind' | 'expression' | 'timezone' | 'last_run_at'>, anchor: string | null = null): string | null =>
  nextRunAfter(s, nowMicros(), anchor ? parseIsoMicros(anchor) : null);

export const isoNow = (): string => isoMicros(nowMicros());
