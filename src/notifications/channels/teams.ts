// Microsoft Teams (incoming webhook or a Workflows/Logic Apps trigger): one
// Adaptive Card 1.4 in a message. Only Microsoft's webhook hosts are accepted.
import type { NotificationPayload } from './base.ts';
import { bodyText, clip, facts, priorityOf } from './format.ts';
import type { ProviderHosts } from './http.ts';
import { providerWebhook } from './provider.ts';

const HOSTS: ProviderHosts = {
  allows: (host) => host === 'outlook.office.com' || /^([a-z0-9-]+\.)+(webhook\.office\.com|logic\.azure\.com)$/.test(host),
  message: 'must be a Teams webhook URL (outlook.office.com, *.webhook.office.com or *.logic.azure.com)',
};

const EXCEPTION_MAX = 1500;
const BODY_MAX = 1000;
// The container's colour band: red for critical, amber for high.
const STYLE = { critical: 'attention', high: 'warning', normal: 'default', low: 'default' } as const;

function teamsMessage(p: NotificationPayload): Record<string, unknown> {
  const items: Record<string, unknown>[] = [
    { type: 'TextBlock', text: p.title, weight: 'Bolder', size: 'Medium', wrap: true },
    { type: 'FactSet', facts: facts(p).map(([title, value]) => ({ title, value })) },
  ];
  const body = bodyText(p);
  if (body) items.push({ type: 'TextBlock', text: clip(body, BODY_MAX), wrap: true });
  if (p.exception) items.push({ type: 'TextBlock', text: clip(p.exception, EXCEPTION_MAX), fontType: 'Monospace', wrap: true });
  const card: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body: [{ type: 'Container', style: STYLE[priorityOf(p)], items }],
  };
  if (p.link) card.actions = [{ type: 'Action.OpenUrl', title: 'Open in svc', url: p.link }];
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }] };
}

export const teams = providerWebhook({ type: 'teams', hosts: HOSTS, accepted: '2xx', message: teamsMessage });
