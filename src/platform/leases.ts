// Leader election for jobs only one process may run (scheduled audit
// verification, retention pruning): a row per job naming its holder until an
// expiry. Taking or renewing it is one conditional upsert, atomic on both
// databases, so several processes and replicas agree on one holder.
import { sql } from 'drizzle-orm';
import { hostname } from 'node:os';
import type { Db } from '../db/connect.ts';
import { isoMicros, nowMicros } from '../lib/clock.ts';

/** This process, as lease holders name it. */
export const processHolder = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;

/** Takes or renews the lease `name` for `ttlMs`; true when this holder has it. */
export async function acquireLease(db: Db, name: string, ttlMs: number, holder = processHolder): Promise<boolean> {
  const now = nowMicros();
  const rows = await db.tx((tx) =>
    tx.all<{ holder: string }>(sql`
      INSERT INTO svc_leases (name, holder, expires_at) VALUES (${name}, ${holder}, ${isoMicros(now + ttlMs * 1000)})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE svc_leases.holder = excluded.holder OR svc_leases.expires_at < ${isoMicros(now)}
      RETURNING holder`),
  );
  return rows.length === 1 && rows[0]!.holder === holder;
}

export async function releaseLease(db: Db, name: string, holder = processHolder): Promise<void> {
  await db.tx((tx) => tx.run(sql`DELETE FROM svc_leases WHERE name = ${name} AND holder = ${holder}`));
}
