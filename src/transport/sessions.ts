// The long-poll session registry of one process: a verifier and signer per
// (agent, session nonce), at most 4096 sessions and 16 per agent, idle ones
// expiring after five minutes. A request holds a lease on its session while it
// runs; only idle (unleased) sessions are ever evicted, and an agent may only
// evict its own, otherwise the caller answers 503 with Retry-After: 1.
//
// A nonce whose frame failed verification leaves an invalidation marker: every
// request of that agent under any nonce gets 409 until a connect probe under a
// fresh nonce retires the markers (or they sit idle for five minutes).
import { nowMicros } from '../lib/clock.ts';

export const SESSION_LIMITS = { total: 4096, perAgent: 16, idleSeconds: 300 } as const;

export interface SessionEntry<S> {
  readonly agentId: string;
  readonly nonce: string;
  readonly state: S;
  lastUsedMicros: number;
  leases: number;
}

export type Acquired<S> = { session: SessionEntry<S> } | { full: true };

export class SessionRegistry<S> {
  private readonly sessions = new Map<string, SessionEntry<S>>();
  private readonly byAgent = new Map<string, Set<string>>();
  private readonly markers = new Map<string, Map<string, number>>();

  constructor(private readonly limits: { total: number; perAgent: number; idleSeconds: number } = SESSION_LIMITS) {}

  get size(): number {
    return this.sessions.size;
  }

  private key = (agentId: string, nonce: string) => `${agentId}\u0000${nonce}`;
  private idleCutoff = () => nowMicros() - this.limits.idleSeconds * 1_000_000;

  /** True when an invalidation marker blocks this request. A connect probe under
   * a nonce that is not itself invalidated retires the agent's markers instead. */
  blocked(agentId: string, nonce: string, isProbe: boolean): boolean {
    const marks = this.markers.get(agentId);
    if (!marks) return false;
    const cutoff = this.idleCutoff();
    for (const [n, at] of marks) if (at < cutoff) marks.delete(n);
    if (marks.size === 0) {
      this.markers.delete(agentId);
      return false;
    }
    if (isProbe && !marks.has(nonce)) {
      this.markers.delete(agentId);
      return false;
    }
    if (marks.has(nonce)) marks.set(nonce, nowMicros());
    return true;
  }

  /** The session for (agent, nonce), created with `make` when new; leased until release(). */
  acquire(agentId: string, nonce: string, make: () => S): Acquired<S> {
    const key = this.key(agentId, nonce);
    let entry = this.sessions.get(key);
    if (!entry) {
      if (!this.makeRoom(agentId)) return { full: true };
      entry = { agentId, nonce, state: make(), lastUsedMicros: nowMicros(), leases: 0 };
      this.sessions.set(key, entry);
      let keys = this.byAgent.get(agentId);
      if (!keys) this.byAgent.set(agentId, (keys = new Set()));
      keys.add(key);
    }
    entry.leases++;
    entry.lastUsedMicros = nowMicros();
    return { session: entry };
  }

  release(entry: SessionEntry<S>): void {
    entry.leases = Math.max(0, entry.leases - 1);
    entry.lastUsedMicros = nowMicros();
  }

  /** Replaces the session with an invalidation marker (signature or replay failure). */
  invalidate(entry: SessionEntry<S>): void {
    this.remove(this.key(entry.agentId, entry.nonce));
    let marks = this.markers.get(entry.agentId);
    if (!marks) this.markers.set(entry.agentId, (marks = new Map()));
    marks.set(entry.nonce, nowMicros());
  }

  /** Forgets every session and marker of an agent (revocation). */
  dropAgent(agentId: string): void {
    for (const key of [...(this.byAgent.get(agentId) ?? [])]) this.remove(key);
    this.markers.delete(agentId);
  }

  /** Drops sessions and markers idle past the expiry. */
  sweep(): void {
    const cutoff = this.idleCutoff();
    for (const [key, e] of this.sessions) if (e.leases === 0 && e.lastUsedMicros < cutoff) this.remove(key);
    for (const [agentId, marks] of this.markers) {
      for (const [n, at] of marks) if (at < cutoff) marks.delete(n);
      if (marks.size === 0) this.markers.delete(agentId);
    }
  }

  private remove(key: string): void {
    const e = this.sessions.get(key);
    if (!e) return;
    this.sessions.delete(key);
    const keys = this.byAgent.get(e.agentId);
    keys?.delete(key);
    if (keys && keys.size === 0) this.byAgent.delete(e.agentId);
  }

  /** The agent's least recently used idle session, if any. */
  private idleOf(agentId: string): string | null {
    let best: string | null = null;
    let at = Infinity;
    for (const key of this.byAgent.get(agentId) ?? []) {
      const e = this.sessions.get(key)!;
      if (e.leases === 0 && e.lastUsedMicros < at) {
        at = e.lastUsedMicros;
        best = key;
      }
    }
    return best;
  }

  private makeRoom(agentId: string): boolean {
    const own = () => this.byAgent.get(agentId)?.size ?? 0;
    if (this.sessions.size < this.limits.total && own() < this.limits.perAgent) return true;
    this.sweep();
    if (own() >= this.limits.perAgent || this.sessions.size >= this.limits.total) {
      const victim = this.idleOf(agentId);
      if (!victim) return false;
      this.remove(victim);
    }
    return this.sessions.size < this.limits.total && own() < this.limits.perAgent;
  }
}
