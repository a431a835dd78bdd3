// A channel's config as it is saved and shown: checked for its type (the 16
// KiB cap, the type's schema, the type's own rules with the outbound policy:
// channels/index.ts), secrets masked in every answer, and a PATCH that
// carries the mask back keeps the stored secret.
import { validationFailed } from '../http/errors.ts';
import type { ChannelType, SendOptions } from './channels/base.ts';
import { channelType, checkConfig as checkForType } from './channels/index.ts';

/** What a secret value reads as in answers; sent back unchanged it means "keep the stored one". */
export const MASK = '••••••••';
/** Names masked whatever the type (the specification's list). */
const ALWAYS_SECRET: ReadonlySet<string> = new Set(['smtp_pass', 'hmac_secret', 'bot_token', 'password', 'integration_key']);

/** The type of a channel: the API admits only known types, so a stored or validated one is always known. */
export function typeNamed(name: string): ChannelType {
  const type = channelType(name);
  if (!type) throw new Error(`unknown channel type ${JSON.stringify(name)}`);
  return type;
}

const secretKeysOf = (type: string): ReadonlySet<string> => new Set([...ALWAYS_SECRET, ...typeNamed(type).secretKeys]);

/** The config as answers show it: secret values masked (an empty one stays empty). */
export function maskConfig(type: string, config: Record<string, unknown>): Record<string, unknown> {
  const secret = secretKeysOf(type);
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, secret.has(k) && v !== '' && v !== null && v !== undefined ? MASK : v]));
}

/** A PATCH's config over the stored one: a secret sent back as the mask keeps its stored value. */
export function keepMaskedSecrets(type: string, incoming: Record<string, unknown>, stored: Record<string, unknown>): Record<string, unknown> {
  const secret = secretKeysOf(type);
  return Object.fromEntries(Object.entries(incoming).map(([k, v]) => [k, secret.has(k) && v === MASK && k in stored ? stored[k] : v]));
}

/** Checks a config for its type; 422 naming every failing field (never a value). Returns the config to store. */
export async function checkConfig(type: string, config: Record<string, unknown>, options: SendOptions): Promise<Record<string, unknown>> {
  const checked = await checkForType(typeNamed(type), config, options);
  if (!checked.ok) throw validationFailed(checked.fields);
  return checked.config;
}
