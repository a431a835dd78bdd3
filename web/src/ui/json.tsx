// Values the agents reported (arguments, results, payloads) as indented JSON in a scrollable block.

export const jsonText = (value: unknown): string => JSON.stringify(value, null, 2) ?? String(value);

/** One line of a value for a table cell, cut at `max` characters. */
export function jsonLine(value: unknown, max = 80): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function JsonBlock(props: { value: unknown; label: string; empty?: string }) {
  if (props.value === null || props.value === undefined) return <p class="muted">{props.empty ?? 'Nothing reported.'}</p>;
  return (
    <pre class="code-block" tabIndex={0} aria-label={props.label}>
      {jsonText(props.value)}
    </pre>
  );
}
