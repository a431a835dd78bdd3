// A keyset-paged list (tasks, commands): the first page on load, further pages appended with the answer's
// next_cursor. Like useResource, an answer for an older filter never lands on the current one.
import { useCallback, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { asApiError, type ApiError } from '../api/client.ts';

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface Paged<T> {
  items: T[];
  /** False until the first page arrived (or failed). */
  loaded: boolean;
  hasMore: boolean;
  loadingMore: boolean;
  error: ApiError | null;
  more: () => Promise<void>;
  /** Loads the first page again, replacing what is shown. */
  reload: () => Promise<void>;
}

/** Empty pages with a cursor read through before one is shown. */
const EMPTY_PAGE_HOPS = 9;

export function usePaged<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>, deps: unknown[]): Paged<T> {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const generation = useRef(0);

  // The caller names what fetchPage depends on, as with useEffect.
  const load = useCallback(async (cursor: string | null) => {
    const mine = cursor === null ? ++generation.current : generation.current;
    if (cursor !== null) setLoadingMore(true);
    try {
      let page = await fetchPage(cursor);
      // A page may come back empty with a cursor (the task list reads a budget of tasks a page when its
      // index does not serve the filter): read on a few times before showing nothing.
      for (let hop = 0; page.items.length === 0 && page.next_cursor !== null && hop < EMPTY_PAGE_HOPS && mine === generation.current; hop++) {
        page = await fetchPage(page.next_cursor);
      }
      if (mine !== generation.current) return;
      setItems((old) => (cursor === null ? page.items : [...old, ...page.items]));
      setNext(page.next_cursor);
      setError(null);
    } catch (e) {
      if (mine === generation.current) setError(asApiError(e));
    } finally {
      if (mine === generation.current) {
        setLoaded(true);
        setLoadingMore(false);
      }
    }
  }, deps);

  // As in useResource: the first page is asked for at commit, not a frame later.
  useLayoutEffect(() => {
    setItems([]);
    setNext(null);
    setLoaded(false);
    void load(null);
    return () => {
      generation.current++;
    };
  }, [load]);

  return {
    items,
    loaded,
    hasMore: next !== null,
    loadingMore,
    error,
    more: () => (next !== null && !loadingMore ? load(next) : Promise.resolve()),
    reload: () => load(null),
  };
}
