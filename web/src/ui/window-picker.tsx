// The time window of the statistics pages (1 h .. 30 d), kept in the page's address (`?window=`), so a view can
// be linked and the back button returns to the previous window.
import { useLocation } from 'preact-iso';
import { STATS_WINDOWS, type StatsWindow } from '../api/types.ts';
import { Time } from './bits.tsx';

export const WINDOW_LABEL: Record<StatsWindow, string> = {
  '1h': 'last hour',
  '6h': 'last 6 hours',
  '24h': 'last 24 hours',
  '7d': 'last 7 days',
  '30d': 'last 30 days',
};

/** The window in the address, or the default. */
export function useWindow(fallback: StatsWindow = '24h'): StatsWindow {
  const { query } = useLocation();
  return (STATS_WINDOWS as readonly string[]).includes(query.window ?? '') ? (query.window as StatsWindow) : fallback;
}

/** What the statistics answers say of retention (src/stats/schemas.ts). */
export interface Kept {
  partial: boolean;
  kept_since: string;
}

/** Under figures or charts whose window starts before the statistics kept: from when they count. */
export function KeptNote(props: { kept: Kept | undefined; testId: string }) {
  if (!props.kept?.partial) return null;
  return (
    <p class="muted small" data-testid={props.testId}>
      Statistics from before <Time iso={props.kept.kept_since} /> are no longer kept: this window reaches further back, and that part counts
      nothing.
    </p>
  );
}

export function WindowPicker(props: { value: StatsWindow }) {
  const { route, path, query } = useLocation();
  const pickTo = (w: StatsWindow) => {
    const next = new URLSearchParams(query);
    next.set('window', w);
    route(`${path}?${next}`, true);
  };
  return (
    <fieldset class="segmented window-picker">
      <legend class="visually-hidden">Time window</legend>
      {STATS_WINDOWS.map((w) => (
        <label key={w} class={w === props.value ? 'on' : undefined}>
          <input type="radio" name="window" value={w} checked={w === props.value} onChange={() => pickTo(w)} />
          <span title={WINDOW_LABEL[w]}>{w}</span>
        </label>
      ))}
    </fieldset>
  );
}
