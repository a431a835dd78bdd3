// Loads something for a page and keeps it with its error and a reload; a slower, older answer never
// overwrites a newer one.
import { useCallback, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { asApiError, type ApiError } from '../api/client.ts';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
}

export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  // The caller names what the loader depends on, as with useEffect.
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    try {
      const value = await load();
      if (mine !== generation.current) return;
      setData(value);
      setError(null);
    } catch (e) {
      if (mine === generation.current) setError(asApiError(e));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, deps);
  // A layout effect: the request leaves as the page is committed, not a frame later (useEffect waits for the
  // next animation frame, and a project page waits for two loads in a row).
  useLayoutEffect(() => {
    void reload();
    return () => {
      generation.current++;
    };
  }, [reload]);
  return { data, error, loading, reload };
}
