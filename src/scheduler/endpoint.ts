// The service's scheduler endpoint: what `svc scheduler` processes talk to.
// HTTPS with mutual TLS on a listener of its own (SVC_SCHEDULER_GRPC_BIND_HOST
// and _PORT; the spec calls it the gRPC endpoint, see docs/spec-deviations.md):
// a client certificate chaining to the scheduler CA is required by the TLS
// handshake, and its common name must be in SVC_SCHEDULER_GRPC_ALLOWED_CNS
// (403 cn_not_allowed otherwise). It is served by node:http2's secure server
// (HTTP/1.1 and HTTP/2), the one server in Bun that shows a request's peer
// certificate. JSON in and out, the API's error envelope.
//
//   GET    /scheduler/v1/ping                      who am I, the service's clock
//   GET    /scheduler/v1/schedules?token=<t>        svc-scheduler schedules (unchanged: {changed: false})
//   POST   /scheduler/v1/fire                       {schedule_id, scheduled_for}: fire one run, once
//   POST   /scheduler/v1/schedules                  {project, ...definition}: add
//   GET|PATCH|DELETE /scheduler/v1/schedules/{id}
//   POST   /scheduler/v1/schedules/{id}/enable|disable|trigger
//   GET    /scheduler/v1/schedules/{id}/fires?limit=n
//   POST   /scheduler/v1/import                     {project, schedules, mode?, source_filter?, dry_run?}
import http2, { type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { existsSync, readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Actor } from '../auth/actor.ts';
import { ApiError, notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import { findProjectBySlug, SLUG_RE } from '../projects/service.ts';
import { fireRun, ownedList, ownedToken, type Scope } from '../schedules/own.ts';
import { ImportBody, ScheduleCreate, SchedulePatch } from '../schedules/schemas.ts';
import {
  SVC_SCHEDULER,
  applyImport,
  createSchedule,
  deleteSchedule,
  diffImport,
  getSchedule,
  listFires,
  patchSchedule,
  setEnabled,
  triggerNow,
} from '../schedules/service.ts';
import type { AppContext } from '../server/context.ts';
import { VERSION } from '../version.ts';
import { allowedCns, caPaths, cnBindings, ensureCa, ensureServerCert, pkiDir } from './pki.ts';
import { INSTANCE_HEADER, VERSION_HEADER } from './wire.ts';

const log = logger('scheduler.endpoint');
const MAX_BODY = 16 * 1024 * 1024;
const PREFIX = '/scheduler/v1';

export interface SchedulerEndpoint {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** What a scheduler instance last said (the endpoint's process only). */
export interface InstanceSeen {
  instance: string;
  cn: string;
  version: string | null;
  last_seen_at: string;
  fires: number;
  duplicates: number;
}

function tlsMaterial(ctx: AppContext): Promise<{ cert: string; key: string; ca: string }> {
  const c = ctx.config;
  const dir = pkiDir(ctx.paths.home);
  return (async () => {
    let cert: string;
    let key: string;
    if (c.SVC_SCHEDULER_GRPC_TLS_CERT !== '') {
      cert = readFileSync(c.SVC_SCHEDULER_GRPC_TLS_CERT, 'utf8');
      key = readFileSync(c.SVC_SCHEDULER_GRPC_TLS_KEY, 'utf8');
    } else {
      const names = c.SVC_PUBLIC_URL !== '' ? [new URL(c.SVC_PUBLIC_URL).hostname] : [];
      if (c.SVC_SCHEDULER_GRPC_BIND_HOST !== '0.0.0.0' && c.SVC_SCHEDULER_GRPC_BIND_HOST !== '::') names.push(c.SVC_SCHEDULER_GRPC_BIND_HOST);
      ({ cert, key } = await ensureServerCert(dir, names));
    }
    let caFile = c.SVC_SCHEDULER_GRPC_TLS_CA;
    if (caFile === '') caFile = existsSync(caPaths(dir).cert) ? caPaths(dir).cert : (await ensureCa(dir)).certFile;
    return { cert, key, ca: readFileSync(caFile, 'utf8') };
  })();
}

class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

function send(res: Http2ServerResponse, status: number, body: unknown): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

function readBody(req: Http2ServerRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new ApiError(413, 'payload_too_large', `request body exceeds ${MAX_BODY} bytes`, { limit_bytes: MAX_BODY }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (size === 0) return resolve({});
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new ApiError(400, 'invalid_json', 'the body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

function checked<T>(schema: TSchema, value: unknown): T {
  const errors = [...Value.Errors(schema, value)].slice(0, 20);
  if (errors.length > 0) throw validationFailed(errors.map((e) => ({ path: e.path || '/', message: e.message, location: 'body' })));
  return value as T;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Opens the scheduler endpoint when SVC_SCHEDULER_GRPC_ENABLED is on (else null); closed at shutdown. */
export async function startSchedulerEndpoint(ctx: AppContext): Promise<SchedulerEndpoint | null> {
  const c = ctx.config;
  if (!c.SVC_SCHEDULER_GRPC_ENABLED) return null;
  const allowed = allowedCns(c.SVC_SCHEDULER_GRPC_ALLOWED_CNS);
  const bindings = cnBindings(c.SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS);
  if (allowed.size === 0) log.warn({}, 'SVC_SCHEDULER_GRPC_ALLOWED_CNS is empty: every scheduler will be refused');
  const tls = await tlsMaterial(ctx);
  const seen = new Map<string, InstanceSeen>();
  const refusedAt = new Map<string, number>();

  const scopeOf = async (cn: string): Promise<Scope> => {
    const slugs = bindings.get(cn);
    if (!slugs) return null;
    const ids: string[] = [];
    for (const slug of slugs) {
      const p = await findProjectBySlug(ctx.db, slug);
      if (p?.is_active) ids.push(p.id);
    }
    return ids;
  };

  const projectIn = async (scope: Scope, slug: unknown): Promise<{ id: string; slug: string }> => {
    if (typeof slug !== 'string' || !SLUG_RE.test(slug)) throw validationFailed([{ path: '/project', message: 'must be a project slug', location: 'body' }]);
    const p = await findProjectBySlug(ctx.db, slug);
    if (!p || !p.is_active || (scope !== null && !scope.includes(p.id))) throw notFound('project');
    return p;
  };

  /** A svc-scheduler schedule within the scope: its project. */
  const ownedOne = async (scope: Scope, id: string): Promise<{ projectId: string }> => {
    if (!UUID_RE.test(id)) throw notFound('schedule');
    const list = await ownedList(ctx.db, scope);
    const s = list.find((x) => x.id === id);
    if (!s) throw notFound('schedule');
    return { projectId: s.project_id };
  };

  async function route(req: Http2ServerRequest, cn: string, actor: Actor, instance: string | null): Promise<Reply> {
    const url = new URL(req.url ?? '/', 'https://scheduler');
    const path = url.pathname.replace(/\/+$/, '');
    const method = req.method ?? 'GET';
    const scope = await scopeOf(cn);
    if (!path.startsWith(PREFIX)) throw notFound('route');
    const rest = path.slice(PREFIX.length).split('/').filter(Boolean);
    const [a, id, verb] = rest;
    if (method === 'GET' && a === 'ping' && rest.length === 1) {
      return new Reply(200, { ok: true, version: VERSION, cn, instance, server_time: isoMicros(nowMicros()), projects: scope === null ? null : scope.length });
    }
    if (method === 'POST' && a === 'fire' && rest.length === 1) {
      const body = (await readBody(req)) as { schedule_id?: unknown; scheduled_for?: unknown };
      if (typeof body.schedule_id !== 'string' || !UUID_RE.test(body.schedule_id)) throw validationFailed([{ path: '/schedule_id', message: 'must be a schedule id', location: 'body' }]);
      if (typeof body.scheduled_for !== 'string') throw validationFailed([{ path: '/scheduled_for', message: 'is required', location: 'body' }]);
      const who = instance ?? cn;
      const entry = seen.get(who);
      try {
        const result = await fireRun(ctx, { scheduleId: body.schedule_id, scheduledFor: body.scheduled_for, actor, scope });
        if (entry) entry.fires++;
        return new Reply(201, result);
      } catch (e) {
        if (e instanceof ApiError && e.error === 'already_fired' && entry) entry.duplicates++;
        throw e;
      }
    }
    if (a === 'schedules') {
      if (rest.length === 1 && method === 'GET') {
        const token = await ownedToken(ctx.db);
        if (url.searchParams.get('token') === token) return new Reply(200, { token, changed: false });
        return new Reply(200, { token, changed: true, server_time: isoMicros(nowMicros()), fire_buffer_seconds: c.SVC_SCHEDULE_FIRE_BUFFER_SECONDS, schedules: await ownedList(ctx.db, scope) });
      }
      if (rest.length === 1 && method === 'POST') {
        const body = (await readBody(req)) as Record<string, unknown>;
        const project = await projectIn(scope, body.project);
        const { project: _, ...definition } = body;
        const input = checked<ScheduleCreate>(ScheduleCreate, { ...definition, scheduler: SVC_SCHEDULER });
        return new Reply(201, await createSchedule(ctx, project.id, input, actor));
      }
      if (id === undefined) throw notFound('route');
      const { projectId } = await ownedOne(scope, id);
      if (rest.length === 2 && method === 'GET') return new Reply(200, await getSchedule(ctx.db, projectId, id));
      if (rest.length === 2 && method === 'PATCH') return new Reply(200, await patchSchedule(ctx, projectId, id, checked<SchedulePatch>(SchedulePatch, await readBody(req)), actor));
      if (rest.length === 2 && method === 'DELETE') {
        await deleteSchedule(ctx, projectId, id, actor);
        return new Reply(200, { success: true });
      }
      if (rest.length === 3 && method === 'GET' && verb === 'fires') {
        const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 100) || 100, 1), 500);
        return new Reply(200, await listFires(ctx.db, projectId, id, limit));
      }
      if (rest.length === 3 && method === 'POST' && (verb === 'enable' || verb === 'disable')) return new Reply(200, await setEnabled(ctx, projectId, id, verb === 'enable', actor));
      if (rest.length === 3 && method === 'POST' && verb === 'trigger') return new Reply(202, await triggerNow(ctx, projectId, id, actor));
    }
    if (method === 'POST' && a === 'import' && rest.length === 1) {
      const body = (await readBody(req)) as Record<string, unknown>;
      const project = await projectIn(scope, body.project);
      const { project: _, dry_run: dryRun, ...rest2 } = body;
      const entries = Array.isArray(rest2.schedules) ? rest2.schedules.map((e) => (typeof e === 'object' && e !== null ? { ...e, scheduler: SVC_SCHEDULER } : e)) : rest2.schedules;
      const input = checked<ImportBody>(ImportBody, { ...rest2, schedules: entries });
      return new Reply(200, dryRun === true ? await diffImport(ctx.db, project.id, input) : await applyImport(ctx, project.id, input, actor));
    }
    throw notFound('route');
  }

  const handler = (req: Http2ServerRequest, res: Http2ServerResponse): void => {
    void (async () => {
      const socket = req.socket as unknown as TLSSocket;
      let cn: string | null = null;
      try {
        const peer = socket.getPeerCertificate?.();
        const raw = peer?.subject?.CN as unknown;
        cn = Array.isArray(raw) ? (raw[0] ?? null) : typeof raw === 'string' ? raw : null;
      } catch {
        cn = null;
      }
      if (!socket.authorized || !cn) return send(res, 401, { error: 'client_certificate_required', message: 'a client certificate from the scheduler CA is required', details: {} });
      if (!allowed.has(cn)) {
        const last = refusedAt.get(cn) ?? 0;
        if (Date.now() - last > 60_000) {
          refusedAt.set(cn, Date.now());
          log.warn({ cn, address: socket.remoteAddress }, 'scheduler refused: its certificate common name is not in SVC_SCHEDULER_GRPC_ALLOWED_CNS');
        }
        return send(res, 403, { error: 'cn_not_allowed', message: `certificate common name ${JSON.stringify(cn)} is not in SVC_SCHEDULER_GRPC_ALLOWED_CNS`, details: { cn } });
      }
      const instanceHeader = req.headers[INSTANCE_HEADER];
      const instance = typeof instanceHeader === 'string' && instanceHeader.length <= 128 ? instanceHeader : null;
      const who = instance ?? cn;
      const entry = seen.get(who) ?? { instance: who, cn, version: null, last_seen_at: '', fires: 0, duplicates: 0 };
      entry.last_seen_at = isoMicros(nowMicros());
      const version = req.headers[VERSION_HEADER];
      if (typeof version === 'string') entry.version = version.slice(0, 64);
      seen.set(who, entry);
      const actor: Actor = { user_id: null, api_key_id: null, source_ip: socket.remoteAddress ?? null, user_agent: `svc-scheduler (CN=${cn}${instance ? `, instance ${instance}` : ''})` };
      try {
        const reply = await route(req, cn, actor, instance);
        send(res, reply.status, reply.body);
      } catch (e) {
        if (e instanceof ApiError) return send(res, e.status, e.body());
        log.error({ err: describeError(e), cn }, 'scheduler endpoint request failed');
        send(res, 500, { error: 'internal_error', message: 'the request failed on the service', details: {} });
      }
    })();
  };

  const server = http2.createSecureServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true, allowHTTP1: true }, handler);
  server.on('tlsClientError', () => {
    /* a client without an acceptable certificate: the handshake already refused it */
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(c.SVC_SCHEDULER_GRPC_BIND_PORT, c.SVC_SCHEDULER_GRPC_BIND_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : c.SVC_SCHEDULER_GRPC_BIND_PORT;
  const host = c.SVC_SCHEDULER_GRPC_BIND_HOST === '0.0.0.0' || c.SVC_SCHEDULER_GRPC_BIND_HOST === '::' ? 'localhost' : c.SVC_SCHEDULER_GRPC_BIND_HOST;
  const url = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log.info({ url, allowed_cns: [...allowed] }, 'scheduler endpoint listening (mutual TLS)');
  const endpoint: SchedulerEndpoint = {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(resolve, 2000).unref?.();
      }),
  };
  ctx.lifecycle.onShutdown('scheduler-endpoint', () => endpoint.close());
  schedulerInstances = () => [...seen.values()];
  return endpoint;
}

/** Scheduler instances seen by this process's endpoint (empty when it holds none). */
export let schedulerInstances = (): InstanceSeen[] => [];
