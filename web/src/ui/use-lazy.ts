// Part of a page in a chunk of its own (like lazyPage for whole pages): the module is imported when first wanted,
// once per tab, and the page renders without it meanwhile. For what not every visit needs: the task list's bulk
// actions (operators only), the overview's charts (below the key figures). `load` must be a constant of its
// module, so every page using it shares one import.
import { useEffect, useState } from 'preact/hooks';

const loaded = new Map<() => Promise<unknown>, unknown>();
const loading = new Map<() => Promise<unknown>, Promise<unknown>>();

export interface Lazy<T> {
  value: T | null;
  /** The chunk could not be fetched (svc upgraded while the tab was open, or unreachable). */
  failed: boolean;
}

export function useLazy<T>(load: () => Promise<T>, wanted = true): Lazy<T> {
  const [value, setValue] = useState<T | null>(() => (loaded.get(load) as T | undefined) ?? null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (!wanted || value) return;
    let live = true;
    let p = loading.get(load);
    if (!p) {
      p = load();
      loading.set(load, p);
    }
    p.then(
      (m) => {
        loaded.set(load, m);
        if (live) setValue(() => m as T);
      },
      () => {
        loading.delete(load);
        if (live) setFailed(true);
      },
    );
    return () => {
      live = false;
    };
  }, [wanted]);
  return { value, failed };
}

/** What a page shows where a part could not be fetched. */
export const LAZY_FAILED = 'This part of the page could not be fetched from svc (it may have been upgraded since this tab was opened): reload the page.';
