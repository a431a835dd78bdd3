// The live update stream of this tab (GET /api/v1/live, docs/live-updates.md): one WebSocket per tab shared by
// every page that listens, subscriptions per project as pages come and go, a ping every 25 s, reconnection with
// backoff (0.5, 1, 2, 5, 10, 30 s; at once when a hidden tab becomes visible after a long silence). The server
// sends small notices (what changed in which project, and the ids); pages refetch the rows or the resource they
// show. While the stream is down, or refuses a project, the pages poll as before: useLive calls them with a
// `resync` on a timer, and once more when the stream is back (notices sent meanwhile were lost).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { LiveNotice, NoticeType, ServerMessage } from '../../../src/live/protocol.ts';
import type { Page, Paged } from './use-paged.ts';

export type { LiveNotice, NoticeType };

/** What a page hears: a notice, or "refetch what you show" (stream back, notices dropped, or a fallback poll). */
export type LiveEvent = LiveNotice | { type: 'resync'; reason: 'reconnected' | 'dropped' | 'poll' };

/** `live`: notices of the page's project arrive; `down`: they do not (the page polls). */
export type LiveState = 'live' | 'down';

const BACKOFF_MS = [500, 1000, 2000, 5000, 10_000, 30_000];
const PING_MS = 25_000;
/** A visible tab that heard nothing for this long reconnects (a laptop lid closed, a proxy that dropped it). */
const SILENT_MS = 50_000;
/** The socket closes this long after the last page stopped listening (navigations re-listen at once). */
const LINGER_MS = 10_000;

interface Listener {
  project: string;
  types: ReadonlySet<NoticeType>;
  hear(e: LiveEvent): void;
  state(s: LiveState): void;
}

class LiveStream {
  private ws: WebSocket | null = null;
  private readonly listeners = new Set<Listener>();
  /** Projects the server confirmed (`subscribed`) on this connection, with the types asked for. */
  private readonly subscribed = new Map<string, string>();
  /** Projects the server refused (not a member, or access lost): their pages poll. */
  private readonly refused = new Set<string>();
  private attempt = 0;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private ping: ReturnType<typeof setInterval> | undefined;
  private linger: ReturnType<typeof setTimeout> | undefined;
  private lastHeard = 0;

  constructor() {
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState !== 'visible' || this.listeners.size === 0) return;
      if (!this.ws || Date.now() - this.lastHeard > SILENT_MS) this.reconnectNow();
    });
  }

  listen(l: Listener): () => void {
    this.listeners.add(l);
    clearTimeout(this.linger);
    if (!this.ws && this.retry === undefined) this.connect();
    else this.sync();
    l.state(this.stateOf(l.project));
    return () => {
      this.listeners.delete(l);
      this.sync();
      if (this.listeners.size === 0) this.linger = setTimeout(() => this.stop(), LINGER_MS);
    };
  }

  private stateOf(project: string): LiveState {
    return this.ws?.readyState === WebSocket.OPEN && this.subscribed.has(project) ? 'live' : 'down';
  }

  private announce(project?: string): void {
    for (const l of this.listeners) if (project === undefined || l.project === project) l.state(this.stateOf(l.project));
  }

  private connect(): void {
    this.retry = undefined;
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/v1/live`);
    this.ws = ws;
    ws.onmessage = (e) => {
      this.lastHeard = Date.now();
      let m: ServerMessage;
      try {
        m = JSON.parse(String(e.data)) as ServerMessage;
      } catch {
        return;
      }
      this.onMessage(m);
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.ping);
      this.subscribed.clear();
      this.announce();
      if (this.listeners.size === 0) return;
      // A session that ended (4401) waits longest: the pages' own requests find out and sign the tab out.
      const delay = e.code === 4401 ? BACKOFF_MS[BACKOFF_MS.length - 1]! : BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)]!;
      this.attempt++;
      this.retry = setTimeout(() => this.connect(), delay);
    };
  }

  private onMessage(m: ServerMessage): void {
    switch (m.type) {
      case 'ready':
        this.attempt = 0;
        this.refused.clear();
        clearInterval(this.ping);
        this.ping = setInterval(() => this.send({ type: 'ping' }), PING_MS);
        this.sync();
        return;
      case 'subscribed':
        this.subscribed.set(m.project, m.types.join(','));
        this.announce(m.project);
        return;
      case 'unsubscribed':
        this.subscribed.delete(m.project);
        if (m.reason === 'access_lost') this.refused.add(m.project);
        this.announce(m.project);
        return;
      case 'error':
        if (m.project !== undefined && m.code === 'not_found') {
          this.refused.add(m.project);
          this.announce(m.project);
        }
        return;
      case 'resync':
        for (const l of this.listeners) l.hear({ type: 'resync', reason: 'dropped' });
        return;
      case 'pong':
        return;
      default:
        for (const l of this.listeners) {
          if (!l.types.has(m.type)) continue;
          if (l.project === '*' || l.project === m.project) l.hear(m);
        }
    }
  }

  /** Subscribes what the listeners want and is not subscribed yet; unsubscribes what nobody wants any more. */
  private sync(): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    const wanted = new Map<string, Set<NoticeType>>();
    for (const l of this.listeners) {
      const set = wanted.get(l.project) ?? new Set<NoticeType>();
      for (const t of l.types) set.add(t);
      wanted.set(l.project, set);
    }
    for (const [project, types] of wanted) {
      const list = [...types].sort();
      if (this.refused.has(project) || this.subscribed.get(project) === list.join(',')) continue;
      this.send({ type: 'subscribe', project, types: list });
    }
    for (const project of [...this.subscribed.keys()]) {
      if (wanted.has(project)) continue;
      this.subscribed.delete(project);
      this.send({ type: 'unsubscribe', project });
    }
  }

  private send(m: unknown): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }

  private reconnectNow(): void {
    clearTimeout(this.retry);
    const ws = this.ws;
    this.ws = null;
    this.subscribed.clear();
    if (ws) {
      ws.onclose = null;
      ws.close();
    }
    clearInterval(this.ping);
    this.announce();
    this.connect();
  }

  private stop(): void {
    if (this.listeners.size > 0) return;
    clearTimeout(this.retry);
    this.retry = undefined;
    clearInterval(this.ping);
    const ws = this.ws;
    this.ws = null;
    this.subscribed.clear();
    this.refused.clear();
    if (ws) {
      ws.onclose = null;
      ws.close(1000);
    }
  }
}

let stream: LiveStream | null = null;

/** Whether `e` may concern the row `id` (a resync or an overflowing notice concerns every row). */
export const concerns = (e: LiveEvent, id: string | undefined): boolean => e.type === 'resync' || e.more === true || (id !== undefined && e.ids.includes(id));

export interface LiveOptions {
  /** At most one call per this many ms (the first at once; what arrives meanwhile is merged). Default 1000. */
  throttleMs?: number;
  /** While the stream is down: a `resync` every this many ms (the page's polling); 0: none. Default 15000. */
  fallbackMs?: number;
}

/** Merges what arrived while a call was running or throttled: one notice per type with the ids united, or a
 * single resync when anything asked for one (or more than ids could say). */
function merge(queued: LiveEvent | null, e: LiveEvent): LiveEvent {
  if (!queued) return e;
  if (queued.type === 'resync') return queued;
  if (e.type === 'resync' || e.type !== queued.type || e.more || queued.more) return { type: 'resync', reason: 'dropped' };
  return { ...e, ids: [...new Set([...queued.ids, ...e.ids])] };
}

/** Listens to the live stream for `project` (a slug, or `*` for every project the user may read) and calls
 * `onEvent` for notices of `types`, throttled, one call at a time; polls through it while the stream is down.
 * Returns whether the page is live. */
export function useLive(
  project: string | null,
  types: readonly NoticeType[],
  onEvent: (e: LiveEvent) => unknown,
  opts: LiveOptions = {},
): LiveState {
  const [state, setState] = useState<LiveState>('down');
  const latest = useRef(onEvent);
  latest.current = onEvent;
  const throttleMs = opts.throttleMs ?? 1000;
  const fallbackMs = opts.fallbackMs ?? 15_000;
  const key = types.join(',');

  useEffect(() => {
    if (project === null) return;
    let stopped = false;
    let running = false;
    let queued: LiveEvent | null = null;
    let last = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async (): Promise<void> => {
      if (stopped || running || !queued) return;
      const wait = last + throttleMs - Date.now();
      if (wait > 0) {
        clearTimeout(timer);
        timer = setTimeout(() => void run(), wait);
        return;
      }
      const e = queued;
      queued = null;
      running = true;
      last = Date.now();
      try {
        await latest.current(e);
      } catch {
        // the page shows its own errors
      } finally {
        running = false;
      }
      void run();
    };
    const hear = (e: LiveEvent) => {
      queued = merge(queued, e);
      void run();
    };
    let poll: ReturnType<typeof setInterval> | undefined;
    let was: LiveState = 'down';
    const since = Date.now();
    const setLive = (s: LiveState) => {
      if (s === was && (s === 'live' || poll !== undefined || fallbackMs <= 0)) return;
      setState(s);
      // Live again after a while down: what changed meanwhile was not heard (a page that just opened has
      // fresh data and is spared the refetch).
      if (s === 'live' && was === 'down' && Date.now() - since > 2000) hear({ type: 'resync', reason: 'reconnected' });
      was = s;
      clearInterval(poll);
      poll = undefined;
      if (s === 'down' && fallbackMs > 0) {
        poll = setInterval(() => {
          if (document.visibilityState !== 'hidden') hear({ type: 'resync', reason: 'poll' });
        }, fallbackMs);
      }
    };
    stream ??= new LiveStream();
    const unlisten = stream.listen({ project, types: new Set(types), hear, state: setLive });
    return () => {
      stopped = true;
      clearTimeout(timer);
      clearInterval(poll);
      unlisten();
    };
  }, [project, key, throttleMs, fallbackMs]);
  return state;
}

/** What a live list adds to the loaded pages: rows that appeared at the head, and fresher copies of rows shown
 * (each remembered with the row it replaced, so a reload that brings a fresher row wins). */
interface Overlay<T> {
  added: T[];
  patched: Map<string, { was: T; now: T }>;
}

const MAX_ADDED = 500;

/** Rows shown below the first page that a notice names are read again one by one, at most this many a notice
 * (a notice naming more, or saying `more`, refreshes the first page only). */
const MAX_ROWS_REREAD = 25;

/** How a list reads one of its rows again: the id notices name it by, and the read. */
export interface RowReread<T> {
  noticeIdOf(item: T): string;
  read(item: T): Promise<T>;
}

/** A keyset-paged list kept up to date by the stream: on a notice of `type` the first page is fetched again and
 * merged into what is shown (new rows on top, changed rows in place), and rows of the pages loaded below that the
 * notice names are read again (`reread`), so a row scrolled far down changes in place too. */
export function useLivePaged<T>(
  paged: Paged<T>,
  project: string,
  type: NoticeType,
  fetchHead: () => Promise<Page<T>>,
  keyOf: (item: T) => string,
  reread: RowReread<T>,
  opts: LiveOptions = {},
): Paged<T> & { live: LiveState } {
  const [overlay, setOverlay] = useState<Overlay<T>>({ added: [], patched: new Map() });
  // A new filter (the list starts over) drops what the stream had added.
  useEffect(() => {
    if (!paged.loaded) setOverlay({ added: [], patched: new Map() });
  }, [paged.loaded]);
  const baseKeys = new Set(paged.items.map(keyOf));
  const items = [
    ...overlay.added.filter((a) => !baseKeys.has(keyOf(a))),
    ...paged.items.map((b) => {
      const p = overlay.patched.get(keyOf(b));
      return p && p.was === b ? p.now : b;
    }),
  ];
  const shown = useRef({ base: paged.items, overlay });
  shown.current = { base: paged.items, overlay };
  const live = useLive(
    project,
    [type],
    async (e) => {
      if (!paged.loaded) return;
      const head = (await fetchHead()).items;
      const below = await rereadBelow(shown.current.base, head, e, keyOf, reread);
      const { base, overlay: o } = shown.current;
      const baseByKey = new Map(base.map((b) => [keyOf(b), b]));
      const addedKeys = new Set(o.added.map(keyOf));
      const patched = new Map(o.patched);
      const fresh: T[] = [];
      let added = o.added;
      for (const h of head) {
        const k = keyOf(h);
        const b = baseByKey.get(k);
        if (b) patched.set(k, { was: b, now: h });
        else if (addedKeys.has(k)) added = added.map((a) => (keyOf(a) === k ? h : a));
        else fresh.push(h);
      }
      for (const [b, now] of below) if (base.includes(b)) patched.set(keyOf(b), { was: b, now });
      setOverlay({ added: [...fresh, ...added].slice(0, MAX_ADDED), patched });
    },
    opts,
  );
  return { ...paged, items, live };
}

/** The rows of `base` outside the first page (`head`) that notice `e` names, each read again (a row whose read
 * fails stays as it is: the next notice or reload brings it). */
async function rereadBelow<T>(base: T[], head: T[], e: LiveEvent, keyOf: (item: T) => string, reread: RowReread<T>): Promise<[T, T][]> {
  if (e.type === 'resync' || e.more) return [];
  const named = new Set(e.ids);
  const inHead = new Set(head.map(keyOf));
  const stale = base.filter((b) => !inHead.has(keyOf(b)) && named.has(reread.noticeIdOf(b)));
  if (stale.length === 0 || stale.length > MAX_ROWS_REREAD) return [];
  const read = await Promise.all(stale.map((b) => reread.read(b).then((now): [T, T] => [b, now], () => null)));
  return read.filter((r): r is [T, T] => r !== null);
}
