// A worker thread checking one stretch of the chain (verify-range.ts) over its
// own database connection, so stretches are checked on several cores at once
// and the main thread's event loop stays free. Listed as an entry point of the
// compiled binary (build.ts), as Bun needs for workers.
import { openDatabase, type OpenOptions } from '../db/connect.ts';
import type { DatabaseTarget } from '../db/url.ts';
import { Keyring } from './keyring.ts';
import { verifyRange, type RangeReport, type RangeRequest } from './verify-range.ts';

export interface RangeJob {
  target: DatabaseTarget;
  open: OpenOptions;
  keys: { current: string; previous: string[] };
  request: RangeRequest;
}

export type RangeOutcome = { report: RangeReport } | { error: string };

declare const self: Worker;

self.onmessage = async (event: MessageEvent<RangeJob>) => {
  const { target, open, keys, request } = event.data;
  let outcome: RangeOutcome;
  try {
    const db = openDatabase(target, { ...open, create: false, poolSize: 1 });
    try {
      outcome = { report: await verifyRange(db, new Keyring(keys.current, keys.previous), request) };
    } finally {
      await db.close();
    }
  } catch (e) {
    outcome = { error: e instanceof Error ? e.message : String(e) };
  }
  self.postMessage(outcome);
};
