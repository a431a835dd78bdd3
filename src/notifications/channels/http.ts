// What the six HTTP channel types share: checking a configured URL (the
// provider's own hosts, then the outbound policy) and POSTing one JSON body
// through the guarded client, turning its answer into a SendResult.
import type { FieldError } from '../../http/errors.ts';
import { guardedFetch } from '../../outbound/client.ts';
import { checkDestination } from '../../outbound/destination.ts';
import type { ChannelTypeName, SendOptions, SendResult } from './base.ts';
import { field } from './check.ts';
import { delivered, failed, RESPONSE_READ_BYTES } from './outcome.ts';

/** A provider's webhook hosts, and how to say so to someone who pasted another URL. */
export type ProviderHosts = { allows(hostname: string): boolean; message: string };

/** Field errors for the URL at `path` (empty when it may be used). A provider URL must be
 * https on the default port at one of its hosts; every URL then passes the outbound policy,
 * resolved now as it will be again at each send. */
export async function checkUrl(raw: string, path: string, options: SendOptions, provider?: ProviderHosts): Promise<FieldError[]> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [field(path, 'must be an absolute URL', 'invalid_url')];
  }
  if (provider) {
    if (url.protocol !== 'https:') return [field(path, 'must be an https:// URL', 'scheme')];
    if (!provider.allows(url.hostname) || url.port !== '') return [field(path, provider.message, 'provider_host')];
  }
  const dest = await checkDestination(url, {
    // SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP is about generic webhooks; providers only speak https.
    allowHttp: provider ? false : options.allowHttp,
    resolver: options.resolver,
    signal: options.signal,
  });
  return dest.ok ? [] : [field(path, dest.message, dest.reason)];
}

type JsonPost = {
  type: ChannelTypeName;
  url: string;
  /** Sent byte for byte (a signature may cover it). */
  body: string;
  /** Headers the channel's owner configured; svc's own win over them. */
  ownerHeaders?: Record<string, string>;
  /** svc's own headers beyond Content-Type and User-Agent. */
  headers?: Record<string, string>;
  allowHttp: boolean;
  /** The statuses that mean the receiver took the notification. */
  accepted: readonly number[] | '2xx';
  /** Config values that must never show in the result. */
  secrets: readonly string[];
};

/** Parts of a URL that may be credentials (Slack, Discord and Teams put them in the path, Telegram its
 * bot token): the path and query whole, and every long segment or query value on its own. */
function urlSecrets(raw: string): string[] {
  const u = new URL(raw);
  const parts = [u.pathname + u.search, ...u.pathname.split('/'), ...u.searchParams.values()];
  return parts.filter((p) => p.length >= 16);
}

/** POSTs `post.body` under the outbound policy. Never throws. */
export async function postJson(post: JsonPost, options: SendOptions): Promise<SendResult> {
  let secrets = post.secrets;
  let headers: Headers;
  try {
    secrets = [...secrets, ...urlSecrets(post.url)];
    headers = new Headers(post.ownerHeaders);
  } catch {
    // Only a config that skipped validation gets here (an unparsable URL or header).
    return failed('channel configuration is not valid', secrets);
  }
  headers.set('content-type', 'application/json');
  headers.set('user-agent', `svc/notification-${post.type}`);
  for (const [name, value] of Object.entries(post.headers ?? {})) headers.set(name, value);

  const r = await guardedFetch(post.url, {
    method: 'POST',
    headers,
    body: post.body,
    allowHttp: post.allowHttp,
    timeoutMs: options.timeoutMs,
    maxResponseBytes: RESPONSE_READ_BYTES,
    resolver: options.resolver,
    ca: options.ca,
    signal: options.signal,
  });
  // guardedFetch's messages never name the URL or an address.
  if (!r.ok) return failed(r.message, secrets);
  const ok = post.accepted === '2xx' ? r.status >= 200 && r.status < 300 : post.accepted.includes(r.status);
  if (ok) return delivered(r.status);
  const expected = post.accepted === '2xx' ? '2xx' : post.accepted.join(' or ');
  const redirect = r.status >= 300 && r.status < 400 ? '; redirects are not followed' : '';
  return failed(`receiver answered HTTP ${r.status} (expected ${expected}${redirect})`, secrets, r.status, r.body);
}
