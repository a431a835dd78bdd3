// Key figures as a row of cards: a label, the figure, and a line of context (what it is out of, or a trend).
import type { ComponentChildren } from 'preact';

export interface Kpi {
  label: string;
  value: ComponentChildren;
  detail?: ComponentChildren;
  tone?: 'ok' | 'bad' | 'warn';
  href?: string;
  testId?: string;
}

export function KpiCards(props: { items: Kpi[]; label: string }) {
  return (
    <ul class="kpis" aria-label={props.label}>
      {props.items.map((k) => (
        <li key={k.label} class={`kpi${k.tone ? ` ${k.tone}` : ''}`} data-testid={k.testId}>
          <span class="kpi-label">{k.href ? <a href={k.href}>{k.label}</a> : k.label}</span>
          <span class="kpi-value">{k.value}</span>
          {k.detail && <span class="kpi-detail">{k.detail}</span>}
        </li>
      ))}
    </ul>
  );
}
