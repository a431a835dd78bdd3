// Liveness writes and health samples of a process's agents, gathered into
// shared transactions. With thousands of agents each heartbeat cycle brought
// two small transactions per agent (liveness: two UPDATEs; an agent_status
// sample: a share lock and an INSERT), 8 round trips with BEGIN and COMMIT:
// some 2,000 statements a second, half of all, for 5,000 agents on one replica: the
// replicas and PostgreSQL spent their time on per-statement overhead, not on
// the rows (issue 19, bench/replicas.ts). Here the writes of every agent
// waiting meanwhile go into one transaction of at most five statements.
// One transaction runs at a time per process: the first write after a quiet
// spell goes at once (no added latency), and writes arriving while one runs
// share the next, so the sharing grows with the load. Callers still wait
// for the commit: what they answer (revoked, came online, stored) is known.
import type { Db } from '../db/connect.ts';
import { nowIso } from '../lib/clock.ts';
import { insertHealthSamples, lockLiveAgents, sampleKey, touchAgents, type HealthSampleRow } from './store.ts';

/** Agents (and samples) per transaction: keeps each statement's id list and parameters small. */
const MAX_PER_TRANSACTION = 500;

export interface Seen {
  live: boolean;
  cameOnline: boolean;
}
/** stored; duplicate (the frame was stored before); revoked (nothing stored). */
export type SampleOutcome = 'stored' | 'duplicate' | 'revoked';

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

class Pulse {
  private touches = new Map<string, Waiter<Seen>[]>();
  private samples = new Map<string, { row: HealthSampleRow; waiters: Waiter<SampleOutcome>[] }>();
  private running = false;

  constructor(private readonly db: Db) {}

  touch(agentId: string): Promise<Seen> {
    return new Promise((resolve, reject) => {
      const waiters = this.touches.get(agentId);
      if (waiters) waiters.push({ resolve, reject });
      else this.touches.set(agentId, [{ resolve, reject }]);
      this.start();
    });
  }

  sample(row: HealthSampleRow): Promise<SampleOutcome> {
    return new Promise((resolve, reject) => {
      const key = sampleKey(row);
      const pending = this.samples.get(key);
      if (pending) pending.waiters.push({ resolve, reject });
      else this.samples.set(key, { row, waiters: [{ resolve, reject }] });
      this.start();
    });
  }

  private start(): void {
    if (this.running) return;
    this.running = true;
    // A microtask later: writes of the same turn of the event loop share the transaction.
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.touches.size > 0 || this.samples.size > 0) {
      const touches = take(this.touches);
      const samples = take(this.samples);
      try {
        // Row locks of many agents are taken in list order: should PostgreSQL pick this transaction
        // as a deadlock's victim (against the offline sweep, say), the batch is tried once more.
        const done = await retryOnce(() => this.write(touches, samples));
        for (const [id, waiters] of touches) {
          // Came online once: only the first waiter reacts (agent.online fires once).
          waiters.forEach((w, k) => w.resolve({ live: done.seen.live.has(id), cameOnline: k === 0 && done.seen.cameOnline.has(id) }));
        }
        for (const [key, { row, waiters }] of samples) {
          const live = done.seen.live.has(row.agent_id) || done.alsoLive.has(row.agent_id);
          waiters.forEach((w, k) => w.resolve(!live ? 'revoked' : k === 0 && done.stored.has(key) ? 'stored' : 'duplicate'));
        }
      } catch (e) {
        for (const waiters of touches.values()) for (const w of waiters) w.reject(e);
        for (const { waiters } of samples.values()) for (const w of waiters) w.reject(e);
      }
    }
    this.running = false;
  }

  /** One shared transaction: liveness of the touched agents, then the samples of live agents. */
  private write(touches: Map<string, unknown>, samples: Map<string, { row: HealthSampleRow }>) {
    return this.db.tx(async (tx) => {
      const now = nowIso();
      const seen = touches.size > 0 ? await touchAgents(tx, [...touches.keys()], now) : { live: new Set<string>(), cameOnline: new Set<string>() };
      // Agents with a sample but no liveness due are only checked (and share-locked) as the router's other frames are.
      const unchecked = [...new Set([...samples.values()].map((s) => s.row.agent_id))].filter((id) => !touches.has(id));
      const alsoLive = unchecked.length > 0 ? await lockLiveAgents(tx, unchecked) : new Set<string>();
      const rows = [...samples.values()].map((s) => s.row).filter((r) => seen.live.has(r.agent_id) || alsoLive.has(r.agent_id));
      const stored = rows.length > 0 ? await insertHealthSamples(tx, rows) : new Set<string>();
      return { seen, alsoLive, stored };
    });
  }
}

async function retryOnce<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch {
    return fn();
  }
}

/** Removes and returns the first MAX_PER_TRANSACTION entries (oldest first). */
function take<V>(from: Map<string, V>): Map<string, V> {
  const out = new Map<string, V>();
  for (const [k, v] of from) {
    if (out.size >= MAX_PER_TRANSACTION) break;
    out.set(k, v);
    from.delete(k);
  }
  return out;
}

const pulses = new WeakMap<Db, Pulse>();
const pulseOf = (db: Db): Pulse => {
  let p = pulses.get(db);
  if (!p) pulses.set(db, (p = new Pulse(db)));
  return p;
};

/** Bumps last_seen_at and promotes to online, in the process's next shared liveness transaction. */
export const touchLiveness = (db: Db, agentId: string): Promise<Seen> => pulseOf(db).touch(agentId);

/** Stores an agent_status sample in the next shared transaction, unless the agent is revoked. */
export const storeSample = (db: Db, row: HealthSampleRow): Promise<SampleOutcome> => pulseOf(db).sample(row);
