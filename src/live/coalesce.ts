// Coalescing of change notices per (type, project): the first change of a quiet
// key goes out at once (so a lone event reaches a tab with no added delay); the
// changes that follow within the window are merged, their ids united, and go out
// together when the window ends, which opens the next one. A burst of 10,000
// events a second thus becomes at most one notice per key per window.
import { MAX_NOTICE_IDS, type NoticeType } from './protocol.ts';

export interface Change {
  type: NoticeType;
  projectId: string | null;
  ids: string[];
  more: boolean;
}

interface Window {
  pending: { ids: Set<string>; more: boolean } | null;
  timer: ReturnType<typeof setTimeout>;
}

export class Coalescer {
  private readonly open = new Map<string, Window>();

  constructor(
    private readonly windowMs: number,
    private readonly emit: (change: Change) => void,
  ) {}

  add(type: NoticeType, projectId: string | null, ids: readonly string[], more = false): void {
    if (this.windowMs <= 0) return this.emit(capped(type, projectId, ids, more));
    const key = `${type}\u0000${projectId ?? ''}`;
    const w = this.open.get(key);
    if (!w) {
      this.emit(capped(type, projectId, ids, more));
      this.open.set(key, { pending: null, timer: this.timer(key, type, projectId) });
      return;
    }
    const p = (w.pending ??= { ids: new Set(), more: false });
    p.more ||= more;
    for (const id of ids) {
      if (p.ids.size >= MAX_NOTICE_IDS) {
        if (!p.ids.has(id)) p.more = true;
        continue;
      }
      p.ids.add(id);
    }
  }

  private timer(key: string, type: NoticeType, projectId: string | null): ReturnType<typeof setTimeout> {
    const t = setTimeout(() => {
      const w = this.open.get(key);
      if (!w) return;
      if (!w.pending) return void this.open.delete(key);
      const { ids, more } = w.pending;
      w.pending = null;
      w.timer = this.timer(key, type, projectId);
      this.emit({ type, projectId, ids: [...ids], more });
    }, this.windowMs);
    t.unref?.();
    return t;
  }

  /** Drops what is pending (shutdown). */
  clear(): void {
    for (const w of this.open.values()) clearTimeout(w.timer);
    this.open.clear();
  }
}

function capped(type: NoticeType, projectId: string | null, ids: readonly string[], more: boolean): Change {
  const unique = [...new Set(ids)];
  return unique.length > MAX_NOTICE_IDS
    ? { type, projectId, ids: unique.slice(0, MAX_NOTICE_IDS), more: true }
    : { type, projectId, ids: unique, more };
}
