// A channel's settings as a form, for every channel type: the inputs are named by the config's JSON pointer
// (`config/url`), so the server's 422 field messages (`/config/url`, `/config/headers/X-Team`) land next to them.
// Secrets come from the API masked; the mask stays in its input and is sent back unchanged, which keeps the stored
// secret (clearing the input removes it). Keys the form has no input for (a PagerDuty severity_map set through the
// API) are kept as they are.
import { ApiError } from '../../api/client.ts';
import { sentence } from '../../lib/format.ts';
import type { Channel, ChannelTestResult, ChannelType } from '../../api/types.ts';
import { TextAreaField } from '../../ui/form-lists.tsx';
import { CheckboxField, SelectField, TextField, type Values } from '../../ui/form.tsx';

type Kind = 'text' | 'url' | 'secret' | 'port' | 'tls' | 'addresses' | 'headers' | 'chat' | 'severity';

interface Input {
  key: string;
  label: string;
  kind: Kind;
  required?: boolean;
  hint?: string;
  placeholder?: string;
}

const PROVIDER_HINT = (example: string) => `Its incoming-webhook address, ${example}`;
const SEVERITIES = ['critical', 'error', 'warning', 'info'];

export const INPUTS: Record<ChannelType, Input[]> = {
  webhook: [
    {
      key: 'url',
      label: 'URL',
      kind: 'url',
      required: true,
      placeholder: 'https://example.com/hooks/svc',
      hint: 'svc POSTs each notification to it as JSON. Private and local addresses are refused.',
    },
    { key: 'headers', label: 'Headers', kind: 'headers', hint: 'Optional, one a line: Name: value.' },
    {
      key: 'hmac_secret',
      label: 'Signing secret',
      kind: 'secret',
      hint: 'Optional, at least 16 characters: requests then carry X-SVC-Signature (HMAC-SHA256 of the timestamp and body).',
    },
  ],
  email: [
    { key: 'smtp_host', label: 'SMTP host', kind: 'text', required: true, placeholder: 'smtp.example.com' },
    { key: 'smtp_port', label: 'SMTP port', kind: 'port', required: true, hint: '25, 465 (TLS from the start), 587 or 2525.' },
    { key: 'smtp_user', label: 'SMTP user', kind: 'text' },
    { key: 'smtp_pass', label: 'SMTP password', kind: 'secret' },
    { key: 'smtp_tls', label: 'Require STARTTLS', kind: 'tls', hint: 'Port 465 is always encrypted.' },
    {
      key: 'from_addr',
      label: 'From',
      kind: 'text',
      placeholder: 'svc@example.com',
      hint: 'Defaults to the SMTP user when that is an address.',
    },
    { key: 'to_addrs', label: 'To', kind: 'addresses', required: true, hint: 'One address a line (at most 50).' },
  ],
  slack: [
    {
      key: 'webhook_url',
      label: 'Webhook URL',
      kind: 'url',
      required: true,
      hint: PROVIDER_HINT('https://hooks.slack.com/services/…'),
    },
  ],
  discord: [
    {
      key: 'webhook_url',
      label: 'Webhook URL',
      kind: 'url',
      required: true,
      hint: PROVIDER_HINT('https://discord.com/api/webhooks/…'),
    },
  ],
  teams: [
    {
      key: 'webhook_url',
      label: 'Webhook URL',
      kind: 'url',
      required: true,
      hint: PROVIDER_HINT('from a Teams workflow or connector'),
    },
  ],
  telegram: [
    { key: 'bot_token', label: 'Bot token', kind: 'secret', required: true },
    { key: 'chat_id', label: 'Chat id', kind: 'chat', required: true, hint: 'A number (-100… for groups) or @channelname.' },
  ],
  pagerduty: [
    {
      key: 'integration_key',
      label: 'Integration key',
      kind: 'secret',
      required: true,
      hint: 'The routing key of an Events API v2 integration.',
    },
    {
      key: 'severity_default',
      label: 'Severity',
      kind: 'severity',
      hint: 'Leave it to svc to pick per trigger (agent offline is critical, a failed task an error, …), or fix one.',
    },
  ],
};

const name = (key: string) => `config/${key}`;
const text = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/** One config value as its input shows it. */
function shown(input: Input, config: Record<string, unknown>): string {
  const v = config[input.key];
  if (input.kind === 'headers') {
    return v && typeof v === 'object'
      ? Object.entries(v as Record<string, unknown>)
          .map(([k, x]) => `${k}: ${text(x)}`)
          .join('\n')
      : '';
  }
  if (input.kind === 'addresses') return Array.isArray(v) ? v.map(text).join('\n') : '';
  return text(v);
}

/** The inputs of one channel type, filled from a config (a saved channel's, with its secrets masked). */
export function ChannelInputs(props: { type: ChannelType; config: Record<string, unknown>; editing: boolean }) {
  return (
    <>
      {INPUTS[props.type].map((input) => {
        const value = shown(input, props.config);
        const key = `${props.type}-${input.key}`;
        switch (input.kind) {
          case 'headers':
          case 'addresses':
            return (
              <TextAreaField
                key={key}
                label={input.label}
                name={name(input.key)}
                defaultValue={value}
                required={input.required}
                hint={input.hint}
                placeholder={input.kind === 'headers' ? 'X-Team: payments' : 'ops@example.com'}
              />
            );
          case 'tls':
            return (
              <CheckboxField
                key={key}
                label={input.label}
                name={name(input.key)}
                checked={props.config[input.key] !== false}
                hint={input.hint}
              />
            );
          case 'severity':
            return (
              <SelectField
                key={key}
                label={input.label}
                name={name(input.key)}
                value={value}
                hint={input.hint}
                options={[{ value: '', label: 'By trigger' }, ...SEVERITIES]}
              />
            );
          case 'port':
            return (
              <TextField
                key={key}
                label={input.label}
                name={name(input.key)}
                type="number"
                min={1}
                max={65535}
                required
                defaultValue={value || '587'}
                hint={input.hint}
              />
            );
          case 'secret':
            return (
              <TextField
                key={key}
                label={input.label}
                name={name(input.key)}
                type="password"
                autoComplete="new-password"
                required={input.required}
                defaultValue={value}
                hint={
                  props.editing && value
                    ? `${input.hint ? `${input.hint} ` : ''}Shown masked: leave it as it is to keep the saved one, or type a new one.`
                    : input.hint
                }
              />
            );
          default:
            return (
              <TextField
                key={key}
                label={input.label}
                name={name(input.key)}
                type={input.kind === 'url' ? 'url' : 'text'}
                required={input.required}
                defaultValue={value}
                placeholder={input.placeholder}
                hint={input.hint}
              />
            );
        }
      })}
    </>
  );
}

const invalid = (path: string, message: string) =>
  new ApiError(422, 'validation_failed', 'check the highlighted field', { fields: [{ path, message }] });

function headersOf(textValue: string, path: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of textValue.split('\n')) {
    if (!line.trim()) continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw invalid(path, 'write each header as Name: value, one a line');
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** The config the form's values describe, over `base` (the saved config: keys without an input stay). */
export function configOf(
  type: ChannelType,
  values: Values,
  form: HTMLFormElement,
  base: Record<string, unknown> = {},
): Record<string, unknown> {
  const config: Record<string, unknown> = { ...base };
  for (const input of INPUTS[type]) {
    const raw = (values[name(input.key)] ?? '').trim();
    let value: unknown = raw || undefined;
    switch (input.kind) {
      case 'tls':
        value = (form.elements.namedItem(name(input.key)) as HTMLInputElement | null)?.checked ?? true;
        break;
      case 'port':
        value = raw ? Number(raw) : undefined;
        break;
      case 'chat':
        value = /^-?\d{1,15}$/.test(raw) ? Number(raw) : raw || undefined;
        break;
      case 'addresses': {
        const list = raw
          .split(/[\n,;]/)
          .map((a) => a.trim())
          .filter(Boolean);
        value = list.length ? list : undefined;
        break;
      }
      case 'headers': {
        const headers = headersOf(values[name(input.key)] ?? '', `/${name(input.key)}`);
        value = Object.keys(headers).length ? headers : undefined;
        break;
      }
      case 'secret':
        // Never trimmed: a secret is sent as typed (and the mask as it came).
        value = values[name(input.key)] || undefined;
        break;
    }
    if (value === undefined) delete config[input.key];
    else config[input.key] = value;
  }
  return config;
}

/** Where a channel sends, in a few words (no secret: those are masked anyway). */
export function destinationOf(c: Channel): string {
  const cfg = c.config;
  const host = (url: unknown) => {
    try {
      return new URL(text(url)).host;
    } catch {
      return text(url);
    }
  };
  switch (c.type) {
    case 'webhook':
      return host(cfg.url);
    case 'email':
      return Array.isArray(cfg.to_addrs) ? cfg.to_addrs.map(text).join(', ') : '';
    case 'telegram':
      return `chat ${text(cfg.chat_id)}`;
    case 'pagerduty':
      return cfg.severity_default ? `severity ${text(cfg.severity_default)}` : 'severity by trigger';
    default:
      return host(cfg.webhook_url);
  }
}

/** What a channel test answered: success, the status code, the error and the start of the receiver's answer. */
export function TestResultNotice(props: { result: ChannelTestResult; what: string }) {
  const r = props.result;
  return (
    <div class={`notice test-result ${r.success ? 'ok' : 'error'}`} role="status" data-testid="channel-test-result">
      <p>
        <strong>{r.success ? `Test of ${props.what} delivered.` : `Test of ${props.what} failed.`}</strong>{' '}
        {r.status_code ? `Status code ${r.status_code}.` : 'No answer came (status code 0).'}
      </p>
      {r.error && <p>{sentence(r.error)}</p>}
      {r.response_body && (
        <>
          <p class="small muted">The receiver answered:</p>
          <pre class="code-block">{r.response_body}</pre>
        </>
      )}
    </div>
  );
}
