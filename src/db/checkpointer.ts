// A worker thread that checkpoints the SQLite WAL of a running service over
// its own connection, so that the writes on the request path never wait for
// a checkpoint (copying pages back into the database file and its fsync),
// which with SQLite's default, inline autocheckpoint cost about as much as the
// writes themselves. See openSqlite's `backgroundCheckpoints`.
import { Database } from 'bun:sqlite';

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

/** Thread -> service: pause your writes (a RESTART is due); then resume them. */
export type CheckpointerNote = 'started' | 'stopped' | 'pause-writes' | 'resume-writes';
/** Service -> thread: start, stop, or: writes are paused now. */
export type CheckpointerOrder = CheckpointerStart | 'stop' | 'writes-paused';

let restart: (() => void) | null = null;

self.onmessage = (event: MessageEvent<CheckpointerOrder>) => {
  const note = (n: CheckpointerNote) => self.postMessage(n);
  if (event.data === 'stop') {
    clearInterval(timer);
    conn?.close();
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
  // Only a RESTART waits (PASSIVE never does): with this process's writes
  // paused, on readers and other processes' writers (`--workers`), whose
  // transactions are short; bounded, as this process's writes wait meanwhile.
  db.exec('PRAGMA busy_timeout = 200');
  const pageBytes = (db.query('PRAGMA page_size').get() as { page_size: number }).page_size;
  const checkpoint = (mode: 'PASSIVE' | 'RESTART') => db.query(`PRAGMA wal_checkpoint(${mode})`).get() as { log: number };
  let walFrames = 0;
  timer = setInterval(() => {
    if (restart) return; // waiting for the writes to pause
    try {
      walFrames = checkpoint('PASSIVE').log;
    } catch {
      return; // busy or locked: the next tick tries again
    }
    // A writer starts the WAL over only when it begins with every frame
    // already copied back, which a busy writer, beginning right after its
    // last commit, never does: it would grow without end. When the WAL holds
    // too much, the service pauses its writes (a lock waiting for a writer
    // that keeps coming back would wait in vain), a RESTART copies the rest
    // (the PASSIVE pass just copied nearly everything) and the next writer
    // starts the file over. Judged by the frames in use, not the file's size:
    // a WAL file keeps its size when it starts over.
    if (walFrames * pageBytes <= restartAboveBytes) return;
    restart = () => {
      restart = null;
      try {
        checkpoint('RESTART');
        walFrames = 0;
      } catch {
        // Busy (a reader held on): the next tick tries again.
      }
    };
    note('pause-writes');
  }, intervalMs);
  note('started');
};
