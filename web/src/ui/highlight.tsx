// Search matches as the server gives them: plain text and [start, end) offsets into it (UTF-16 code units).
// The pieces become text nodes and <mark> elements; nothing is ever parsed as HTML, whatever the text holds.
import type { ComponentChildren } from 'preact';

/** `text` with the ranges wrapped in <mark>; overlapping, reversed or out-of-range ranges are clamped or skipped. */
export function marked(text: string, ranges: readonly (readonly number[])[]): ComponentChildren[] {
  const sorted = ranges
    .map(([s, e]) => [Math.max(0, Math.min(s ?? 0, text.length)), Math.max(0, Math.min(e ?? 0, text.length))] as const)
    .filter(([s, e]) => e > s)
    .sort((a, b) => a[0] - b[0]);
  const out: ComponentChildren[] = [];
  let at = 0;
  for (const [s, e] of sorted) {
    if (e <= at) continue;
    const from = Math.max(s, at);
    if (from > at) out.push(text.slice(at, from));
    out.push(<mark key={from}>{text.slice(from, e)}</mark>);
    at = e;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}
