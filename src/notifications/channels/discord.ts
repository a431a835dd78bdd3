// Discord webhook, through its Slack-compatible endpoint (`<webhook>/slack`):
// one markdown text. Only Discord's own hosts are accepted.
import type { NotificationPayload } from './base.ts';
import { bodyText, clip, facts, fence } from './format.ts';
import type { ProviderHosts } from './http.ts';
import { providerWebhook } from './provider.ts';

const DISCORD_HOSTS = new Set(['discord.com', 'discordapp.com', 'canary.discord.com', 'ptb.discord.com']);
const HOSTS: ProviderHosts = {
  allows: (host) => DISCORD_HOSTS.has(host),
  message: 'must be a Discord webhook URL (https://discord.com/api/webhooks/...)',
};

const EXCEPTION_MAX = 1500;
const BODY_MAX = 500;
// Discord refuses a message over 2000 characters.
const TEXT_MAX = 2000;

/** Markdown characters escaped, and mentions (@everyone, @here, <@id>) broken with a zero-width
 * space: a worker's text must not format the message or ping a whole server. */
const esc = (text: string): string => text.replace(/[\\*_~`|>]/g, '\\$&').replaceAll('@', '@\u200b');

function discordText(p: NotificationPayload): string {
  const lines = [`**${esc(p.title)}**`, ...facts(p).map(([k, v]) => `**${k}:** ${esc(v)}`)];
  const body = bodyText(p);
  if (body) lines.push(esc(clip(body, BODY_MAX)));
  // Inside a fence nothing is markdown, but a mention would still ping.
  if (p.exception) lines.push(fence(clip(p.exception, EXCEPTION_MAX).replaceAll('@', '@\u200b')));
  if (p.link) lines.push(p.link);
  return clip(lines.join('\n'), TEXT_MAX);
}

/** `<webhook>/slack`, the query (thread_id, wait) kept. */
function slackEndpoint(webhookUrl: string): string {
  const at = webhookUrl.search(/[?#]/);
  const [base, rest] = at === -1 ? [webhookUrl, ''] : [webhookUrl.slice(0, at), webhookUrl.slice(at)];
  return `${base.replace(/\/+$/, '')}/slack${rest}`;
}

export const discord = providerWebhook({
  type: 'discord',
  hosts: HOSTS,
  accepted: [200, 204],
  message: (p) => ({ text: discordText(p), username: 'svc' }),
  endpoint: slackEndpoint,
});
