// Run by tests as a separate process (another `--workers` process): claims the
// cooldown of subscription argv[3] in the database argv[2] (a
// SVC_DATABASE_URL) once for each of argv[4] windows, all at the same moment
// as the other claimants (window k at argv[5] + k * 61 s, 60 s long), and
// prints the windows it won as JSON. A start barrier makes the claims race:
// once connected it prints `ready` and waits for its standard input to close,
// which the test does for every claimant at once (otherwise one process could
// be done before another has connected, PostgreSQL's connect above all).
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/connect.ts';
import { parseDatabaseUrl } from '../../src/db/url.ts';
import { isoMicros } from '../../src/lib/clock.ts';
import { claimCooldown } from '../../src/notifications/store.ts';

const [url, subscriptionId, rounds, base] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4]), Number(process.argv[5])];
const db = openDatabase(parseDatabaseUrl(url, '', '/'), { busyTimeoutMs: 30_000 });
await db.all(sql`SELECT 1`);
process.stdout.write('ready\n');
await Bun.stdin.text();
const won: number[] = [];
for (let k = 0; k < rounds; k++) {
  const now = base + k * 61_000_000;
  if (await db.tx((tx) => claimCooldown(tx, subscriptionId, isoMicros(now), isoMicros(now - 60_000_000)))) won.push(k);
}
await db.close();
console.log(JSON.stringify(won));
