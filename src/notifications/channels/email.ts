// E-mail over SMTP with nodemailer. The SMTP host gets the same outbound
// policy as a webhook URL: resolved at validation and again at every send,
// every address outside the blocked ranges, and nodemailer connects to the
// address just checked (it would otherwise resolve the name itself) while SNI
// and the certificate check keep the hostname, as guardedFetch does for HTTP.
// With smtp_tls the session must upgrade with STARTTLS; port 465 is TLS from
// the first byte.
import { Type, type Static } from '@sinclair/typebox';
import nodemailer from 'nodemailer';
import type { FieldError } from '../../http/errors.ts';
import { canonicalEmail } from '../../lib/validate.ts';
import { checkDestination, type DestinationCheck } from '../../outbound/destination.ts';
import type { ChannelType, NotificationPayload, SendOptions, SendResult } from './base.ts';
import { configPath, field, hasControl, verdict } from './check.ts';
import { bodyText, clip, clipStart, facts, priorityOf } from './format.ts';
import { delivered, failed } from './outcome.ts';

const PORTS = [25, 465, 587, 2525];
const IMPLICIT_TLS_PORT = 465;

const schema = Type.Object(
  {
    smtp_host: Type.String({ minLength: 1, maxLength: 253 }),
    smtp_port: Type.Integer(),
    smtp_user: Type.Optional(Type.String({ maxLength: 256 })),
    smtp_pass: Type.Optional(Type.String({ maxLength: 1024 })),
    /** STARTTLS required (the default); ignored on 465, which is always TLS. */
    smtp_tls: Type.Optional(Type.Boolean()),
    /** Defaults to smtp_user when that is an address. */
    from_addr: Type.Optional(Type.String({ maxLength: 320 })),
    to_addrs: Type.Array(Type.String({ maxLength: 320 }), { minItems: 1, maxItems: 50 }),
  },
  { additionalProperties: false },
);
type EmailConfig = Static<typeof schema>;

const SUBJECT_MAX = 200;
const EXCEPTION_MAX = 1000;
const TRACEBACK_MAX = 2000;
const BODY_MAX = 2000;

// canonicalEmail refuses control characters, so no address can split a header.
const isAddress = (s: string): boolean => canonicalEmail(s) !== null;
const sender = (c: EmailConfig): string | undefined => c.from_addr ?? c.smtp_user;
const usesTls = (c: EmailConfig): boolean => c.smtp_port === IMPLICIT_TLS_PORT || c.smtp_tls !== false;

/** The outbound policy for the SMTP host: the guard speaks URLs, so the host is put in one. */
async function checkSmtpHost(c: EmailConfig, options: SendOptions, signal?: AbortSignal): Promise<DestinationCheck> {
  const bare = c.smtp_host.replace(/^\[(.*)\]$/, '$1');
  const url = `https://${bare.includes(':') ? `[${bare}]` : bare}:${c.smtp_port}/`;
  // Nothing that could end the URL's host part (/, ?, #, @) may be in it.
  if (!/^[0-9A-Za-z.:-]+$/.test(bare) || !URL.canParse(url)) {
    return { ok: false, reason: 'hostname', message: 'must be a hostname or an IP address' };
  }
  return checkDestination(url, { resolver: options.resolver, signal });
}

function validationErrors(c: EmailConfig): FieldError[] {
  const errors: FieldError[] = [];
  if (!PORTS.includes(c.smtp_port)) errors.push(field('/config/smtp_port', `must be one of ${PORTS.join(', ')}`, 'port_not_allowed'));
  c.to_addrs.forEach((a, i) => {
    if (!isAddress(a)) errors.push(field(configPath('to_addrs', String(i)), 'must be an e-mail address', 'address'));
  });
  const from = sender(c);
  if (from === undefined || !isAddress(from)) {
    errors.push(field('/config/from_addr', 'must be an e-mail address (needed unless smtp_user is one)', 'address'));
  }
  if (c.smtp_user !== undefined && hasControl(c.smtp_user)) {
    errors.push(field('/config/smtp_user', 'must not contain CR, LF or other control characters', 'smtp_user'));
  }
  if (c.smtp_pass !== undefined && c.smtp_user === undefined) errors.push(field('/config/smtp_user', 'is needed with smtp_pass', 'smtp_user'));
  // Every reachable server is on the Internet (private ranges are blocked): never log in in clear text there.
  if (c.smtp_user !== undefined && !usesTls(c)) {
    errors.push(field('/config/smtp_tls', 'must be true to log in (or use port 465)', 'credentials_need_tls'));
  }
  return errors;
}

function subject(p: NotificationPayload): string {
  const priority = priorityOf(p);
  const prefix = priority === 'normal' ? '' : `[${priority.toUpperCase()}] `;
  // The title holds agents' text (task names): no line breaks in a header.
  return clip(`${prefix}[svc] ${p.title}`.replace(/[\u0000-\u001f\u007f]+/g, ' '), SUBJECT_MAX);
}

function text(p: NotificationPayload): string {
  const rows = [...facts(p), ['Time', p.timestamp] as [string, string]];
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  const parts = [p.title, rows.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`).join('\n')];
  const body = bodyText(p);
  if (body) parts.push(clip(body, BODY_MAX));
  if (p.exception) parts.push(`Exception:\n${clip(p.exception, EXCEPTION_MAX)}`);
  if (p.traceback) parts.push(`Traceback:\n${clipStart(p.traceback, TRACEBACK_MAX)}`);
  if (p.link) parts.push(`Open in svc: ${p.link}`);
  return `${parts.join('\n\n')}\n`;
}

const safeCode = (v: unknown): string | null => (typeof v === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(v) ? v : null);

/** nodemailer's error as a result. Its messages quote the connected address and the certificate's
 * names, so only its codes and the server's own reply are used. */
function smtpFailure(e: unknown, deadline: AbortSignal, timeoutMs: number, secrets: string[]): SendResult {
  if (deadline.aborted) return failed(`SMTP delivery timed out after ${timeoutMs} ms`, secrets);
  const err = e as { code?: unknown; originalCode?: unknown; responseCode?: unknown; response?: unknown };
  const code = safeCode(err.code);
  const cause = safeCode(err.originalCode);
  const status = typeof err.responseCode === 'number' ? err.responseCode : null;
  const reply = typeof err.response === 'string' ? err.response : null;
  if (cause && /TLS|SSL|CERT|UNABLE_TO|SELF_SIGNED|DEPTH_ZERO/.test(cause)) return failed(`TLS verification or handshake failed (${cause})`, secrets);
  switch (code) {
    case 'EABORT':
      return failed('SMTP delivery aborted by the caller', secrets);
    case 'EAUTH':
      return failed('SMTP server refused the login', secrets, status, reply);
    case 'EENVELOPE':
      return failed('SMTP server refused the sender or the recipients', secrets, status, reply);
    case 'EMESSAGE':
      return failed('SMTP server refused the message', secrets, status, reply);
    case 'ETLS':
      return failed('SMTP server did not start TLS (STARTTLS is required)', secrets, status, reply);
    case 'ESOCKET':
    case 'ECONNECTION':
      return failed(`could not connect to the SMTP server (${cause ?? code})`, secrets, status, reply);
    default:
      return failed(`SMTP delivery failed (${code ?? 'unknown'})`, secrets, status, reply);
  }
}

export const email: ChannelType<EmailConfig> = {
  type: 'email',
  schema,
  secretKeys: ['smtp_pass'],

  async validate(config, options) {
    const errors = validationErrors(config);
    const dest = await checkSmtpHost(config, options, options.signal);
    if (!dest.ok) errors.push(field('/config/smtp_host', dest.message, dest.reason));
    return verdict(config, errors);
  },

  async send(config, payload, options) {
    const secrets = config.smtp_pass ? [config.smtp_pass] : [];
    // One deadline for the whole attempt: DNS, connect, TLS, login and the message.
    const deadline = AbortSignal.timeout(options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const dest = await checkSmtpHost(config, options, signal);
    if (!dest.ok) return deadline.aborted ? smtpFailure(null, deadline, options.timeoutMs, secrets) : failed(dest.message, secrets);

    const implicit = config.smtp_port === IMPLICIT_TLS_PORT;
    const transport = nodemailer.createTransport({
      host: dest.address,
      port: config.smtp_port,
      secure: implicit,
      requireTLS: !implicit && usesTls(config),
      // No SNI for an IP literal; the certificate is then checked against the IP.
      ...(dest.literal ? {} : { servername: dest.hostname }),
      ...(config.smtp_user !== undefined ? { auth: { user: config.smtp_user, pass: config.smtp_pass ?? '' } } : {}),
      tls: { rejectUnauthorized: true, ...(options.ca !== undefined ? { ca: options.ca } : {}) },
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
    });
    try {
      const info = await transport.sendMail({
        from: { name: 'svc', address: sender(config) ?? '' },
        to: config.to_addrs,
        subject: subject(payload),
        text: text(payload),
        signal,
      });
      return delivered(Number(/^\d{3}/.exec(info.response)?.[0] ?? 250));
    } catch (e) {
      return smtpFailure(e, deadline, options.timeoutMs, secrets);
    } finally {
      transport.close();
    }
  },
};
