// /api/v1/projects/{slug}/schedules: the inventory and fire history (viewer;
// schedules:read), definitions, import, diff and resync (project admin),
// enable, disable and trigger now (operator); API keys need schedules:write
// for writes. A write refused by the access rules is an audit row too
// (`schedules.access.denied|unauth|not_found`): the spec's one band of audited
// denials (rate-limited per caller, so refused calls cannot flood the chain).
// The routes that issue commands (trigger, enable, disable, resync) take an
// Idempotency-Key header, as every command-issuing route does.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { grantOf, guarded } from '../access/guard.ts';
import { actorOf, type Actor } from '../auth/actor.ts';
import { principalOf } from '../auth/principal.ts';
import { answer, IDEMPOTENCY_ERRORS, IdempotencyHeaders, idempotent } from '../commands/idempotency.ts';
import type { Contract } from '../http/contract.ts';
import { Success } from '../http/contract.ts';
import { ApiError, validationFailed } from '../http/errors.ts';
import { ProjectPath, ProjectSlug, Uuid } from '../http/schemas.ts';
import { requestIpOf } from '../http/request.ts';
import { nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { findProjectBySlug } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';
import {
  ControlResult,
  DiffResult,
  FirePublic,
  FiresQuery,
  ImportBody,
  ImportResult,
  ListQuery,
  MisfireList,
  MisfiresQuery,
  ProjectTimezone,
  ProjectTimezoneBody,
  ResyncResult,
  ScheduleCountQuery,
  UpcomingList,
  UpcomingQuery,
  ScheduleCreate,
  SchedulePage,
  SchedulePatch,
  SchedulePublic,
} from './schemas.ts';
import { setTimezoneOfProject, timezoneOfProject, upcomingForProject, upcomingOfSchedule } from './own.ts';
import { applyImport, createSchedule, deleteSchedule, diffImport, getSchedule, listFires, listMisfires, listSchedules, patchSchedule, resync, setEnabled, triggerNow } from './service.ts';

const log = logger('schedules');
const READ = { user: { scope: 'schedules:read' }, project: 'viewer' } as const;
const OPERATE = { user: { scope: 'schedules:write' }, project: 'operator' } as const;
const ADMIN = { user: { scope: 'schedules:write' }, project: 'admin' } as const;
const SchedulePath = Type.Object({ slug: ProjectSlug, schedule_id: Uuid });
const NOT_FOUND = { 404: ['not_found'] } as const;
/** The most `ids` GET /upcoming takes, as UpcomingQuery says (its length limit alone lets 102 uuids through). */
const MAX_UPCOMING_IDS = 100;
/** Controls routed to the schedule's scheduler: none of its agents online; an Idempotency-Key used for another request. */
const CONTROL_ERRORS = { 404: ['not_found'], 409: ['no_online_agent', ...IDEMPOTENCY_ERRORS] } as const;

const DENIAL_ACTION: Record<number, string> = { 401: 'schedules.access.unauth', 403: 'schedules.access.denied', 404: 'schedules.access.not_found' };
/** One denial row per caller (user, or address when anonymous) and kind at most this often. */
const DENIAL_INTERVAL_MICROS = { signedIn: 10_000_000, anonymous: 600_000_000 };
const lastDenial = new Map<string, number>();

function denialDue(key: string, interval: number): boolean {
  const now = nowMicros();
  const at = lastDenial.get(key);
  if (at !== undefined && now - at < interval) return false;
  lastDenial.delete(key);
  lastDenial.set(key, now);
  if (lastDenial.size > 50_000) lastDenial.delete(lastDenial.keys().next().value!);
  return true;
}

/** Writes the audit row of a refused schedule write (never fails the answer). */
async function auditDenial(ctx: AppContext, request: Request, slug: string | undefined, e: ApiError): Promise<void> {
  const action = DENIAL_ACTION[e.status];
  if (!action) return;
  try {
    const who = await principalOf(ctx, request).catch(() => null);
    const ip = requestIpOf(ctx, request);
    const key = `${who?.user.id ?? `ip:${ip}`}|${action}`;
    if (!denialDue(key, who ? DENIAL_INTERVAL_MICROS.signedIn : DENIAL_INTERVAL_MICROS.anonymous)) return;
    const project = slug ? await findProjectBySlug(ctx.db, slug) : null;
    const path = new URL(request.url).pathname;
    await ctx.audit.record(ctx.db, {
      ...actorOf(ctx, request, who),
      action,
      result: 'denied',
      target_type: 'project',
      target_id: project?.id ?? slug ?? '',
      project_id: project?.id ?? null,
      metadata: { method: request.method, path, error: e.error, status: e.status },
    });
  } catch (err) {
    log.warn({ err: describeError(err) }, 'auditing a refused schedule write failed');
  }
}

/** guarded() for a schedule write: a refusal by the access rules is audited before it is answered. */
function audited<C extends Contract>(ctx: AppContext, c: C, roleFor?: (body: any) => 'viewer' | 'operator' | 'admin') {
  const options = guarded(ctx, c, roleFor);
  const guard = options.beforeHandle!;
  return {
    ...options,
    beforeHandle: async (context: { request: Request; params: Record<string, string>; body: unknown }) => {
      try {
        await guard(context);
      } catch (e) {
        if (e instanceof ApiError) await auditDenial(ctx, context.request, context.params.slug, e);
        throw e;
      }
    },
  };
}

export const scheduleRoutes = (ctx: AppContext) => {
  const who = (request: Request) => {
    const grant = grantOf(request);
    return { project: grant.project, actor: actorOf(ctx, request, grant.who) };
  };
  type Project = ReturnType<typeof grantOf>['project'];
  /** A control that issues commands, under the request's Idempotency-Key (a repeated "trigger now" fires once):
   * answered `status`, or the first answer again. The routes take no body: the key's request is the path. */
  const control = async <T>(request: Request, set: { status?: unknown; headers: Record<string, string | number> }, status: number, run: (project: Project, actor: Actor) => Promise<T>) => {
    const grant = grantOf(request);
    return answer(set, await idempotent(ctx, request, { projectId: grant.project.id, who: grant.who }, null, status, () => run(grant.project, actorOf(ctx, request, grant.who))));
  };
  const app = new Elysia({ prefix: '/api/v1/projects/:slug/schedules', detail: { tags: ['schedules'] } })
    .get('', ({ request, query }) => listSchedules(ctx.db, grantOf(request).project.id, query), {
      ...guarded(ctx, { summary: 'Schedules of the project by name (keyset cursor), optionally of one scheduler', access: READ, params: ProjectPath, query: ListQuery, ok: SchedulePage }),
    })
    .post(
      '',
      async ({ request, body, set }) => {
        const { project, actor } = who(request);
        set.status = 201;
        return createSchedule(ctx, project.id, body, actor);
      },
      {
        ...audited(ctx, {
          summary: "Create a schedule (svc's own scheduler unless `scheduler` names another); 409 when the name is taken for that scheduler",
          access: ADMIN,
          params: ProjectPath,
          body: ScheduleCreate,
          ok: SchedulePublic,
          status: 201,
          errors: { 409: ['conflict'] },
        }),
      },
    )
    .get('/misfires', async ({ request, query }) => listMisfires(ctx.db, grantOf(request).project, query.limit ?? 50, query.schedule_id), {
      ...guarded(ctx, {
        summary: "The project's detected schedule misfires across all its schedules, or one schedule's (`schedule_id`), newest first (limit default 50, at most 1000)",
        access: READ,
        params: ProjectPath,
        query: MisfiresQuery,
        ok: MisfireList,
      }),
    })
    .get(
      '/upcoming',
      ({ request, query }) => {
        const ids = query.ids ? query.ids.split(',').map((x) => x.trim()).filter((x) => x !== '') : null;
        if (ids && ids.length > MAX_UPCOMING_IDS) throw validationFailed([{ path: '/ids', message: `at most ${MAX_UPCOMING_IDS} schedule ids`, location: 'query' }]);
        return upcomingForProject(ctx.db, grantOf(request).project.id, ids, query.count ?? 5);
      },
      {
        ...guarded(ctx, {
          summary: "The next runs of the project's schedules (all, or `ids`) in UTC, the project's time zone and each schedule's own, DST transitions flagged",
          access: READ,
          params: ProjectPath,
          query: UpcomingQuery,
          ok: UpcomingList,
        }),
      },
    )
    .get('/timezone', ({ request }) => timezoneOfProject(ctx.db, grantOf(request).project.id), {
      ...guarded(ctx, { summary: "The time zone the project's schedule runs are shown in besides UTC", access: READ, params: ProjectPath, ok: ProjectTimezone }),
    })
    .put(
      '/timezone',
      ({ request, body }) => {
        const { project, actor } = who(request);
        return setTimezoneOfProject(ctx, project.id, body.timezone, actor);
      },
      {
        ...audited(ctx, { summary: "Set the project's time zone for schedule runs (an IANA name); audit project.updated", access: ADMIN, params: ProjectPath, body: ProjectTimezoneBody, ok: ProjectTimezone }),
      },
    )
    .post('/diff', ({ request, body }) => diffImport(ctx.db, grantOf(request).project.id, body), {
      ...audited(ctx, {
        summary: 'Dry run of an import: what it would insert, update, leave unchanged and delete (nothing is written)',
        access: ADMIN,
        params: ProjectPath,
        body: ImportBody,
        ok: DiffResult,
      }),
    })
    .post(
      '/import',
      ({ request, body }) => {
        const { project, actor } = who(request);
        return applyImport(ctx, project.id, body, actor);
      },
      {
        ...audited(ctx, {
          summary: 'Import schedules (upsert by scheduler and name; replace_for_source also deletes rows of that imported source that are not in the body)',
          access: ADMIN,
          params: ProjectPath,
          body: ImportBody,
          ok: ImportResult,
        }),
      },
    )
    .post(
      '/resync',
      ({ request, set }) => control(request, set, 202, (project, actor) => resync(ctx, project, actor)),
      {
        ...audited(ctx, {
          summary: 'Ask every online scheduler agent of the project for a fresh snapshot (schedule.resync); 409 no_online_agent when none runs',
          access: ADMIN,
          params: ProjectPath,
          checkedByHandler: { headers: IdempotencyHeaders },
          ok: ResyncResult,
          status: 202,
          errors: { 409: ['no_online_agent', ...IDEMPOTENCY_ERRORS] },
        }),
      },
    )
    .get('/:schedule_id', ({ request, params }) => getSchedule(ctx.db, grantOf(request).project.id, params.schedule_id), {
      ...guarded(ctx, { summary: 'One schedule', access: READ, params: SchedulePath, ok: SchedulePublic, errors: NOT_FOUND }),
    })
    .get('/:schedule_id/upcoming', ({ request, params, query }) => upcomingOfSchedule(ctx.db, grantOf(request).project.id, params.schedule_id, query.count ?? 5), {
      ...guarded(ctx, {
        summary: "One schedule's next runs in UTC, the project's time zone and its own, DST transitions flagged",
        access: READ,
        params: SchedulePath,
        query: ScheduleCountQuery,
        ok: UpcomingList,
        errors: NOT_FOUND,
      }),
    })
    .get('/:schedule_id/fires', ({ request, params, query }) => listFires(ctx.db, grantOf(request).project.id, params.schedule_id, query.limit ?? 100), {
      ...guarded(ctx, {
        summary: "The schedule's fires newest first: status, latency and error of each (limit default 100)",
        access: READ,
        params: SchedulePath,
        query: FiresQuery,
        ok: Type.Array(FirePublic),
        errors: NOT_FOUND,
      }),
    })
    .patch(
      '/:schedule_id',
      ({ request, params, body }) => {
        const { project, actor } = who(request);
        return patchSchedule(ctx, project.id, params.schedule_id, body, actor);
      },
      {
        ...audited(ctx, {
          summary: 'Change a schedule\'s definition (its scheduler stays)',
          access: ADMIN,
          params: SchedulePath,
          body: SchedulePatch,
          ok: SchedulePublic,
          errors: { 404: ['not_found'], 409: ['conflict'] },
        }),
      },
    )
    .delete(
      '/:schedule_id',
      async ({ request, params }) => {
        const { project, actor } = who(request);
        await deleteSchedule(ctx, project.id, params.schedule_id, actor);
        return { success: true as const };
      },
      {
        ...audited(ctx, { summary: "Delete svc's record of a schedule and its fire history (the scheduler's own entry stays)", access: ADMIN, params: SchedulePath, ok: Success, errors: NOT_FOUND }),
      },
    )
    .post(
      '/:schedule_id/trigger',
      ({ request, params, set }) => control(request, set, 202, (project, actor) => triggerNow(ctx, project.id, params.schedule_id, actor)),
      {
        ...audited(ctx, {
          summary: "Run a schedule once now without moving its next run (schedule.trigger_now in its scheduler; svc's own fire as schedule.fire, buffered when no agent has the engine)",
          access: OPERATE,
          params: SchedulePath,
          checkedByHandler: { headers: IdempotencyHeaders },
          ok: ControlResult,
          status: 202,
          errors: CONTROL_ERRORS,
        }),
      },
    );
  // enable and disable: the same route twice.
  return [true, false].reduce(
    (a, enabled) =>
      a.post(
        `/:schedule_id/${enabled ? 'enable' : 'disable'}`,
        ({ request, params, set }) => control(request, set, 200, (project, actor) => setEnabled(ctx, project.id, params.schedule_id, enabled, actor)),
        {
          ...audited(ctx, {
            summary: `${enabled ? 'Enable' : 'Disable (pause)'} a schedule: in its scheduler (schedule.${enabled ? 'enable' : 'disable'} to an online agent advertising the adapter) or, for svc's own, here`,
            access: OPERATE,
            params: SchedulePath,
            checkedByHandler: { headers: IdempotencyHeaders },
            ok: ControlResult,
            errors: CONTROL_ERRORS,
          }),
        },
      ),
    app,
  );
};
