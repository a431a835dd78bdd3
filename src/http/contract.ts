// A route's contract: who may call it, what it takes, what it answers on
// success and which failures it can answer. Routes state it once, in their
// options (`contract({...})`); the guard (access/guard.ts) enforces its access
// rule and http/openapi.ts writes /api/v1/openapi.json from it, so the
// document and the behaviour come from one declaration.
import { Type, type TObject, type TSchema } from '@sinclair/typebox';

/** What a signed-in caller must meet (enforced by access/guard.ts through auth/guards.ts). */
export interface AccessRule {
  /** API-key scope that admits a key here; without it API keys are refused. */
  scope?: string;
  /** Global administrators only (is_admin). */
  admin?: boolean;
  /** A session whose MFA verification is fresh (and therefore session-only). */
  freshMfa?: boolean;
  /** Reachable before the login's MFA step (MFA verify, logout, current user). */
  beforeMfa?: boolean;
}

export type Role = 'viewer' | 'operator' | 'admin';

/** Who may call a route. */
export type Access =
  /** Anyone; the handler may still look at a credential (setup status, invitation preview). */
  | { public: true }
  /** A signed-in user (session or API key) meeting `user`, and with `project` a role in the path's project;
   * with `metricsToken` the metrics bearer token admits too (monitoring reads health with it, even while the
   * database that holds sessions and keys is down). */
  | { user: AccessRule; project?: Role; projectRoleMayRise?: true; metricsToken?: true }
  /** An agent's bearer token (the long-poll transport: its own checks, its own failures in `errors`). */
  | { agent: true }
  /** The metrics bearer token. */
  | { metrics: true };

export interface Contract {
  summary: string;
  description?: string;
  access: Access;
  params?: TObject;
  query?: TObject;
  body?: TSchema;
  /** Inputs the handler checks itself, after its own access checks (the agent transports screen the
   * address and token first, as the specification orders): documented, not validated by the router. */
  checkedByHandler?: { body?: TSchema; query?: TObject; headers?: TObject };
  /** The success answer's body (JSON unless `media` says otherwise). */
  ok: TSchema;
  /** The success status; default 200 (101 for the WebSocket upgrade). */
  status?: 101 | 200 | 201 | 202 | 204;
  /** Media type of the success body; default application/json. */
  media?: string;
  /** Failures beyond those the access rule and the inputs imply: status -> the `error` codes. */
  errors?: Partial<Record<number, readonly string[]>>;
  /** Other answers whose body is not the error envelope (readiness's 503): status -> body. */
  answers?: Partial<Record<number, TSchema>>;
}

/** API, agent and metrics paths answer 503 `starting` until start-up has finished; health probes answer throughout. */
export const isStartGated = (path: string): boolean =>
  (path.startsWith('/api/') || path.startsWith('/ws/') || path === '/metrics') && !path.startsWith('/api/v1/health');

/** The one error envelope of every non-2xx JSON answer. */
export const ErrorEnvelope = Type.Object(
  {
    error: Type.String({ description: 'machine-readable code' }),
    message: Type.String({ description: 'what went wrong, for people' }),
    details: Type.Record(Type.String(), Type.Unknown()),
    request_id: Type.Optional(Type.String()),
    detail: Type.Optional(Type.String({ description: 'the specification-named reason where it names one' })),
  },
  { $id: 'ErrorEnvelope', additionalProperties: false },
);

/** `{"success": true}`: the answer of deletions and other acknowledgements. */
export const Success = Type.Object({ success: Type.Literal(true) }, { additionalProperties: false });

// A keyword TypeBox ignores: the stricter bounds a handler checks itself, which only the document shows.
export const HANDLER_BOUNDS = 'x-svc-handler-bounds';

/** A field the router takes as `schema` while the handler holds it to `bounds` (the password policy, whose
 * refusal names its own code, `password_too_short`; a project slug, lower-cased before it is checked): the document
 * shows the handler's bounds, so clients and fuzzers learn what passes, and the router's refusal does not hide the
 * handler's more precise one. */
export const handlerBounds = <T extends TSchema>(schema: T, bounds: { minLength?: number; maxLength?: number; pattern?: string }): T =>
  ({ ...schema, [HANDLER_BOUNDS]: bounds }) as T;

// A string key: Elysia merges a module's detail ({tags}) into each route's and keeps no symbol keys.
const CONTRACT = 'x-svc-contract';

type Given<T> = T extends TSchema ? T : undefined;

/** Elysia route options: the contract's input schemas (validated by Elysia) and the contract itself (for the document). */
export interface ContractOptions<C extends Contract> {
  params: Given<C['params']>;
  query: Given<C['query']>;
  body: Given<C['body']>;
  detail: { summary: string; description?: string; [CONTRACT]: Contract };
}

/** The Elysia options of a route with this contract (schemas for validation, the contract for the document). */
export function contract<C extends Contract>(c: C): ContractOptions<C> {
  const options: Record<string, unknown> = {
    detail: { summary: c.summary, ...(c.description ? { description: c.description } : {}), [CONTRACT]: c },
  };
  // Only the inputs the route has: Elysia reads a present key as a schema.
  if (c.params) options.params = c.params;
  if (c.query) options.query = c.query;
  if (c.body) options.body = c.body;
  return options as unknown as ContractOptions<C>;
}

/** The contract stated in a route's options, if any. */
export const contractOf = (detail: unknown): Contract | undefined =>
  detail && typeof detail === 'object' ? (detail as { [CONTRACT]?: Contract })[CONTRACT] : undefined;

/** Every failure a route can answer, status -> codes: its own plus those its access rule and inputs imply. */
export function failuresOf(c: Contract, method: string, path: string): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>();
  const add = (status: number, ...codes: string[]) => {
    const set = out.get(status) ?? new Set<string>();
    for (const code of codes) set.add(code);
    out.set(status, set);
  };
  // Every route: the Host allow-list; API routes also the start-up gate.
  add(400, 'host_not_allowed');
  if (isStartGated(path)) add(503, 'starting');
  // Whatever reads the database answers 503 while it cannot be reached (the probes answer for themselves).
  if (path !== '/api/v1/health' && path !== '/api/v1/health/ready') add(503, 'database_unavailable');
  const own = c.checkedByHandler ?? {};
  if (c.params || c.query || c.body || own.body || own.query || own.headers) add(422, 'validation_failed');
  if (c.body || own.body) {
    add(400, 'invalid_json');
    add(413, 'payload_too_large');
    add(415, 'unsupported_media_type');
  }
  const a = c.access;
  if ('user' in a) {
    add(401, 'unauthenticated', 'invalid_api_key');
    if (!a.user.beforeMfa) add(401, 'mfa_required');
    // API keys: refused outright unless the rule names a scope (and never on fresh-MFA routes).
    add(403, a.user.scope && !a.user.freshMfa ? 'insufficient_scope' : 'api_key_not_allowed');
    if (method !== 'GET') add(403, 'csrf_failed');
    if (a.user.admin) add(403, 'admin_required');
    // mfa_reverify_sso: MFA asserted by the identity provider, re-verified there (auth/guards.ts).
    if (a.user.freshMfa) add(403, 'mfa_enrollment_required', 'mfa_reverify_required', 'mfa_reverify_sso');
    if (a.project) {
      add(404, 'not_found');
      if (a.project !== 'viewer' || a.projectRoleMayRise) add(403, 'insufficient_role');
    }
  }
  if ('metrics' in a) add(401, 'unauthenticated');
  for (const [status, codes] of Object.entries(c.errors ?? {})) add(Number(status), ...(codes ?? []));
  return out;
}
