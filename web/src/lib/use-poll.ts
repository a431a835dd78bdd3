// Runs `tick` every `ms` while `active` and the tab is visible: a timeout chained after each answer, so slow
// answers never pile up. For pages that watch something change (an agent connecting, a command's outcome).
import { useEffect, useRef } from 'preact/hooks';

export function usePoll(tick: () => Promise<unknown>, ms: number, active = true): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      timer = setTimeout(async () => {
        if (document.visibilityState !== 'hidden') await latest.current().catch(() => {});
        if (!stopped) schedule();
      }, ms);
    };
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ms, active]);
}
