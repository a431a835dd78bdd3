// The chat providers' incoming webhooks (Slack, Discord, Teams) share one
// shape: a single `webhook_url`, which must be on the provider's own hosts,
// and one JSON message per fire. Each type module supplies only its hosts, its
// message and what its provider answers on success.
import { Type, type Static } from '@sinclair/typebox';
import type { ChannelType, ChannelTypeName, NotificationPayload } from './base.ts';
import { verdict } from './check.ts';
import { checkUrl, postJson, type ProviderHosts } from './http.ts';

const schema = Type.Object({ webhook_url: Type.String({ minLength: 1, maxLength: 2048 }) }, { additionalProperties: false });
type ProviderWebhookConfig = Static<typeof schema>;

type ProviderWebhook = {
  type: ChannelTypeName;
  hosts: ProviderHosts;
  /** The statuses that mean the provider took the message. */
  accepted: readonly number[] | '2xx';
  message(p: NotificationPayload): unknown;
  /** Where to POST, from the configured URL; the URL itself unless given. */
  endpoint?(webhookUrl: string): string;
};

export function providerWebhook(spec: ProviderWebhook): ChannelType<ProviderWebhookConfig> {
  return {
    type: spec.type,
    schema,
    // The spec returns webhook_url to every project member as configured: not a masked secret.
    secretKeys: [],
    async validate(config, options) {
      return verdict(config, await checkUrl(config.webhook_url, '/config/webhook_url', options, spec.hosts));
    },
    send(config, payload, options) {
      return postJson(
        {
          type: spec.type,
          url: spec.endpoint ? spec.endpoint(config.webhook_url) : config.webhook_url,
          body: JSON.stringify(spec.message(payload)),
          // Providers speak https only, whatever SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP says (see checkUrl).
          allowHttp: false,
          accepted: spec.accepted,
          secrets: [],
        },
        options,
      );
    },
  };
}
