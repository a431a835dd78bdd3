// Telegram bot: sendMessage to one chat, in Telegram's (legacy) Markdown. The
// bot token travels in the URL path, so it is a secret everywhere: masked in
// lists, cut out of every result, never in a message.
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError } from '../../http/errors.ts';
import type { ChannelType, NotificationPayload } from './base.ts';
import { field, verdict } from './check.ts';
import { bodyText, clip, facts, fence } from './format.ts';
import { postJson } from './http.ts';

const schema = Type.Object(
  {
    bot_token: Type.String({ minLength: 1, maxLength: 256 }),
    chat_id: Type.Union([Type.Integer(), Type.String({ minLength: 1, maxLength: 64 })]),
  },
  { additionalProperties: false },
);
type TelegramConfig = Static<typeof schema>;

const BOT_TOKEN = /^\d+:[A-Za-z0-9_-]+$/;
// A numeric chat id (groups and channels are negative) or a public @channelusername.
const CHAT_ID = /^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$/;

const EXCEPTION_MAX = 1500;
const BODY_MAX = 500;
// Telegram refuses a message over 4096 characters.
const TEXT_MAX = 4096;

/** Legacy Markdown has four special characters, each escaped with a backslash. That works only
 * outside entities (inside one the text runs to its closing character), so workers' text is never
 * put in bold or italics; the fenced exception cannot close early (fence()). */
const esc = (text: string): string => text.replace(/[_*`[]/g, '\\$&');

function telegramText(p: NotificationPayload): string {
  const lines = [esc(p.title), ...facts(p).map(([k, v]) => `${k}: ${esc(v)}`)];
  const body = bodyText(p);
  if (body) lines.push(esc(clip(body, BODY_MAX)));
  if (p.exception) lines.push(fence(clip(p.exception, EXCEPTION_MAX)));
  // Inside (...) only `)` would end the link.
  if (p.link) lines.push(`[Open in svc](${p.link.replaceAll(')', '%29')})`);
  return clip(lines.join('\n'), TEXT_MAX);
}

export const telegram: ChannelType<TelegramConfig> = {
  type: 'telegram',
  schema,
  secretKeys: ['bot_token'],

  // api.telegram.org is fixed by svc, not chosen by the owner: it is checked
  // against the outbound policy when sending, like every destination.
  async validate(config) {
    const errors: FieldError[] = [];
    if (!BOT_TOKEN.test(config.bot_token)) {
      errors.push(field('/config/bot_token', 'must be a bot token as BotFather gives it (<digits>:<letters, digits, _ and ->)', 'bot_token'));
    }
    if (!CHAT_ID.test(String(config.chat_id))) {
      errors.push(field('/config/chat_id', 'must be a numeric chat id (negative for groups) or an @channel name', 'chat_id'));
    }
    return verdict(config, errors);
  },

  send(config, payload, options) {
    return postJson(
      {
        type: 'telegram',
        url: `https://api.telegram.org/bot${config.bot_token}/sendMessage`,
        body: JSON.stringify({ chat_id: config.chat_id, text: telegramText(payload), parse_mode: 'Markdown' }),
        allowHttp: false,
        accepted: [200],
        secrets: [config.bot_token],
      },
      options,
    );
  },
};
