// The one HTTP client for requests the service makes to user-configured URLs
// (audit forwarder, notification webhooks, version check, `svc upgrade`). It re-runs the
// destination policy at dispatch, connects to the address it just checked,
// never follows a redirect, reads at most a capped part of the answer (a few
// KiB unless the caller asks for more: release binaries) and gives
// up after one overall deadline. Failures come back as values: a forwarder
// that drops a row must not have to unwind an exception to do it.
//
// Pinning: Bun 1.4.5's fetch is given a URL whose host is the validated IP,
// the original `Host` header, and `tls.serverName` set to the original
// hostname. Checked against a node:https server and `openssl s_server
// -tlsextdebug`: the ClientHello carries the hostname as SNI, the server sees
// the original Host, and the certificate is verified against serverName, not
// the IP (a certificate naming only the IP fails with
// ERR_TLS_CERT_ALTNAME_INVALID; without serverName the opposite happens).
// Keep-alive connections are not shared across serverNames. node:https with
// `host: ip, servername` or a `lookup` override behaves the same in Bun, but
// fetch also gives `redirect: 'manual'`, AbortSignal deadlines covering the
// body, `proxy: false` and a streaming body in one call.
import { checkDestination, type RefusalReason } from './destination.ts';
import type { BlockedRange } from './blocked.ts';
import type { Resolver } from './resolve.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024;

export type GuardedInit = {
  method?: string;
  headers?: HeadersInit;
  body?: string | Uint8Array<ArrayBuffer> | null;
  /** Whole request: DNS, connect, TLS, sending and reading the capped body. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP. */
  allowHttp?: boolean;
  /** PEM certificate(s) to trust for this destination: an operator's private
   * CA or a self-signed receiver. Verification itself is never switched off. */
  ca?: string;
  /** Stands in for DNS (tests); defaults to node:dns lookup. */
  resolver?: Resolver;
  dnsTimeoutMs?: number;
  signal?: AbortSignal;
  /** See DestinationOptions.allowRanges. */
  allowRanges?: readonly BlockedRange[];
};

export type FailureReason = RefusalReason | 'timeout' | 'aborted' | 'tls' | 'connect' | 'network';

/** `ok` means an HTTP answer arrived, whatever its status; a 3xx is returned
 * as it is, with its Location header. */
export type GuardedResponse = {
  ok: true;
  status: number;
  headers: Headers;
  /** UTF-8 decoded, at most maxResponseBytes bytes of it. */
  body: string;
  truncated: boolean;
};

export type GuardedFailure = {
  ok: false;
  reason: FailureReason;
  /** Never contains the URL (its path or query may hold a token), credentials or a resolved address. */
  message: string;
  range?: BlockedRange;
};

export type GuardedResult = GuardedResponse | GuardedFailure;

const fail = (reason: FailureReason, message: string): GuardedFailure => ({ ok: false, reason, message });

/** Sends one request under the outbound policy. Never throws. */
export async function guardedFetch(url: string | URL, init: GuardedInit = {}): Promise<GuardedResult> {
  const r = await exchange(url, init);
  if (!r.ok) return r;
  const { bytes, ...rest } = r;
  // A cut may split a UTF-8 sequence; the decoder then ends in U+FFFD.
  return { ...rest, body: new TextDecoder().decode(bytes) };
}

/** An answer whose body is kept as bytes (a release binary, a signed manifest). */
export type GuardedBytesResponse = Omit<GuardedResponse, 'body'> & { bytes: Uint8Array<ArrayBuffer> };

/** guardedFetch, with the (capped) body as bytes rather than text. Never throws. */
export function guardedFetchBytes(url: string | URL, init: GuardedInit = {}): Promise<GuardedBytesResponse | GuardedFailure> {
  return exchange(url, init);
}

async function exchange(url: string | URL, init: GuardedInit): Promise<GuardedBytesResponse | GuardedFailure> {
  const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = Math.max(0, init.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = init.signal ? AbortSignal.any([deadline, init.signal]) : deadline;
  const stopped = (): GuardedFailure | null =>
    init.signal?.aborted
      ? fail('aborted', 'request aborted by the caller')
      : deadline.aborted
        ? fail('timeout', `request timed out after ${timeoutMs} ms`)
        : null;

  // Re-resolve and re-check now, whatever was checked at configuration time.
  const dest = await checkDestination(url, {
    allowHttp: init.allowHttp,
    resolver: init.resolver,
    dnsTimeoutMs: init.dnsTimeoutMs,
    signal,
    allowRanges: init.allowRanges,
  });
  if (!dest.ok) return (dest.reason === 'dns' && stopped()) || dest;

  const target = new URL(dest.url);
  target.hostname = dest.family === 6 ? `[${dest.address}]` : dest.address;
  const https = target.protocol === 'https:';

  const headers = new Headers(init.headers);
  // The receiver routes and authenticates by the name the user configured.
  headers.set('host', dest.url.host);
  // The body is only a diagnostic: ask for it uncompressed and never inflate
  // it (decompress: false below), so a small compressed answer cannot expand.
  headers.set('accept-encoding', 'identity');

  let response: Response;
  try {
    response = await fetch(target, {
      method: init.method ?? 'GET',
      headers,
      body: init.body ?? null,
      redirect: 'manual',
      signal,
      // A proxy from HTTP(S)_PROXY would make the connection somewhere other
      // than the address just validated.
      proxy: false,
      decompress: false,
      ...(https
        ? {
            // HTTP/1.1 only: the Host override above is what the receiver must see.
            protocol: 'http1.1' as const,
            tls: {
              rejectUnauthorized: true,
              // No SNI for an IP literal (RFC 6066); the certificate is then checked against the IP.
              ...(dest.literal ? {} : { serverName: dest.hostname }),
              ...(init.ca !== undefined ? { ca: init.ca } : {}),
            },
          }
        : {}),
    });
  } catch (e) {
    return stopped() ?? describeError(e);
  }

  try {
    const { bytes, truncated } = await readCapped(response, maxBytes);
    return { ok: true, status: response.status, headers: response.headers, bytes, truncated };
  } catch (e) {
    return stopped() ?? describeError(e);
  }
}

/** Reads at most `max` bytes of the body and drops the connection past that. */
async function readCapped(response: Response, max: number): Promise<{ bytes: Uint8Array<ArrayBuffer>; truncated: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(0), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        break;
      }
      if (total + value.byteLength > max) {
        chunks.push(value.subarray(0, max - total));
        total = max;
        truncated = true;
        break;
      }
      chunks.push(value);
      total += value.byteLength;
    }
  } finally {
    if (!finished) void reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { bytes, truncated };
}

const TLS_CODE = /TLS|SSL|CERT|UNABLE_TO_(GET|VERIFY)|SELF_SIGNED|DEPTH_ZERO|HOSTNAME|ALTNAME/i;
const CONNECT_CODE = /^(ConnectionRefused|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ConnectionClosed|ECONNRESET|FailedToOpenSocket)$/;

/** A reason and a message built only from the error's code: Bun's own
 * messages quote the requested URL, query string included. */
function describeError(e: unknown): GuardedFailure {
  const raw = (e as { code?: unknown })?.code;
  const code = typeof raw === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(raw) ? raw : 'unknown';
  if (TLS_CODE.test(code)) return fail('tls', `TLS verification or handshake failed (${code})`);
  if (CONNECT_CODE.test(code)) return fail('connect', `could not connect to the destination (${code})`);
  return fail('network', `request failed (${code})`);
}

