// Redaction of error text before it leaves the process (error tracking).
// An error message can quote anything: a URL with a token in its query or
// credentials in its authority, a header line, a JSON body with a password,
// a database URL, a minted secret. What is sent is the message after these
// rules, never the raw text; a stack is reduced to frames (function, file,
// line, column), so the first line of `err.stack` (the raw message) is
// never sent either.

export const REDACTED = '[redacted]';

/** Words that mark the value after them as secret (key=value, "key": "value", key: value). */
const SECRET_KEYS =
  'password|passwd|passphrase|pwd|secret|token|access_token|refresh_token|id_token|api[_-]?key|apikey|auth|authorization|cookie|set-cookie|session|sessionid|session_id|csrf|xsrf|credentials?|private[_-]?key|signature|sig|hmac|dsn|otp|totp';

const RULES: [RegExp, string][] = [
  // PEM blocks (private keys, certificates) whole.
  [/-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(-----END [A-Z0-9 ]+-----|$)/g, REDACTED],
  // Header lines that carry credentials, to the end of the line.
  [/\b(authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token|x-sentry-auth|x-svc-[a-z-]*token)\b(\s*[:=]\s*)[^\r\n]*/gi, `$1$2${REDACTED}`],
  // Authorization schemes anywhere.
  [/\b(bearer|basic|digest|token|apikey)\s+[A-Za-z0-9._~+/=-]{6,}/gi, `$1 ${REDACTED}`],
  // Credentials in a URL's authority: scheme://user:pass@host.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"<>]+@/gi, `$1${REDACTED}@`],
  // The query string of any URL or path (tokens travel there), up to a fragment or the end of the word.
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#'"<>]*|(?:^|[\s('"=])\/[^\s?#'"<>]*)\?[^\s#'"<>]*/gi, `$1?${REDACTED}`],
  // key=value, key: value, "key": "value" for secret-looking keys.
  [new RegExp(`(["']?\\b(?:[a-z0-9_-]*[_-])?(?:${SECRET_KEYS})["']?\\s*[:=]\\s*)(?!\\[redacted\\])("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s,;&}\\]]+)`, 'gi'), `$1${REDACTED}`],
  // E-mail addresses (personal data).
  [/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, '[email]'],
  // Long token-like runs (hex, base64, base64url, JWT): minted secrets, API keys, session tokens.
  [/(?<![A-Za-z0-9_+/=.-])(?=[A-Za-z0-9_+/=.-]*\d)(?=[A-Za-z0-9_+/=.-]*[A-Za-z])[A-Za-z0-9_+/=.-]{32,}(?![A-Za-z0-9_+/=.-])/g, REDACTED],
];

export interface Redactor {
  (text: string): string;
}

/** A redactor that also replaces each of `known` (configured secret values) wherever it appears. */
export function redactor(known: readonly string[] = [], maxLength = 1000): Redactor {
  // Longest first, so a secret containing another is replaced whole. Very short values would
  // blank out ordinary words; the generic rules above cover them where they sit in key=value form.
  const values = [...new Set(known.filter((v) => v.length >= 8))].sort((a, b) => b.length - a.length);
  return (text: string): string => {
    let out = String(text);
    for (const v of values) out = out.split(v).join(REDACTED);
    for (const [re, to] of RULES) out = out.replace(re, to);
    return out.length > maxLength ? `${out.slice(0, maxLength)}…` : out;
  };
}

export interface StackFrame {
  function?: string;
  filename?: string;
  lineno?: number;
  colno?: number;
  in_app?: boolean;
}

// `    at fn (file:line:col)`, `    at file:line:col`, `    at fn (native)`.
const FRAME = /^\s*at\s+(?:(.+?)\s+\((.+?)(?::(\d+))?(?::(\d+))?\)|(.+?)(?::(\d+))?(?::(\d+))?)\s*$/;

/** Stack frames of `stack`, oldest first (the order error trackers expect), at most `limit`.
 * Only lines shaped like frames are kept: the message lines at the top are dropped. */
export function stackFrames(stack: string | undefined, limit = 50): StackFrame[] {
  if (!stack) return [];
  const frames: StackFrame[] = [];
  for (const line of stack.split('\n')) {
    const m = FRAME.exec(line);
    if (!m) continue;
    const fn = m[1];
    const file = m[2] ?? m[5];
    const lineno = m[3] ?? m[6];
    const colno = m[4] ?? m[7];
    const frame: StackFrame = {};
    if (fn) frame.function = fn.slice(0, 200);
    if (file) {
      frame.filename = file.slice(0, 500);
      frame.in_app = !file.includes('node_modules') && file !== 'native';
    }
    if (lineno) frame.lineno = Number(lineno);
    if (colno) frame.colno = Number(colno);
    frames.push(frame);
    if (frames.length >= limit) break;
  }
  return frames.reverse();
}
