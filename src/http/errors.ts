// The one error envelope: {"error": code, "message": text, "details": {...},
// "request_id": id} plus `detail` where the spec names one. Every non-2xx
// JSON answer is built here; submitted values are never echoed.

export interface ErrorBody {
  error: string;
  message: string;
  details: Record<string, unknown>;
  request_id?: string;
  detail?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
    /** The spec's `detail` text where it names one. */
    readonly detail?: string,
  ) {
    super(message);
  }

  body(requestId?: string): ErrorBody {
    return {
      error: this.error,
      message: this.message,
      details: this.details,
      ...(this.detail !== undefined ? { detail: this.detail } : {}),
      ...(requestId ? { request_id: requestId } : {}),
    };
  }
}

export const badRequest = (error: string, message: string, details?: Record<string, unknown>) =>
  new ApiError(400, error, message, details);
export const unauthorized = (error = 'unauthenticated', message = 'authentication required', details?: Record<string, unknown>) =>
  new ApiError(401, error, message, details);
export const forbidden = (error = 'forbidden', message = 'not allowed', details?: Record<string, unknown>) =>
  new ApiError(403, error, message, details);
export const notFound = (what = 'resource', details?: Record<string, unknown>) =>
  new ApiError(404, 'not_found', `${what} not found`, details);
export const conflict = (message: string, details?: Record<string, unknown>, error = 'conflict') =>
  new ApiError(409, error, message, details);
export interface FieldError {
  path: string;
  message: string;
  location?: string;
  code?: string;
}

export const validationFailed = (fields: FieldError[]) =>
  new ApiError(422, 'validation_failed', `request failed validation (${fields.length} field${fields.length === 1 ? '' : 's'})`, {
    fields,
  });
export const tooLarge = (limit: number) =>
  new ApiError(413, 'payload_too_large', `request body exceeds ${limit} bytes`, { limit_bytes: limit });
export const tooManyRequests = (retryAfterSeconds: number, detail: string, error = 'rate_limited') =>
  new ApiError(429, error, detail, { retry_after_seconds: retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) }, detail);

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

export const errorResponse = (err: ApiError, requestId?: string): Response =>
  jsonResponse(err.status, err.body(requestId), err.headers);
