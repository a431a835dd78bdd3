// GET /api/v1/openapi.json: the OpenAPI 3.1 document of every route, written
// from the routes' contracts (http/contract.ts): the same TypeBox schemas that
// validate the inputs, the access rule the guard enforces, the failures it and
// the inputs imply, and each route's own. No UI is served (no CDN assets in a
// self-hosted binary); point any OpenAPI viewer or client generator at it.
import { Type, type TSchema } from '@sinclair/typebox';
import { VERSION } from '../version.ts';
import { ErrorEnvelope, HANDLER_BOUNDS, contractOf, failuresOf, type Contract } from './contract.ts';
import { CSRF_HEADER_NAME, SESSION_COOKIE_NAME } from './names.ts';

type Json = Record<string, unknown>;

export interface RouteInfo {
  method: string;
  path: string;
  hooks: { detail?: unknown };
}

const SECURITY_SCHEMES = {
  session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE_NAME, description: 'Browser session (POST /api/v1/auth/login sets it).' },
  csrf: { type: 'apiKey', in: 'header', name: CSRF_HEADER_NAME, description: 'Double-submit CSRF token (the svc_csrf cookie), on state-changing requests of a session.' },
  apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (svc_...), admitted where the route names its scope.' },
  agentToken: { type: 'http', scheme: 'bearer', description: "An agent's token (minted with the agent)." },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'The metrics token (svc metrics-token show).' },
};

const REASONS: Record<number, string> = {
  400: 'Bad request',
  401: 'Not authenticated',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Body is not JSON',
  422: 'Input failed validation',
  426: 'Upgrade required',
  429: 'Rate limited (Retry-After says when to try again)',
  502: 'An upstream check failed',
  503: 'Not available now (starting, or the database is down)',
};

/** Plain JSON Schema of a TypeBox schema; schemas with an $id become components. */
class Schemas {
  readonly components: Record<string, Json> = {};

  ref(schema: TSchema): Json {
    return this.walk(schema, true) as Json;
  }

  private walk(node: unknown, root: boolean): unknown {
    if (Array.isArray(node)) return node.map((n) => this.walk(n, false));
    if (!node || typeof node !== 'object') return node;
    const obj = node as Json;
    // Elysia's numeric query coercion: anyOf [numeric string, number] reads as the number.
    if (Array.isArray(obj.anyOf) && obj.anyOf.length === 2) {
      const [a, b] = obj.anyOf as Json[];
      if (a?.type === 'string' && (a.format === 'integer' || a.format === 'numeric') && (b?.type === 'integer' || b?.type === 'number')) return this.walk(b, false);
    }
    const out: Json = {};
    for (const [k, v] of Object.entries(obj)) {
      if (k === '$id' || k === HANDLER_BOUNDS) continue;
      out[k] = this.walk(v, false);
    }
    Object.assign(out, obj[HANDLER_BOUNDS]);
    const id = obj.$id;
    if (typeof id === 'string') {
      this.components[id] ??= out;
      return { $ref: `#/components/schemas/${id}` };
    }
    void root;
    return out;
  }
}

const toOpenApiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}');

function operationId(method: string, path: string): string {
  const words = `${method.toLowerCase()} ${path.replace(/^\/api\/v1/, '').replace(/[:{}]/g, '')}`.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1))).join('');
}

function security(c: Contract, method: string): Json[] | undefined {
  const a = c.access;
  if ('agent' in a) return [{ agentToken: [] }];
  if ('metrics' in a) return [{ metricsToken: [] }];
  if ('public' in a) return undefined;
  const session = method === 'GET' ? { session: [] } : { session: [], csrf: [] };
  const keys = a.user.scope && !a.user.freshMfa ? [{ apiKey: [a.user.scope] }] : [];
  return [session, ...keys, ...(a.metricsToken ? [{ metricsToken: [] }] : [])];
}

function parameters(c: Contract, schemas: Schemas): Json[] {
  const out: Json[] = [];
  const own = c.checkedByHandler ?? {};
  for (const [where, schema] of [['path', c.params], ['query', c.query ?? own.query], ['header', own.headers]] as const) {
    if (!schema) continue;
    const required = new Set((schema as { required?: string[] }).required ?? []);
    for (const [name, prop] of Object.entries((schema as { properties: Record<string, TSchema> }).properties)) {
      out.push({ name, in: where, required: where === 'path' || required.has(name), schema: schemas.ref(prop) });
    }
  }
  return out;
}

function responses(c: Contract, method: string, path: string, schemas: Schemas): Json {
  const out: Json = {};
  const status = String(c.status ?? 200);
  const media = c.media ?? 'application/json';
  out[status] = { description: 'Success', ...(c.status === 204 || c.status === 101 ? {} : { content: { [media]: { schema: schemas.ref(c.ok) } } }) };
  for (const [code, schema] of Object.entries(c.answers ?? {})) {
    out[code] = { description: REASONS[Number(code)] ?? 'Answer', content: { [media]: { schema: schemas.ref(schema!) } } };
  }
  const envelope = schemas.ref(ErrorEnvelope);
  for (const [code, errors] of [...failuresOf(c, method, path)].sort(([a], [b]) => a - b)) {
    const failure = { allOf: [envelope, { type: 'object', properties: { error: { enum: [...errors].sort() } } }] };
    // A status the route also answers with a body of its own (deep health's 503): either body.
    const own = c.answers?.[code];
    out[String(code)] = {
      description: `${REASONS[code] ?? 'Failure'}: ${[...errors].sort().join(', ')}${own ? ', or the answer described' : ''}`,
      content: { 'application/json': { schema: own ? { oneOf: [schemas.ref(own), failure] } : failure } },
      ...(code === 429 || code === 503 ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } } } : {}),
    };
  }
  return out;
}

/** The operations a created resource's answer leads to: each operation at `{path}/{param}` (and one
 * literal step further: `/{id}/enable`), the parameter taken from the answer's field of that name, else its `id`,
 * the others from the creating request's path. Schemathesis's stateful phase follows these links. */
function links(created: { path: string; c: Contract }, operations: readonly { path: string; id: string }[]): Json | undefined {
  const fields = (created.c.ok as { properties?: Record<string, unknown> }).properties ?? {};
  const out: Json = {};
  for (const target of operations) {
    const rest = target.path.startsWith(`${created.path}/`) ? target.path.slice(created.path.length + 1).split('/') : [];
    if (rest.length === 0 || rest.length > 2 || !/^\{\w+\}$/.test(rest[0]!) || (rest[1] !== undefined && rest[1].includes('{'))) continue;
    const param = rest[0]!.slice(1, -1);
    const field = param in fields ? param : 'id' in fields ? 'id' : undefined;
    if (!field) continue;
    const parameters: Json = { [param]: `$response.body#/${field}` };
    for (const [, name] of created.path.matchAll(/\{(\w+)\}/g)) parameters[name!] = `$request.path.${name}`;
    out[target.id] = { operationId: target.id, parameters };
  }
  return Object.keys(out).length ? out : undefined;
}

/** The OpenAPI document of `routes`; each must state its contract (a route without one throws: the document
 * would silently leave it out). */
export function openapiDocument(routes: readonly RouteInfo[]): Json {
  const schemas = new Schemas();
  schemas.ref(ErrorEnvelope);
  const paths: Record<string, Record<string, Json>> = {};
  const missing = routes.filter((r) => !contractOf(r.hooks.detail)).map((r) => `${r.method} ${r.path}`);
  if (missing.length) throw new Error(`routes without a contract (http/contract.ts), so missing from the OpenAPI document: ${missing.join(', ')}`);
  const created: { path: string; c: Contract; op: Json }[] = [];
  const operations: { path: string; id: string }[] = [];
  for (const route of routes) {
    const c = contractOf(route.hooks.detail)!;
    const method = route.method.toUpperCase();
    const detail = route.hooks.detail as { tags?: string[] };
    const op: Json = {
      operationId: operationId(method, route.path),
      summary: c.summary,
      ...(c.description ? { description: c.description } : {}),
      ...(detail.tags ? { tags: detail.tags } : {}),
    };
    const params = parameters(c, schemas);
    if (params.length) op.parameters = params;
    const body = c.body ?? c.checkedByHandler?.body;
    if (body) op.requestBody = { required: true, content: { 'application/json': { schema: schemas.ref(body) } } };
    op.responses = responses(c, method, route.path, schemas);
    const sec = security(c, method);
    if (sec) op.security = sec;
    const path = toOpenApiPath(route.path);
    (paths[path] ??= {})[method.toLowerCase()] = op;
    operations.push({ path, id: op.operationId as string });
    if (method === 'POST' && c.status === 201) created.push({ path, c, op });
  }
  for (const { path, c, op } of created) {
    const found = links({ path, c }, operations);
    if (found) ((op.responses as Json)['201'] as Json).links = found;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc',
      version: VERSION,
      description:
        'Control plane for background-task workers. Every failure is answered in one envelope (components/schemas/ErrorEnvelope); each operation lists the statuses and error codes it can answer.',
    },
    paths,
    components: { schemas: schemas.components, securitySchemes: SECURITY_SCHEMES },
  };
}

/** The document's own route: public, the document itself. */
export const openapiContract: Contract = {
  summary: 'This OpenAPI 3.1 document',
  access: { public: true },
  ok: Type.Object({ openapi: Type.String(), info: Type.Object({}), paths: Type.Object({}), components: Type.Object({}) }),
};
