// The dashboard's one way to the API: same-origin fetch with the session cookie, the CSRF header on every
// state-changing request, every failure turned into an ApiError carrying the envelope's readable message, and
// the two recoveries the server asks for: a lost session (back to the login page) and a stale MFA verification
// (ask for the authenticator code, verify, retry the request once; or confirm at the identity provider).
import { takeEarly } from './early.ts';
import { ACCEPT_JSON, answerOf, apiUrl, type Answer, type Query } from './url.ts';

export interface FieldError {
  path: string;
  message: string;
  code?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** Field messages of a 422 (`details.fields`), paths like `/password`. */
  get fields(): FieldError[] {
    const fields = this.details.fields;
    return Array.isArray(fields) ? (fields as FieldError[]).filter((f) => typeof f?.message === 'string') : [];
  }

  fieldMessage(name: string): string | undefined {
    return this.fields.find((f) => f.path === `/${name}`)?.message;
  }
}

/** What the app plugs in: where to go when the session is gone, and how to get a fresh MFA verification. */
interface Recovery {
  /** The session ended (`unauthenticated`) or still waits for its MFA step (`mfa_required`). */
  signedOut(code: string): void;
  /** Resolves true once the user passed POST /auth/mfa/verify, false when they gave up. For
   * `mfa_reverify_sso` the user confirms at the identity provider instead, which leaves the page. */
  reverify(refusal: ApiError): Promise<boolean>;
}

let recovery: Recovery = { signedOut: () => {}, reverify: async () => false };
export const setRecovery = (r: Recovery): void => {
  recovery = r;
};

export interface CallOptions {
  body?: unknown;
  query?: Query;
  /** Calls that are fine without a session (login, previews): a 401 is only an error, not a sign-out. */
  anonymous?: boolean;
  /** Statuses besides 2xx whose JSON body is the answer rather than an error envelope (GET /health/deep answers
   * 503 with its whole report when a check failed). A body that is not JSON, or is an error envelope, still fails. */
  answerStatuses?: readonly number[];
  /** More request headers (an issuing route's `Idempotency-Key`). */
  headers?: Record<string, string>;
}

/** The `svc_csrf` cookie (readable by the page on purpose: double-submit CSRF). */
function csrfToken(): string | null {
  for (const part of document.cookie.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === 'svc_csrf') return decodeURIComponent(rest.join('='));
  }
  return null;
}

/** Any non-2xx answer as an ApiError; a body that is not our envelope (a proxy's HTML page) still reads well. */
function toError(status: number, body: unknown): ApiError {
  const env = body as { error?: unknown; message?: unknown; details?: unknown } | null;
  if (env && typeof env.error === 'string') {
    const message = typeof env.message === 'string' && env.message ? env.message : env.error.replace(/_/g, ' ');
    const details = env.details && typeof env.details === 'object' ? (env.details as Record<string, unknown>) : {};
    return new ApiError(status, env.error, message, details);
  }
  return new ApiError(
    status,
    `http_${status}`,
    `svc answered with HTTP ${status}; try again, and check the server's log if it persists`,
  );
}

/** A JSON object that is not the error envelope. */
const isAnswer = (body: unknown): boolean =>
  body !== null && typeof body === 'object' && !Array.isArray(body) && typeof (body as { error?: unknown }).error !== 'string';

async function send(method: string, path: string, opts: CallOptions): Promise<Answer> {
  const url = apiUrl(path, opts.query);
  const early = method === 'GET' ? takeEarly(url) : undefined;
  if (early) {
    try {
      return await early;
    } catch {
      // Asked again below: the answer (or the failure) is then this request's own.
    }
  }
  const headers: Record<string, string> = { ...opts.headers, ...ACCEPT_JSON };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') {
    const token = csrfToken();
    if (token) headers['x-csrf-token'] = token;
  }
  try {
    const res = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    return await answerOf(res);
  } catch {
    throw new ApiError(0, 'network', 'svc did not answer; check that it is running and try again');
  }
}

/** The server's "confirm it is you again" answers: svc's authenticator code, or a new sign-in at the identity
 * provider (details.provider, details.login_url) for a session whose second factor was the provider's. */
const REVERIFY_CODES = new Set(['mfa_reverify_required', 'mfa_reverify_sso']);

export async function call<T>(method: string, path: string, opts: CallOptions = {}, retried = false): Promise<T> {
  const { status, text } = await send(method, path, opts);
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (status >= 200 && status < 300) return body as T;
  if (opts.answerStatuses?.includes(status) && isAnswer(body)) return body as T;
  const err = toError(status, body);
  if (status === 401 && !opts.anonymous && (err.code === 'unauthenticated' || err.code === 'mfa_required')) {
    recovery.signedOut(err.code);
  }
  if (status === 403 && REVERIFY_CODES.has(err.code) && !retried && (await recovery.reverify(err))) {
    return call<T>(method, path, opts, true);
  }
  throw err;
}

export const api = {
  get: <T>(path: string, query?: Query, opts: Omit<CallOptions, 'query'> = {}) => call<T>('GET', path, { ...opts, query }),
  post: <T>(path: string, body?: unknown, opts: Omit<CallOptions, 'body'> = {}) => call<T>('POST', path, { ...opts, body }),
  patch: <T>(path: string, body: unknown) => call<T>('PATCH', path, { body }),
  del: <T>(path: string) => call<T>('DELETE', path),
};

/** A thrown value as an ApiError, so every catch can show a readable message. */
export const asApiError = (e: unknown): ApiError =>
  e instanceof ApiError
    ? e
    : new ApiError(0, 'client_error', e instanceof Error ? e.message : 'something went wrong in the dashboard');
