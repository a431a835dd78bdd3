// PagerDuty Events API v2: one `trigger` event per fire, deduplicated per
// project, trigger and subject (task, agent or schedule), so repeated fires for
// the same thing land on one incident. The integration (routing) key is a secret.
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from '../../http/errors.ts';
import { TEST_TRIGGER, TRIGGERS } from '../schemas.ts';
import type { ChannelType, NotificationPayload } from './base.ts';
import { configPath, field, verdict } from './check.ts';
import { clip } from './format.ts';
import { postJson } from './http.ts';

const SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;
type Severity = (typeof SEVERITIES)[number];
const isSeverity = (s: unknown): s is Severity => (SEVERITIES as readonly unknown[]).includes(s);

const MAP_MAX = 32;
const MAPPABLE = new Set<string>([...TRIGGERS, TEST_TRIGGER]);

const schema = Type.Object(
  {
    integration_key: Type.String({ minLength: 1, maxLength: 64 }),
    severity_default: Type.Optional(Type.String()),
    severity_map: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false },
);
type PagerDutyConfig = Static<typeof schema>;

const INTEGRATION_KEY = /^[A-Za-z0-9_-]{8,64}$/;
const ENQUEUE_URL = 'https://events.pagerduty.com/v2/enqueue';

// What a fire means to an on-call rota when the channel's map does not say.
const DEFAULT_SEVERITY = new Map<string, Severity>([
  ['agent.offline', 'critical'],
  ['task.failed', 'error'],
  ['schedule.misfired', 'error'],
  ['schedule.fire.failed', 'error'],
  ['schedule.task_failed', 'error'],
  ['schedule.circuit_breaker.tripped', 'error'],
  ['task.retried', 'warning'],
  ['task.succeeded', 'info'],
  ['schedule.fire.succeeded', 'info'],
  ['agent.online', 'info'],
]);

const SUMMARY_MAX = 1024;
const DEDUP_MAX = 255;
// PagerDuty caps an event at 512 KB; a traceback is the only field that could approach it.
const DETAIL_MAX = 4096;

function severityFor(config: PagerDutyConfig, trigger: string): Severity {
  // Anything but a severity (an inherited "constructor" too) leaves it to the defaults.
  const mapped = config.severity_map?.[trigger];
  if (isSeverity(mapped)) return mapped;
  return DEFAULT_SEVERITY.get(trigger) ?? (isSeverity(config.severity_default) ? config.severity_default : 'warning');
}

function pagerDutyEvent(config: PagerDutyConfig, p: NotificationPayload): Record<string, unknown> {
  // A channel test names no subject: each test then opens its own alert.
  const subject = p.task_id ?? p.agent_id ?? p.schedule_id ?? p.timestamp;
  const details = Object.fromEntries(Object.entries(p).map(([k, v]) => [k, typeof v === 'string' ? clip(v, DETAIL_MAX) : v]));
  return {
    routing_key: config.integration_key,
    event_action: 'trigger',
    dedup_key: `${p.project_id}/${p.trigger}/${subject}`.slice(0, DEDUP_MAX),
    payload: {
      // A personal channel's test belongs to no project.
      summary: clip(p.project_slug ? `${p.title} (${p.project_slug})` : p.title, SUMMARY_MAX),
      source: p.project_slug ? `svc/${p.project_slug}` : 'svc',
      severity: severityFor(config, p.trigger),
      timestamp: p.timestamp,
      component: p.task_name ?? p.agent_name ?? p.schedule_name ?? 'svc',
      group: p.trigger,
      class: 'svc.notification',
      custom_details: details,
    },
    ...(p.link ? { links: [{ href: p.link, text: 'Open in svc' }] } : {}),
  };
}

export const pagerduty: ChannelType<PagerDutyConfig> = {
  type: 'pagerduty',
  schema,
  secretKeys: ['integration_key'],

  // events.pagerduty.com is fixed by svc: checked against the outbound policy when sending.
  async validate(config) {
    const errors: FieldError[] = [];
    if (!INTEGRATION_KEY.test(config.integration_key)) {
      errors.push(field('/config/integration_key', 'must be 8 to 64 letters, digits, _ or -', 'integration_key'));
    }
    if (config.severity_default !== undefined && !isSeverity(config.severity_default)) {
      errors.push(field('/config/severity_default', `must be one of ${SEVERITIES.join(', ')}`, 'severity'));
    }
    const map = Object.entries(config.severity_map ?? {});
    if (map.length > MAP_MAX) errors.push(field('/config/severity_map', `at most ${MAP_MAX} entries`, 'severity_map'));
    for (const [trigger, severity] of map.slice(0, MAP_MAX)) {
      const path = configPath('severity_map', trigger);
      if (!MAPPABLE.has(trigger)) errors.push(field(path, 'keys are trigger keys (task.failed, agent.offline, ...) or test.dispatch', 'trigger'));
      else if (!isSeverity(severity)) errors.push(field(path, `must be one of ${SEVERITIES.join(', ')}`, 'severity'));
    }
    return verdict(config, errors);
  },

  send(config, payload, options) {
    return postJson(
      {
        type: 'pagerduty',
        url: ENQUEUE_URL,
        body: JSON.stringify(pagerDutyEvent(config, payload)),
        allowHttp: false,
        accepted: [202],
        secrets: [config.integration_key],
      },
      options,
    );
  },
};
