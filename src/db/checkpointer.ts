// A worker thread that checkpoints the SQLite WAL of a running service over
// its own connection, so that the writes on the request path never wait for
// a checkpoint (copying pages back into the database file and its fsync),
// which with SQLite's default, inline autocheckpoint cost about as much as the
// writes themselves. See openSqlite's `backgroundCheckpoints`.
import { Database } from 'bun:sqlite';
import { closeSync, fsyncSync, openSync } from 'node:fs';

export interface CheckpointerStart {
  path: string;
  intervalMs: number;
  /** WAL content (frames since the file last started over) above which a
   * RESTART checkpoint makes the next writer start the file over. */
  restartAboveBytes: number;
}

declare const self: Worker;

let conn: Database | null = null;
let timer: ReturnType<typeof setInterval> | undefined;
/** The database file, for syncs of our own. */
let file: number | null = null;

/** Thread -> service: pause your writes (a RESTART is due); then resume them. */
export type CheckpointerNote = 'started' | 'stopped' | 'pause-writes' | 'resume-writes';
/** Service -> thread: start, stop, or: writes are paused now. */
export type CheckpointerOrder = CheckpointerStart | 'stop' | 'writes-paused';

let restart: (() => void) | null = null;

/** A RESTART copies at most about this much while writes wait (else more PASSIVE passes first). */
const RESTART_LEFT_BYTES = 1024 * 1024;
const MAX_PASSES = 5;
/** Past this many times the limit a RESTART runs even with more left to copy
 * (writes outpacing the passes), so the WAL stays bounded. */
const HARD_LIMIT_FACTOR = 4;
/** Ticks without a RESTART after one found the WAL still in use. */
const BUSY_SKIP_TICKS = 4;

self.onmessage = (event: MessageEvent<CheckpointerOrder>) => {
  const note = (n: CheckpointerNote) => self.postMessage(n);
  if (event.data === 'stop') {
    clearInterval(timer);
    conn?.close();
    if (file !== null) closeSync(file);
    note('stopped');
    return;
  }
  if (event.data === 'writes-paused') {
    restart?.();
    note('resume-writes');
    return;
  }
  const { path, intervalMs, restartAboveBytes } = event.data;
  const db = (conn = new Database(path, { create: false }));
  const fd = (file = openSync(path, 'r'));
  // Only a RESTART waits (PASSIVE never does): with this process's writes
  // paused, on readers and other processes' writers (`--workers`), whose
  // transactions are short; bounded, as this process's writes wait meanwhile.
  db.exec('PRAGMA busy_timeout = 200');
  const pageBytes = (db.query('PRAGMA page_size').get() as { page_size: number }).page_size;
  type Result = { busy: number; log: number; checkpointed: number };
  const checkpoint = (mode: 'PASSIVE' | 'RESTART') => db.query(`PRAGMA wal_checkpoint(${mode})`).get() as Result;
  // The WAL's frame count when a RESTART last completed: until a writer starts
  // the file over it stays, and an idle service needs no second RESTART.
  let restartedAt = -1;
  let skipTicks = 0;
  timer = setInterval(() => {
    if (restart) return; // waiting for the writes to pause
    let r: Result;
    try {
      // Passes until little is left to copy (writes go on meanwhile): the
      // RESTART below copies the rest while this process's writes wait.
      r = checkpoint('PASSIVE');
      for (let pass = 1; pass < MAX_PASSES && (r.log - r.checkpointed) * pageBytes > RESTART_LEFT_BYTES; pass++) r = checkpoint('PASSIVE');
    } catch {
      return; // busy or locked: the next tick tries again
    }
    // A writer starts the WAL over only when it begins with every frame
    // already copied back, which a busy writer, beginning right after its
    // last commit, never does: the file would grow without end. When it holds
    // too much, the service pauses its writes (a checkpoint waiting for a
    // writer that keeps coming back would wait in vain), a RESTART copies what
    // is left and the next writer starts the file over. Judged by the frames
    // in use, not the file's size: a WAL file keeps its size when reused.
    const ready = (x: Result) => (x.log - x.checkpointed) * pageBytes <= RESTART_LEFT_BYTES || x.log * pageBytes > HARD_LIMIT_FACTOR * restartAboveBytes;
    if (skipTicks > 0) skipTicks--;
    else if (r.log * pageBytes > restartAboveBytes && r.log !== restartedAt && ready(r)) {
      // PASSIVE passes that leave frames behind do not sync the database file; a
      // RESTART does, with writes waiting: flush what they copied first, then
      // copy what came in meanwhile.
      try {
        fsyncSync(fd);
        r = checkpoint('PASSIVE');
      } catch {
        return; // the next tick tries again
      }
      if (!ready(r)) return;
      restart = () => {
        restart = null;
        let done: Result | null = null;
        try {
          done = checkpoint('RESTART');
        } catch {
          // locked: as busy
        }
        // Busy: a reader still uses the WAL (or another process writes); leave it a while.
        if (done && done.busy === 0) restartedAt = done.log;
        else skipTicks = BUSY_SKIP_TICKS;
      };
      note('pause-writes');
    }
  }, intervalMs);
  note('started');
};
