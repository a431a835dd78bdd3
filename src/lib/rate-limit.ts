// Process-local sliding-window limits (per IP, per user). Each worker process
// keeps its own counts, as the spec says of its rate limits.
import { nowMs } from './clock.ts';

export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    /** Keys kept at most; the oldest are forgotten first. */
    private readonly maxKeys = 100_000,
  ) {}

  /** Records a hit for `key`; false (and nothing recorded) when over the limit. */
  take(key: string): boolean {
    const now = nowMs();
    const since = now - this.windowMs;
    const list = (this.hits.get(key) ?? []).filter((t) => t > since);
    if (list.length >= this.limit) {
      this.hits.set(key, list);
      return false;
    }
    list.push(now);
    this.hits.delete(key);
    this.hits.set(key, list);
    if (this.hits.size > this.maxKeys) this.hits.delete(this.hits.keys().next().value!);
    return true;
  }

  /** Seconds until `key` may try again (0 when it may now). */
  retryAfterSeconds(key: string): number {
    const list = this.hits.get(key);
    if (!list || list.length < this.limit) return 0;
    return Math.max(1, Math.ceil((list[0]! + this.windowMs - nowMs()) / 1000));
  }
}

const registries = new WeakMap<object, Map<string, RateLimiter>>();

/** The limiter `name` of one service instance (an AppContext): state belongs
 * to the running service, not to the module, so each instance counts alone. */
export function limiterFor(owner: object, name: string, limit: number, windowMs: number): RateLimiter {
  let registry = registries.get(owner);
  if (!registry) registries.set(owner, (registry = new Map()));
  let limiter = registry.get(name);
  if (!limiter) registry.set(name, (limiter = new RateLimiter(limit, windowMs)));
  return limiter;
}

/** Things one key holds open at once (a user's task exports), counted in this process. */
export class ConcurrencyLimit {
  private readonly held = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** A place for `key`: its release (once; later calls do nothing), or null while `key` holds `limit` places. */
  take(key: string): (() => void) | null {
    const n = this.held.get(key) ?? 0;
    if (n >= this.limit) return null;
    this.held.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  /** Places `key` holds now. */
  countOf(key: string): number {
    return this.held.get(key) ?? 0;
  }
}
