// How a delivery attempt is reported (SendResult) and what it may show. The
// result lands in the delivery log, which every admin of the project reads, so
// nothing in it may carry a channel's secret: messages are built from codes,
// never from the underlying error's text (which quotes URLs and addresses),
// and the receiver's answer has every secret of the config cut out before it
// is shortened (so a secret straddling the cut cannot leave a fragment).
import type { SendResult } from './base.ts';

/** Most of a failing receiver's answer that is kept. */
const RESPONSE_BODY_MAX_BYTES = 2048;
/** Read from the receiver: more than is kept, so redaction sees whole secrets before the cut. */
export const RESPONSE_READ_BYTES = 2 * RESPONSE_BODY_MAX_BYTES;

const REDACTED = '[redacted]';

/** `text` with every occurrence of each secret replaced. */
function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longest first, so a secret containing another is removed whole.
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s !== '') out = out.split(s).join(REDACTED);
  }
  return out;
}

/** At most `max` bytes of UTF-8, cut on a character boundary. */
function capBytes(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= max) return text;
  let end = max;
  // Back up over continuation bytes (10xxxxxx) to the start of a character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

export const delivered = (status: number): SendResult => ({ success: true, status_code: status, error: null, response_body: null });

/** A failed attempt; `error` is built by the caller from codes, `body` is the receiver's answer if any. */
export function failed(error: string, secrets: readonly string[], status: number | null = null, body: string | null = null): SendResult {
  return {
    success: false,
    status_code: status,
    error: redact(error, secrets),
    response_body: body === null || body === '' ? null : capBytes(redact(body, secrets), RESPONSE_BODY_MAX_BYTES),
  };
}
