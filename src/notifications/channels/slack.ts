// Slack incoming webhook: a Block Kit message (header, the facts as fields,
// the exception in a code block). Only Slack's own webhook host is accepted.
import type { NotificationPayload } from './base.ts';
import { bodyText, clip, facts, fence, priorityOf, type Priority } from './format.ts';
import type { ProviderHosts } from './http.ts';
import { providerWebhook } from './provider.ts';

const HOSTS: ProviderHosts = {
  allows: (host) => host === 'hooks.slack.com',
  message: 'must be a Slack incoming webhook URL (https://hooks.slack.com/...)',
};

const EMOJI: Record<Priority, string> = { critical: '🔴', high: '🟠', normal: '🔵', low: '⚪' };
// Slack's limits: header text 150 characters, at most 10 fields per section.
const HEADER_MAX = 150;
const EXCEPTION_MAX = 500;
const BODY_MAX = 1000;

/** Slack reads &, < and > as markup (links, mentions) everywhere, code blocks included. */
const esc = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function slackMessage(p: NotificationPayload): Record<string, unknown> {
  const title = `${EMOJI[priorityOf(p)]} ${p.title}`;
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(title, HEADER_MAX), emoji: true } },
    { type: 'section', fields: facts(p).map(([k, v]) => ({ type: 'mrkdwn', text: `*${k}*\n${esc(v)}` })) },
  ];
  const body = bodyText(p);
  if (body) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: esc(clip(body, BODY_MAX)) } });
  if (p.exception) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: fence(esc(clip(p.exception, EXCEPTION_MAX))) } });
  // In <url|label>, `|` and `>` would end the URL.
  const link = p.link?.replaceAll('|', '%7C').replaceAll('>', '%3E');
  if (link) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `<${link}|Open in svc>` }] });
  // `text` is what notifications and clients without Block Kit show.
  return { text: clip(p.title, HEADER_MAX), blocks };
}

export const slack = providerWebhook({ type: 'slack', hosts: HOSTS, accepted: [200], message: slackMessage });
