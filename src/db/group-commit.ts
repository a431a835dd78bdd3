// Group commit for SQLite's one writer. A commit of an ingest upload writes
// every page its rows touched to the WAL, and the random-key indexes (event
// ids, task ids) touch a page or so per row: uploads sharing a transaction
// share those pages and the commit (in a bare loop, four uploads a transaction
// cost a fifth less per event than one). Writes queue while a transaction
// runs and the queued ones share the next; when the caller knows more are on
// their way (frames still being decoded), the writer waits a moment for them.
// Should a shared transaction fail, each write is retried in a transaction of
// its own, so one bad upload never takes others with it. Each write's
// after-commit hooks run once its transaction has committed, and a failing
// hook is logged, never taken for a failed transaction. PostgreSQL runs
// transactions side by side on its pool: there each write is its own.
import { logger } from '../lib/log.ts';
import type { Db, Tx } from './connect.ts';

const log = logger('db');

// Four uploads of 500 events hold the event loop for some 40-60 ms; more gained
// nothing in the bare loop and would hold it longer.
const MAX_PER_TRANSACTION = 4;
/** How long an idle writer waits for writes announced as coming. */
export const GATHER_MS = 2;

interface Job {
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const jobOf = <T>(fn: (tx: Tx) => Promise<T>, resolve: (value: T) => void, reject: (error: unknown) => void): Job => ({
  fn,
  resolve: resolve as (value: unknown) => void,
  reject,
});

class GroupCommit {
  private readonly queue: Job[] = [];
  private draining = false;

  constructor(private readonly db: Db) {}

  run<T>(fn: (tx: Tx) => Promise<T>, moreComing: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push(jobOf(fn, resolve, reject));
      if (this.draining) return;
      this.draining = true;
      if (moreComing) setTimeout(() => void this.drain(), GATHER_MS);
      else void this.drain();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const jobs = this.queue.splice(0, MAX_PER_TRANSACTION);
      try {
        await commit(this.db, jobs);
      } catch (e) {
        if (jobs.length === 1) jobs[0]!.reject(e);
        else for (const job of jobs) await commit(this.db, [job]).catch(job.reject);
      }
    }
    this.draining = false;
  }
}

/** Runs `jobs` in one transaction; once it has committed, their hooks run and they
 * resolve. Throws if the transaction failed (nothing resolved then). */
async function commit(db: Db, jobs: Job[]): Promise<void> {
  const hooks: (() => void)[][] = jobs.map(() => []);
  const results = await db.tx(async (tx) => {
    const out: unknown[] = [];
    for (let i = 0; i < jobs.length; i++) out.push(await jobs[i]!.fn({ ...tx, afterCommit: (f) => hooks[i]!.push(f) }));
    return out;
  });
  jobs.forEach((job, i) => {
    for (const hook of hooks[i]!) {
      try {
        hook();
      } catch (e) {
        log.error({ err: (e as Error).message }, 'an after-commit hook failed');
      }
    }
    job.resolve(results[i]);
  });
}

const writers = new WeakMap<Db, GroupCommit>();

/** Runs `fn` in a write transaction, on SQLite possibly shared with other
 * writes queued meanwhile (so `fn` may run twice: once shared, once alone,
 * when the shared transaction fails; it must keep to the transaction). With
 * `moreComing`, an idle SQLite writer waits GATHER_MS for company. On both
 * databases `fn`'s after-commit hooks run once it has committed; one that
 * throws is logged and fails nothing. */
export function groupedTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, moreComing = false): Promise<T> {
  if (db.dialect !== 'sqlite') return new Promise<T>((resolve, reject) => void commit(db, [jobOf(fn, resolve, reject)]).catch(reject));
  let writer = writers.get(db);
  if (!writer) writers.set(db, (writer = new GroupCommit(db)));
  return writer.run(fn, moreComing);
}
