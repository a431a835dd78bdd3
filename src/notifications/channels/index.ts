// The channel types by name, and the one check a config goes through before
// it is saved or test-sent: size, the type's schema, then the type's own rules.
import { Value } from '@sinclair/typebox/value';
import { validationFields } from '../../http/validation.ts';
import { CHANNEL_TYPES, type ChannelType, type ChannelTypeName, type SendOptions, type ValidationResult } from './base.ts';
import { field } from './check.ts';
import { discord } from './discord.ts';
import { email } from './email.ts';
import { pagerduty } from './pagerduty.ts';
import { slack } from './slack.ts';
import { teams } from './teams.ts';
import { telegram } from './telegram.ts';
import { webhook } from './webhook.ts';

const BY_NAME: { [K in ChannelTypeName]: ChannelType } = { webhook, email, slack, telegram, pagerduty, discord, teams };

/** Every channel type, in the spec's order. */
export const channelTypes: readonly ChannelType[] = CHANNEL_TYPES.map((name) => BY_NAME[name]);

/** The type called `name`, or null when there is none. */
export const channelType = (name: string): ChannelType | null =>
  Object.hasOwn(BY_NAME, name) ? BY_NAME[name as ChannelTypeName] : null;

/** Spec, Limits: a channel's config is at most 16 KiB as JSON. */
const MAX_CONFIG_BYTES = 16 * 1024;

/** Checks a submitted config for `type`: field paths start at /config and never carry a submitted value. */
export async function checkConfig(type: ChannelType, config: unknown, options: SendOptions): Promise<ValidationResult<Record<string, unknown>>> {
  if (Buffer.byteLength(JSON.stringify(config) ?? '') > MAX_CONFIG_BYTES) {
    return { ok: false, fields: [field('/config', `must be at most ${MAX_CONFIG_BYTES} bytes as JSON`, 'too_large')] };
  }
  if (!Value.Check(type.schema, config)) {
    const fields = validationFields({ type: 'body', all: [...Value.Errors(type.schema, config)] });
    return { ok: false, fields: fields.map((f) => ({ ...f, path: f.path === '/' ? '/config' : `/config${f.path}` })) };
  }
  return type.validate(config as Record<string, unknown>, options);
}
