// Generic webhook: the payload as JSON to the owner's URL, with headers they
// choose and, given a secret, the signature of spec rule 5 so the receiver can
// tell svc's requests from forged ones.
import { Type, type Static } from '@sinclair/typebox';
import { nowMs } from '../../lib/clock.ts';
import { hmacHex } from '../../lib/crypto.ts';
import type { FieldError } from '../../http/errors.ts';
import type { ChannelType } from './base.ts';
import { configPath, field, hasControl, verdict } from './check.ts';
import { checkUrl, postJson } from './http.ts';

const MAX_HEADERS = 20;
const MAX_NAME = 100;
const MAX_VALUE = 1024;
// Headers that decide where and how the request travels, or carry someone's
// credentials: the guarded client and the HTTP stack set these, never a channel.
const FORBIDDEN = new Set([
  'host',
  'authorization',
  'cookie',
  'proxy-authorization',
  'x-real-ip',
  'content-length',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
]);
// RFC 9110 token characters.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const schema = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    // Short secrets are guessable from signed requests; 16 characters is the floor.
    hmac_secret: Type.Optional(Type.String({ minLength: 16, maxLength: 512 })),
  },
  { additionalProperties: false },
);
type WebhookConfig = Static<typeof schema>;

function headerErrors(headers: Record<string, string>): FieldError[] {
  const names = Object.keys(headers);
  if (names.length > MAX_HEADERS) return [field('/config/headers', `at most ${MAX_HEADERS} headers`, 'too_many_headers')];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const name of names) {
    const path = configPath('headers', name);
    const lower = name.toLowerCase();
    if (name.length > MAX_NAME || !HEADER_NAME.test(name)) {
      errors.push(field(path, `header names are 1 to ${MAX_NAME} token characters (letters, digits, -, _ ...)`, 'header_name'));
    } else if (FORBIDDEN.has(lower) || lower.startsWith('x-forwarded-')) {
      errors.push(field(path, 'this header is set by svc or the network, not by a channel', 'header_forbidden'));
    } else if (seen.has(lower)) {
      errors.push(field(path, 'the same header is given twice (names are case-insensitive)', 'header_duplicate'));
    }
    seen.add(lower);
    const value = headers[name]!;
    if (value.length > MAX_VALUE) errors.push(field(path, `header values are at most ${MAX_VALUE} characters`, 'header_value'));
    else if (hasControl(value)) errors.push(field(path, 'header values must not contain CR, LF or other control characters', 'header_value'));
  }
  return errors;
}

export const webhook: ChannelType<WebhookConfig> = {
  type: 'webhook',
  schema,
  secretKeys: ['hmac_secret'],

  async validate(config, options) {
    const errors = headerErrors(config.headers ?? {});
    errors.push(...(await checkUrl(config.url, '/config/url', options)));
    return verdict(config, errors);
  },

  async send(config, payload, options) {
    const body = JSON.stringify(payload);
    const signed: Record<string, string> = {};
    if (config.hmac_secret) {
      // Spec, Authentication rule 5: HMAC-SHA256 over `<timestamp>.<exact body>`.
      const timestamp = Math.floor(nowMs() / 1000);
      signed['x-svc-timestamp'] = String(timestamp);
      signed['x-svc-signature'] = `sha256=${hmacHex(config.hmac_secret, `${timestamp}.${body}`)}`;
    }
    return postJson(
      {
        type: 'webhook',
        url: config.url,
        body,
        ownerHeaders: config.headers,
        headers: signed,
        allowHttp: options.allowHttp,
        accepted: '2xx',
        secrets: config.hmac_secret ? [config.hmac_secret] : [],
      },
      options,
    );
  },
};
