// What every channel type shares: the payload a fire hands it, how it sends
// (through the guarded outbound client, options from the service), and the
// shape of a type's module. One module per type (webhook.ts, email.ts, ...)
// implements ChannelType; index.ts lists them.
import type { TObject } from '@sinclair/typebox';
import type { FieldError } from '../../http/errors.ts';
import type { Resolver } from '../../outbound/resolve.ts';

export const CHANNEL_TYPES = ['webhook', 'email', 'slack', 'telegram', 'pagerduty', 'discord', 'teams'] as const;
export type ChannelTypeName = (typeof CHANNEL_TYPES)[number];

/** What a fire tells a channel. `trigger` is a trigger key, or `test.dispatch` for a channel test. */
export interface NotificationPayload {
  trigger: string;
  project_id: string;
  project_slug: string;
  /** One line for people: "Task failed: billing.charge". */
  title: string;
  /** A few lines for people: the exception, the agent, the state. */
  body: string;
  /** Deep link into the dashboard (the task, the agent), when svc knows its public URL. */
  link: string | null;
  task_id: string | null;
  task_name: string | null;
  engine: string | null;
  queue: string | null;
  priority: string | null;
  state: string | null;
  exception: string | null;
  traceback: string | null;
  agent_id: string | null;
  agent_name: string | null;
  schedule_id: string | null;
  schedule_name: string | null;
  /** When the trigger happened, ISO 8601 UTC. */
  timestamp: string;
}

/** How a channel reaches its destination: the outbound policy (and, in tests, a stand-in DNS and CA). */
export interface SendOptions {
  /** SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: http:// URLs too (never blocked addresses). */
  allowHttp: boolean;
  /** Per-request deadline. */
  timeoutMs: number;
  /** Tests only: resolves hostnames (the provider hosts to a test receiver). */
  resolver?: Resolver;
  /** Tests only: a certificate to trust (the test receiver's). */
  ca?: string;
  signal?: AbortSignal;
}

/** One attempt's outcome, as the delivery log and the channel test report it. */
export interface SendResult {
  success: boolean;
  /** The receiver's HTTP status (SMTP: the reply code), or null when none came. */
  status_code: number | null;
  /** Safe to show the channel's owner: no secret, token, URL path or resolved address. */
  error: string | null;
  /** The start of the receiver's answer when it failed (at most 2 KiB), else null. */
  response_body: string | null;
}

export type ValidationResult<C> = { ok: true; config: C } | { ok: false; fields: FieldError[] };

export interface ChannelType<C extends Record<string, unknown> = Record<string, unknown>> {
  type: ChannelTypeName;
  /** The config's shape (closed): the API validates it before `validate` runs. */
  schema: TObject;
  /** Config keys whose values are secrets: masked in every list, never echoed, kept on a PATCH carrying the mask. */
  secretKeys: readonly string[];
  /** The rules a schema cannot say (fixed provider hosts, header rules, the outbound policy on every URL and
   * SMTP host); `options` as at dispatch, so DNS is checked the same way. Field paths start at `/config`. */
  validate(config: C, options: SendOptions): Promise<ValidationResult<C>>;
  /** Sends one notification; checks the destination again (DNS may have changed since it was saved). Never throws. */
  send(config: C, payload: NotificationPayload, options: SendOptions): Promise<SendResult>;
}
