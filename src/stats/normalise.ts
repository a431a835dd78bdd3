// Failure groups: a failure's exception type and message, the message
// normalised so that failures differing only in the values they name (ids,
// numbers, quoted values, addresses, times) fall in one group, and the group's
// key: the first 16 hex digits of SHA-256 over "<type>\n<normalised message>".
// The key depends on nothing else (not the project, not the time), so it is
// stable across restarts, replicas and releases as long as these rules are.

/** Longest exception type and normalised message kept. */
const MAX_TYPE = 200;
const MAX_MESSAGE = 500;
/** How much of a raw message is looked at (keeps the regexes' work bounded). */
const MAX_INPUT = 4000;

export interface Failure {
  /** The exception's class name (`ValueError`, `requests.exceptions.Timeout`); `Unknown` when none was reported. */
  type: string;
  /** The message as reported (cut to 1000 characters). */
  message: string;
}

const TYPE_RE = /^[A-Za-z_][\w.]*$/;
const TYPE_COLON_RE = /^([A-Za-z_][\w.]*): ?([\s\S]*)$/;
const TYPE_CALL_RE = /^([A-Za-z_][\w.]*)\(([\s\S]*)\)$/;

const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

/** Strips one pair of matching quotes around the whole text (a Python repr of a one-argument exception). */
function unquote(s: string): string {
  const t = s.trim().replace(/,$/, '');
  if (t.length >= 2 && (t[0] === "'" || t[0] === '"') && t[t.length - 1] === t[0]) return t.slice(1, -1);
  return t;
}

/** Type and message of an exception text: `Type: message`, `Type('message')`, a bare `Type`, or a traceback ending in one of those. */
function splitException(raw: string): Failure {
  let line = raw;
  if (raw.includes('\n')) line = raw.split('\n').map((l) => l.trim()).filter((l) => l !== '').pop() ?? '';
  if (TYPE_RE.test(line)) return { type: line, message: '' };
  const colon = TYPE_COLON_RE.exec(line);
  if (colon) return { type: colon[1]!, message: colon[2]!.trim() };
  const call = TYPE_CALL_RE.exec(line);
  if (call) return { type: call[1]!, message: unquote(call[2]!) };
  return { type: 'Unknown', message: line };
}

/** The failure a task.failed event reports: `exception` (the class name, or a whole traceback as z4j-rq sends)
 * and `exception_message` when given. */
export function failureOfEvent(data: Record<string, unknown>): Failure {
  const exception = text(data.exception);
  const explicit = text(data.exception_message);
  const split = exception === '' ? { type: 'Unknown', message: '' } : splitException(exception.slice(-MAX_INPUT));
  const message = explicit !== '' ? explicit : split.message;
  return { type: split.type.slice(0, MAX_TYPE), message: message.slice(0, 1000) };
}

// Placeholders, in the order they are applied. Each pattern only sees what the ones before left.
const RULES: [RegExp, string][] = [
  // ISO 8601 date-times and dates (before numbers eat their parts).
  [/\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g, '<time>'],
  // Clock times.
  [/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, '<time>'],
  // UUIDs, with or without dashes.
  [/\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\b/g, '<uuid>'],
  // E-mail addresses.
  [/\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g, '<email>'],
  // URLs.
  [/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>)\]]+/gi, '<url>'],
  // IPv4 addresses, with a port.
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b/g, '<ip>'],
  // IPv6 addresses (at least two groups and a double colon, or eight groups).
  [/(?<![\w:])(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}(?![\w:])|(?<![\w:])(?:[0-9a-fA-F]{1,4}:){1,6}(?::[0-9a-fA-F]{1,4}){1,6}(?![\w:])|(?<![\w:])::(?:[0-9a-fA-F]{1,4}:){0,6}[0-9a-fA-F]{1,4}(?![\w:])/g, '<ip>'],
  // Quoted values (single, double or back quotes, on one line).
  [/'[^'\n]{0,400}'|"[^"\n]{0,400}"|`[^`\n]{0,400}`/g, '<str>'],
  // Memory addresses and other 0x numbers.
  [/\b0x[0-9a-fA-F]+\b/g, '<hex>'],
  // Hex ids: eight or more hex digits with at least one digit and one letter a-f (hashes, object ids).
  [/\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b/g, '<hex>'],
  // Numbers not inside a word (`user_42`, `order-7`, `1.5s`, `500ms` count; `utf8`, `v2`, `s3`, `sha256` stay),
  // with a sign, dotted parts and an exponent.
  [/(?<![A-Za-z0-9.])[-+]?\d+(?:\.\d+)*(?:[eE][-+]?\d+)?/g, '<n>'],
  // Runs of four or more digits anywhere (`job12345`).
  [/\d{4,}/g, '<n>'],
];

/** Runs of one placeholder (`<n>, <n>, <n>`) shrink to one followed by `…`, so lists of any length match. */
const RUN_RE = /(<(?:n|str|hex|uuid|ip|email|url|time)>)(?:[\s,;]+\1)+/g;

/** The message with the values it names replaced by placeholders; white space folded; at most 500 characters. */
export function normaliseMessage(message: string): string {
  let s = message.slice(0, MAX_INPUT);
  for (const [re, placeholder] of RULES) s = s.replace(re, placeholder);
  s = s.replace(RUN_RE, '$1 …');
  return s.replace(/\s+/g, ' ').trim().slice(0, MAX_MESSAGE);
}

const hasher = () => new Bun.CryptoHasher('sha256');

/** The group key of a type and normalised message: 16 lowercase hex digits. */
export function groupKeyOf(type: string, normalisedMessage: string): string {
  return hasher().update(`${type}\n${normalisedMessage}`).digest('hex').slice(0, 16);
}

export const GROUP_KEY_PATTERN = '^[0-9a-f]{16}$';

export interface FailureGroupOf {
  key: string;
  type: string;
  /** Normalised message. */
  message: string;
  /** The message as reported. */
  sample: string;
}

/** A failure event's group. */
export function failureGroupOf(data: Record<string, unknown>): FailureGroupOf {
  const f = failureOfEvent(data);
  const message = normaliseMessage(f.message);
  return { key: groupKeyOf(f.type, message), type: f.type, message, sample: f.message };
}
