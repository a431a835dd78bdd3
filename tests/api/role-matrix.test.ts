// The role matrix: every identity route and the activity feed, called by
// every kind of caller, in one table of expected statuses, plus things no
// answer may contain. Routes that change or remove something get a fresh
// target for each caller.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { isoMicros } from '../../src/lib/clock.ts';
import { failureGroupOf } from '../../src/stats/normalise.ts';
import { rollupTaskEvents } from '../../src/stats/rollup.ts';
import { testService, type CallOptions, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, MATRIX_ACTORS as ACTORS, STRONG_PASSWORD, matrixCallers, type MatrixActor as Actor } from '../helpers/identity.ts';
import { operatorFixture } from '../helpers/operator.ts';

let svc: TestService;
let admin: Browser;
let browsers: Partial<Record<Actor, Browser>> = {};
const keys: { with?: string; without?: string } = {};
const secrets: string[] = [];
let counter = 0;
const uniq = () => `${++counter}-${crypto.randomUUID().slice(0, 6)}`;
let ops: { lpAgent: string };

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  const callers = await matrixCallers(svc, ['admin:*']);
  ({ admin, browsers } = callers);
  Object.assign(keys, callers.keys);
  secrets.push(keys.with!, keys.without!, STRONG_PASSWORD, svc.ctx.config.SVC_SECRET, svc.ctx.config.SVC_AUDIT_CHAIN_SECRET, svc.ctx.config.SVC_METRICS_AUTH_TOKEN);
  for (const b of Object.values(browsers)) secrets.push(b!.cookies.get('svc_session')!);
  // Some activity in every scope.
  await svc.ctx.audit.record(svc.ctx.db, { action: 'test.service_wide', source_ip: '203.0.113.9' });
  ops = await operatorFixture(svc);
});
afterAll(() => svc.close());

async function call(actor: Actor, method: string, path: string, opts: CallOptions = {}) {
  if (actor === 'anonymous') return svc.call(method, path, opts);
  if (actor === 'key_with_scope' || actor === 'key_without_scope') {
    return svc.call(method, path, { ...opts, headers: { authorization: `Bearer ${actor === 'key_with_scope' ? keys.with : keys.without}`, ...opts.headers } });
  }
  return browsers[actor]!.call(method, path, opts);
}

// Fresh targets for destructive routes.
const newUser = async () => (await admin.call('POST', '/api/v1/users', { body: { email: `u${uniq()}@example.com`, password: STRONG_PASSWORD } })).body.id as string;
const newProject = async () => {
  const slug = `p${uniq()}`.toLowerCase();
  await admin.call('POST', '/api/v1/projects', { body: { slug, name: slug } });
  return slug;
};
const newMembership = async () => {
  const user = await newUser();
  return (await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: user, role: 'viewer' } })).body.id as string;
};
const newInvitation = async () => (await admin.call('POST', '/api/v1/projects/default/invitations', { body: { email: `i${uniq()}@example.com` } })).body;

/** Expected status for each caller; omitted callers use `rest`. */
type Expect = Partial<Record<Actor, number>> & { rest: number };
interface Row {
  name: string;
  /** The request `actor` makes (most rows ignore who asks; per-user rows make the caller's own target). */
  request: (actor: Actor) => Promise<{ method: string; path: string; opts?: CallOptions }>;
  expect: Expect;
}

const onlyGlobalAdmin = (ok: number, keyOk = 403): Expect => ({ anonymous: 401, global_admin: ok, key_with_scope: keyOk, rest: 403 });
const projectRead: Expect = { anonymous: 401, other_project: 404, key_without_scope: 403, rest: 200 };
const projectAdmin = (ok: number): Expect => ({ anonymous: 401, viewer: 403, operator: 403, other_project: 404, project_admin: ok, global_admin: ok, rest: 403 });
/** Operator routes of the default project: keys need commands:write (admin:* here). */
const projectOperator = (ok: number): Expect => ({ anonymous: 401, viewer: 403, other_project: 404, key_without_scope: 403, rest: ok });
const newBulkJob = async () =>
  (await admin.call('POST', '/api/v1/projects/default/bulk-jobs', { body: { kind: 'retry', filter: { name: 'matrix' }, agent_id: ops.lpAgent } })).body.id as string;
const commands = '/api/v1/projects/default/commands';
/** Statistics reads: members of the project and API keys with tasks:read (the narrow key has it). */
const statsRead: Expect = { anonymous: 401, other_project: 404, rest: 200 };
/** A failure group of the default project (rolled up as ingest does). */
let groupKey: string | null = null;
const failureGroup = async () => {
  if (groupKey) return groupKey;
  const { id } = (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`))[0]!;
  const micros = Date.now() * 1000;
  const data = { task_name: 'app.matrix', exception: 'ValueError', exception_message: 'matrix 1' };
  await svc.ctx.db.tx((tx) => rollupTaskEvents(tx, id, [{ id: crypto.randomUUID(), engine: 'celery', kind: 'task.failed', taskId: 'matrix-1', occurredAt: isoMicros(micros), occurredMicros: micros, data }]));
  return (groupKey = failureGroupOf(data).key);
};
const anySession = (ok = 200): Expect => ({ anonymous: 401, key_with_scope: 403, key_without_scope: 403, rest: ok });
/** Task explorer reads: members of the project and API keys with tasks:read (the narrow key has it). */
const taskRead: Expect = { anonymous: 401, other_project: 404, rest: 200 };
/** `<engine>/<task_id>` of a task of the default project (the operator fixture stores some). */
const matrixTask = async () => {
  const [t] = await svc.ctx.db.all<{ engine: string; task_id: string }>(sql`SELECT engine, task_id FROM tasks WHERE name = 'app.tasks.matrix' ORDER BY id LIMIT 1`);
  return `${t!.engine}/${encodeURIComponent(t!.task_id)}`;
};

/** Schedule routes of the default project; a fresh schedule (svc's own scheduler) per call that changes one. */
const schedules = '/api/v1/projects/default/schedules';
const scheduleBody = () => ({ name: 'matrix', engine: 'celery', kind: 'interval', expression: '60', task_name: 'app.tasks.matrix' });
const newSchedule = async () => (await admin.call('POST', schedules, { body: { ...scheduleBody(), name: `s-${uniq()}` } })).body.id as string;
const scheduleOperator = (ok: number): Expect => ({ anonymous: 401, viewer: 403, other_project: 404, key_without_scope: 403, rest: ok });

/** Saved views: every member keeps their own; keys read them with tasks:read and never write (session only). */
const savedViews = '/api/v1/projects/default/saved-views';
const ownViewWrite = (ok: number): Expect => ({ anonymous: 401, other_project: 404, key_with_scope: 403, key_without_scope: 403, rest: ok });
/** A view of the caller's own in the default project (the administrator's for callers without a member session). */
const newOwnView = async (actor: Actor) => {
  const who = actor === 'other_project' || !browsers[actor] ? admin : browsers[actor]!;
  return (await who.call('POST', savedViews, { body: { page: 'tasks', name: `v-${uniq()}`, query: 'state=failure' } })).body.id as string;
};

const ROWS: Row[] = [
  // users
  { name: 'GET /users', request: async () => ({ method: 'GET', path: '/api/v1/users' }), expect: onlyGlobalAdmin(200, 200) },
  { name: 'GET /users/{id}', request: async () => ({ method: 'GET', path: `/api/v1/users/${await newUser()}` }), expect: onlyGlobalAdmin(200, 200) },
  {
    name: 'POST /users',
    request: async () => ({ method: 'POST', path: '/api/v1/users', opts: { body: { email: `n${uniq()}@example.com`, password: STRONG_PASSWORD } } }),
    expect: onlyGlobalAdmin(201),
  },
  { name: 'PATCH /users/{id}', request: async () => ({ method: 'PATCH', path: `/api/v1/users/${await newUser()}`, opts: { body: { display_name: 'X' } } }), expect: onlyGlobalAdmin(200) },
  {
    name: 'POST /users/{id}/password',
    request: async () => ({ method: 'POST', path: `/api/v1/users/${await newUser()}/password`, opts: { body: { new_password: 'Yet-Another-Pass-42' } } }),
    expect: onlyGlobalAdmin(200),
  },
  { name: 'DELETE /users/{id}', request: async () => ({ method: 'DELETE', path: `/api/v1/users/${await newUser()}` }), expect: onlyGlobalAdmin(200) },
  // admin
  { name: 'GET /admin/settings', request: async () => ({ method: 'GET', path: '/api/v1/admin/settings' }), expect: onlyGlobalAdmin(200) },
  { name: 'GET /admin/system/versions', request: async () => ({ method: 'GET', path: '/api/v1/admin/system/versions' }), expect: onlyGlobalAdmin(200) },
  { name: 'POST /admin/system/versions/check', request: async () => ({ method: 'POST', path: '/api/v1/admin/system/versions/check' }), expect: onlyGlobalAdmin(404) },
  // health reports: every signed-in user; keys need health:read (admin:* holds it)
  { name: 'GET /health/system', request: async () => ({ method: 'GET', path: '/api/v1/health/system' }), expect: { anonymous: 401, key_without_scope: 403, rest: 200 } },
  { name: 'GET /health/deep', request: async () => ({ method: 'GET', path: '/api/v1/health/deep' }), expect: { anonymous: 401, key_without_scope: 403, rest: 200 } },
  // projects
  { name: 'GET /projects', request: async () => ({ method: 'GET', path: '/api/v1/projects' }), expect: { anonymous: 401, key_without_scope: 403, rest: 200 } },
  {
    name: 'POST /projects',
    request: async () => ({ method: 'POST', path: '/api/v1/projects', opts: { body: { slug: `q${uniq()}`.toLowerCase(), name: 'Q' } } }),
    expect: onlyGlobalAdmin(201),
  },
  { name: 'GET /projects/{slug}', request: async () => ({ method: 'GET', path: '/api/v1/projects/default' }), expect: projectRead },
  { name: 'PATCH /projects/{slug}', request: async () => ({ method: 'PATCH', path: '/api/v1/projects/default', opts: { body: { description: 'd' } } }), expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 } },
  { name: 'DELETE /projects/{slug}', request: async () => ({ method: 'DELETE', path: `/api/v1/projects/${await newProject()}` }), expect: onlyGlobalAdmin(200) },
  // memberships
  { name: 'GET /projects/{slug}/memberships', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/memberships' }), expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 } },
  {
    name: 'POST /projects/{slug}/memberships',
    request: async () => ({ method: 'POST', path: '/api/v1/projects/default/memberships', opts: { body: { user_id: await newUser(), role: 'viewer' } } }),
    expect: { ...projectAdmin(201), key_with_scope: 403, key_without_scope: 403 },
  },
  {
    name: 'PATCH /projects/{slug}/memberships/{id}',
    request: async () => ({ method: 'PATCH', path: `/api/v1/projects/default/memberships/${await newMembership()}`, opts: { body: { role: 'operator' } } }),
    expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 },
  },
  {
    name: 'DELETE /projects/{slug}/memberships/{id}',
    request: async () => ({ method: 'DELETE', path: `/api/v1/projects/default/memberships/${await newMembership()}` }),
    expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 },
  },
  // invitations
  { name: 'GET /projects/{slug}/invitations', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/invitations' }), expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 } },
  {
    name: 'POST /projects/{slug}/invitations',
    request: async () => ({ method: 'POST', path: '/api/v1/projects/default/invitations', opts: { body: { email: `v${uniq()}@example.com` } } }),
    expect: { ...projectAdmin(201), key_with_scope: 403, key_without_scope: 403 },
  },
  {
    name: 'DELETE /projects/{slug}/invitations/{id}',
    request: async () => ({ method: 'DELETE', path: `/api/v1/projects/default/invitations/${(await newInvitation()).invitation.id}` }),
    expect: { ...projectAdmin(200), key_with_scope: 403, key_without_scope: 403 },
  },
  { name: 'GET /invitations/preview', request: async () => ({ method: 'GET', path: `/api/v1/invitations/preview?token=${(await newInvitation()).token}` }), expect: { rest: 200 } },
  // own account
  { name: 'GET /auth/me', request: async () => ({ method: 'GET', path: '/api/v1/auth/me' }), expect: anySession() },
  { name: 'GET /auth/sessions', request: async () => ({ method: 'GET', path: '/api/v1/auth/sessions' }), expect: anySession() },
  { name: 'GET /auth/mfa/status', request: async () => ({ method: 'GET', path: '/api/v1/auth/mfa/status' }), expect: anySession() },
  { name: 'GET /auth/mfa/trusted-devices', request: async () => ({ method: 'GET', path: '/api/v1/auth/mfa/trusted-devices' }), expect: anySession() },
  { name: 'GET /api-keys', request: async () => ({ method: 'GET', path: '/api/v1/api-keys' }), expect: anySession() },
  { name: 'GET /api-keys/scopes', request: async () => ({ method: 'GET', path: '/api/v1/api-keys/scopes' }), expect: anySession() },
  // single sign-on (not configured here: its browser routes answer 404 to everyone)
  { name: 'GET /auth/sso/config', request: async () => ({ method: 'GET', path: '/api/v1/auth/sso/config' }), expect: { rest: 200 } },
  { name: 'GET /auth/sso/login', request: async () => ({ method: 'GET', path: '/api/v1/auth/sso/login' }), expect: { rest: 404 } },
  { name: 'GET /auth/sso/callback', request: async () => ({ method: 'GET', path: '/api/v1/auth/sso/callback?state=x&code=y' }), expect: { rest: 404 } },
  { name: 'GET /auth/proxy/login', request: async () => ({ method: 'GET', path: '/api/v1/auth/proxy/login' }), expect: { rest: 404 } },
  { name: 'GET /auth/sso/identities', request: async () => ({ method: 'GET', path: '/api/v1/auth/sso/identities' }), expect: anySession() },
  { name: 'DELETE /auth/sso/identities/{id}', request: async () => ({ method: 'DELETE', path: `/api/v1/auth/sso/identities/${crypto.randomUUID()}` }), expect: anySession(404) },
  { name: 'GET /setup/status', request: async () => ({ method: 'GET', path: '/api/v1/setup/status' }), expect: { anonymous: 401, key_without_scope: 200, rest: 200 } },
  // activity
  { name: 'GET /activity', request: async () => ({ method: 'GET', path: '/api/v1/activity?limit=200' }), expect: anySession() },
  // task statistics (any member; API keys with tasks:read)
  { name: 'GET /projects/{slug}/stats', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/stats?window=7d' }), expect: statsRead },
  { name: 'GET /projects/{slug}/trends', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/trends?window=24h&bucket=1h' }), expect: statsRead },
  { name: 'GET /projects/{slug}/failure-groups', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/failure-groups' }), expect: statsRead },
  { name: 'GET /projects/{slug}/failure-groups/{key}/tasks', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/failure-groups/${await failureGroup()}/tasks` }), expect: statsRead },
  { name: 'GET /home', request: async () => ({ method: 'GET', path: '/api/v1/home' }), expect: { anonymous: 401, rest: 200 } },
  // the palette's look-up: every project the caller sees (API keys with tasks:read)
  { name: 'GET /lookup', request: async () => ({ method: 'GET', path: '/api/v1/lookup?q=matrix' }), expect: { anonymous: 401, rest: 200 } },
  // the live stream: browser sessions only; a plain GET (no WebSocket upgrade) is told to upgrade
  { name: 'GET /live', request: async () => ({ method: 'GET', path: '/api/v1/live' }), expect: { anonymous: 401, key_with_scope: 403, key_without_scope: 403, rest: 426 } },
  // the task explorer (any member; API keys with tasks:read, which the narrow key has)
  { name: 'GET /projects/{slug}/tasks', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/tasks?q=matrix&sort=runtime_ms&priority=high,low' }), expect: taskRead },
  { name: 'GET /projects/{slug}/tasks/export.csv', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/tasks/export.csv?q=matrix' }), expect: taskRead },
  // One row: NDJSON of one line is also a JSON document, which the test client parses.
  { name: 'GET /projects/{slug}/tasks/export.ndjson', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/tasks/export.ndjson?limit=1' }), expect: taskRead },
  { name: 'GET /projects/{slug}/tasks/{engine}/{task_id}', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/tasks/${await matrixTask()}` }), expect: taskRead },
  { name: 'GET /projects/{slug}/tasks/{engine}/{task_id}/tree', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/tasks/${await matrixTask()}/tree` }), expect: taskRead },
  { name: 'GET /projects/{slug}/tasks/{engine}/{task_id}/events', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/tasks/${await matrixTask()}/events?order=desc` }), expect: taskRead },
  { name: 'GET /projects/{slug}/workers', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/workers' }), expect: taskRead },
  { name: 'GET /projects/{slug}/workers/{worker}', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/workers/${encodeURIComponent('celery@matrix')}` }), expect: taskRead },
  { name: 'GET /projects/{slug}/queues', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/queues' }), expect: taskRead },
  // commands: reads (any member; keys need commands:read), the task commands and the generic issue route (operators;
  // the long-poll agent reports no inventory, so naming it admits the command)
  { name: 'GET /commands', request: async () => ({ method: 'GET', path: commands }), expect: projectRead },
  {
    name: 'POST /commands/retry-task',
    request: async () => ({ method: 'POST', path: `${commands}/retry-task`, opts: { body: { engine: 'celery', task_id: `matrix-${uniq()}`, agent_id: ops.lpAgent } } }),
    expect: projectOperator(202),
  },
  {
    name: 'POST /commands/cancel-task',
    request: async () => ({ method: 'POST', path: `${commands}/cancel-task`, opts: { body: { engine: 'celery', task_id: `matrix-${uniq()}`, agent_id: ops.lpAgent } } }),
    expect: projectOperator(202),
  },
  {
    name: 'POST /commands',
    request: async () => ({
      method: 'POST',
      path: commands,
      opts: { body: { action: 'reconcile_task', agent_id: ops.lpAgent, target_type: 'task', target_id: 'celery:matrix', parameters: { engine: 'celery', task_id: 'matrix' } } },
    }),
    expect: projectOperator(202),
  },
  // operator actions (viewer refused on every one)
  { name: 'POST /commands/restart-worker', request: async () => ({ method: 'POST', path: `${commands}/restart-worker`, opts: { body: { worker_name: 'celery@matrix' } } }), expect: projectOperator(202) },
  { name: 'POST /commands/pool-resize', request: async () => ({ method: 'POST', path: `${commands}/pool-resize`, opts: { body: { worker_name: 'celery@matrix', delta: 1 } } }), expect: projectOperator(202) },
  { name: 'POST /commands/add-consumer', request: async () => ({ method: 'POST', path: `${commands}/add-consumer`, opts: { body: { worker_name: 'celery@matrix', queue: 'q' } } }), expect: projectOperator(202) },
  { name: 'POST /commands/cancel-consumer', request: async () => ({ method: 'POST', path: `${commands}/cancel-consumer`, opts: { body: { worker_name: 'celery@matrix', queue: 'q' } } }), expect: projectOperator(202) },
  { name: 'POST /commands/rate-limit', request: async () => ({ method: 'POST', path: `${commands}/rate-limit`, opts: { body: { task_name: 'app.tasks.matrix', rate: '5/s', engine: 'celery' } } }), expect: projectOperator(202) },
  {
    name: 'POST /commands/requeue-dead-letter',
    request: async () => ({ method: 'POST', path: `${commands}/requeue-dead-letter`, opts: { body: { engine: 'celery', task_id: 'x', agent_id: ops.lpAgent } } }),
    expect: projectOperator(202),
  },
  { name: 'POST /commands/list-dead-letters', request: async () => ({ method: 'POST', path: `${commands}/list-dead-letters`, opts: { body: { engine: 'celery' } } }), expect: projectOperator(202) },
  {
    name: 'POST /commands/purge-queue/confirm-token',
    request: async () => ({ method: 'POST', path: `${commands}/purge-queue/confirm-token`, opts: { body: { queue: 'parked' } } }),
    expect: { ...projectAdmin(201), key_with_scope: 201 },
  },
  {
    // The token is the administrator's: any other caller allowed to purge is refused it (409).
    name: 'POST /commands/purge-queue',
    request: async () => {
      const token = (await admin.call('POST', `${commands}/purge-queue/confirm-token`, { body: { queue: 'parked' } })).body.confirm_token;
      return { method: 'POST', path: `${commands}/purge-queue`, opts: { body: { queue: 'parked', confirm_token: token } } };
    },
    expect: { ...projectAdmin(409), global_admin: 202, key_with_scope: 409 },
  },
  // bulk jobs and bulk delete
  { name: 'POST /bulk-jobs', request: async () => ({ method: 'POST', path: '/api/v1/projects/default/bulk-jobs', opts: { body: { kind: 'retry', filter: { name: 'matrix' }, agent_id: ops.lpAgent } } }), expect: projectOperator(201) },
  { name: 'GET /bulk-jobs', request: async () => ({ method: 'GET', path: '/api/v1/projects/default/bulk-jobs' }), expect: projectRead },
  { name: 'GET /bulk-jobs/{id}', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/bulk-jobs/${await newBulkJob()}` }), expect: projectRead },
  { name: 'GET /bulk-jobs/{id}/items', request: async () => ({ method: 'GET', path: `/api/v1/projects/default/bulk-jobs/${await newBulkJob()}/items` }), expect: projectRead },
  { name: 'POST /bulk-jobs/{id}/abort', request: async () => ({ method: 'POST', path: `/api/v1/projects/default/bulk-jobs/${await newBulkJob()}/abort` }), expect: projectOperator(200) },
  {
    name: 'POST /tasks/bulk-delete',
    request: async () => ({ method: 'POST', path: '/api/v1/projects/default/tasks/bulk-delete', opts: { body: { filter: { name: 'no-such-task' } } } }),
    expect: { ...projectAdmin(200), key_with_scope: 200 },
  },
  // schedules (reads: members; enable/disable/trigger: operators; definitions, import, resync: project admins; keys need schedules:*, admin:* here)
  { name: 'GET /projects/{slug}/schedules', request: async () => ({ method: 'GET', path: schedules }), expect: projectRead },
  {
    name: 'POST /projects/{slug}/schedules',
    request: async () => ({ method: 'POST', path: schedules, opts: { body: { ...scheduleBody(), name: `m-${uniq()}` } } }),
    expect: { ...projectAdmin(201), key_with_scope: 201 },
  },
  { name: 'GET /projects/{slug}/schedules/misfires', request: async () => ({ method: 'GET', path: `${schedules}/misfires` }), expect: projectRead },
  { name: 'GET /projects/{slug}/schedules/upcoming', request: async () => ({ method: 'GET', path: `${schedules}/upcoming` }), expect: projectRead },
  { name: 'GET /projects/{slug}/schedules/{id}/upcoming', request: async () => ({ method: 'GET', path: `${schedules}/${await newSchedule()}/upcoming` }), expect: projectRead },
  { name: 'GET /projects/{slug}/schedules/timezone', request: async () => ({ method: 'GET', path: `${schedules}/timezone` }), expect: projectRead },
  {
    name: 'PUT /projects/{slug}/schedules/timezone',
    request: async () => ({ method: 'PUT', path: `${schedules}/timezone`, opts: { body: { timezone: 'Europe/Berlin' } } }),
    expect: { ...projectAdmin(200), key_with_scope: 200 },
  },
  { name: 'POST /projects/{slug}/schedules/diff', request: async () => ({ method: 'POST', path: `${schedules}/diff`, opts: { body: { schedules: [scheduleBody()] } } }), expect: { ...projectAdmin(200), key_with_scope: 200 } },
  {
    name: 'POST /projects/{slug}/schedules/import',
    request: async () => ({ method: 'POST', path: `${schedules}/import`, opts: { body: { schedules: [{ ...scheduleBody(), name: `i-${uniq()}` }] } } }),
    expect: { ...projectAdmin(200), key_with_scope: 200 },
  },
  // No scheduler agent is online in this service: the admins' resync is refused with 409.
  { name: 'POST /projects/{slug}/schedules/resync', request: async () => ({ method: 'POST', path: `${schedules}/resync` }), expect: { ...projectAdmin(409), key_with_scope: 409 } },
  { name: 'GET /projects/{slug}/schedules/{id}', request: async () => ({ method: 'GET', path: `${schedules}/${await newSchedule()}` }), expect: projectRead },
  { name: 'GET /projects/{slug}/schedules/{id}/fires', request: async () => ({ method: 'GET', path: `${schedules}/${await newSchedule()}/fires` }), expect: projectRead },
  {
    name: 'PATCH /projects/{slug}/schedules/{id}',
    request: async () => ({ method: 'PATCH', path: `${schedules}/${await newSchedule()}`, opts: { body: { expression: '120' } } }),
    expect: { ...projectAdmin(200), key_with_scope: 200 },
  },
  { name: 'DELETE /projects/{slug}/schedules/{id}', request: async () => ({ method: 'DELETE', path: `${schedules}/${await newSchedule()}` }), expect: { ...projectAdmin(200), key_with_scope: 200 } },
  { name: 'POST /projects/{slug}/schedules/{id}/enable', request: async () => ({ method: 'POST', path: `${schedules}/${await newSchedule()}/enable` }), expect: scheduleOperator(200) },
  { name: 'POST /projects/{slug}/schedules/{id}/disable', request: async () => ({ method: 'POST', path: `${schedules}/${await newSchedule()}/disable` }), expect: scheduleOperator(200) },
  // svc's own schedule: the fire is buffered (no agent runs its engine), 202.
  { name: 'POST /projects/{slug}/schedules/{id}/trigger', request: async () => ({ method: 'POST', path: `${schedules}/${await newSchedule()}/trigger` }), expect: scheduleOperator(202) },  // saved views (each caller's own)
  { name: 'GET /projects/{slug}/saved-views', request: async () => ({ method: 'GET', path: `${savedViews}?page=tasks` }), expect: taskRead },
  {
    name: 'POST /projects/{slug}/saved-views',
    request: async () => ({ method: 'POST', path: savedViews, opts: { body: { page: 'tasks', name: `v-${uniq()}`, query: 'sort=name&order=asc' } } }),
    expect: ownViewWrite(201),
  },
  {
    name: 'PATCH /projects/{slug}/saved-views/{id}',
    request: async (actor) => ({ method: 'PATCH', path: `${savedViews}/${await newOwnView(actor)}`, opts: { body: { name: `r-${uniq()}` } } }),
    expect: ownViewWrite(200),
  },
  { name: 'DELETE /projects/{slug}/saved-views/{id}', request: async (actor) => ({ method: 'DELETE', path: `${savedViews}/${await newOwnView(actor)}` }), expect: ownViewWrite(200) },
];

describe('role matrix', () => {
  for (const row of ROWS) {
    test(row.name, async () => {
      const got: Record<string, number> = {};
      const want: Record<string, number> = {};
      for (const actor of ACTORS) {
        const { method, path, opts } = await row.request(actor);
        const res = await call(actor, method, path, opts);
        got[actor] = res.status;
        want[actor] = row.expect[actor] ?? row.expect.rest;
        // Things no answer may ever contain.
        for (const s of secrets) expect(res.text.includes(s)).toBe(false);
        expect(res.text).not.toMatch(/\$argon2id\$|token_hash|password_hash|mfa_secret|csrf_token/);
        if (res.status >= 400) expect(Object.keys(res.body)).toEqual(expect.arrayContaining(['error', 'message', 'details']));
      }
      expect(got).toEqual(want);
    });
  }
});

describe('what each caller sees', () => {
  test('activity: admins see every row with source_ip; members see only their projects and never source_ip; others nothing of ours', async () => {
    // Filtered: the rows above leave more than a page of newer rows.
    const adminFeed = (await call('global_admin', 'GET', '/api/v1/activity?limit=200&action_prefix=test.')).body.items;
    expect(adminFeed.some((i: any) => i.action === 'test.service_wide' && i.source_ip === '203.0.113.9')).toBe(true);
    for (const actor of ['viewer', 'operator', 'project_admin'] as const) {
      const items = (await call(actor, 'GET', '/api/v1/activity?limit=200')).body.items;
      expect(items.length).toBeGreaterThan(0);
      expect(items.every((i: any) => i.project_slug === 'default' && i.source_ip === null)).toBe(true);
    }
    const other = (await call('other_project', 'GET', '/api/v1/activity?limit=200')).body.items;
    expect(other.every((i: any) => i.project_slug === 'elsewhere')).toBe(true);
    expect((await call('viewer', 'GET', '/api/v1/activity?project_slug=elsewhere')).body.items).toEqual([]);
    expect((await call('viewer', 'GET', '/api/v1/activity?project_slug=no-such-project')).body.items).toEqual([]);
  });

  test('user and member lists expose no secrets or hashes', async () => {
    const stored = await svc.ctx.db.all<{ password_hash: string }>(sql`SELECT password_hash FROM users`);
    const users = (await call('global_admin', 'GET', '/api/v1/users?limit=500')).text;
    const members = (await call('global_admin', 'GET', '/api/v1/projects/default/memberships')).text;
    for (const { password_hash } of stored) {
      expect(users).not.toContain(password_hash);
      expect(members).not.toContain(password_hash);
    }
    const keysList = (await call('global_admin', 'GET', '/api/v1/api-keys')).body;
    expect(keysList.every((k: any) => !('token' in k) && !('token_hash' in k))).toBe(true);
    const settings = (await call('global_admin', 'GET', '/api/v1/admin/settings')).body.settings;
    expect(settings.find((s: any) => s.name === 'SVC_SECRET').value).toBe('***');
  });
});
