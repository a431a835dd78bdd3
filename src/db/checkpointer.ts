// A worker thread that checkpoints the SQLite WAL of a running service over
// its own connection, so that the writes on the request path never wait for
// a checkpoint (copying pages back into the database file and its fsync),
// which with SQLite's default, inline autocheckpoint cost about as much as the
// writes themselves. See openSqlite's `backgroundCheckpoints`.
import { Database } from 'bun:sqlite';
import { statSync } from 'node:fs';

export interface CheckpointerStart {
  path: string;
  intervalMs: number;
  /** WAL size above which a RESTART checkpoint lets the next writer start the file over. */
  restartAboveBytes: number;
}

declare const self: Worker;

let conn: Database | null = null;
let timer: ReturnType<typeof setInterval> | undefined;

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

self.onmessage = (event: MessageEvent<CheckpointerStart | 'stop'>) => {
  if (event.data === 'stop') {
    clearInterval(timer);
    conn?.close();
    self.postMessage('stopped');
    return;
  }
  const { path, intervalMs, restartAboveBytes } = event.data;
  conn = new Database(path, { create: false });
  // A PASSIVE checkpoint never waits; a RESTART waits a little for writers to finish.
  conn.exec('PRAGMA busy_timeout = 1000');
  timer = setInterval(() => {
    try {
      // Under steady writes a PASSIVE checkpoint rarely catches up completely,
      // and the WAL only starts over after one that does: bound it.
      conn!.exec(walBytes(path) > restartAboveBytes ? 'PRAGMA wal_checkpoint(RESTART)' : 'PRAGMA wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or locked: the next tick tries again.
    }
  }, intervalMs);
  self.postMessage('started');
};
