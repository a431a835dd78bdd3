// Run by tests as a separate process (another `--workers` process): claims the
// cooldown of subscription argv[3] in the database argv[2] (a
// SVC_DATABASE_URL) once for each of argv[4] windows, all at the same moment
// as the other claimants (window k at argv[5] + k * 61 s, 60 s long), and
// prints the windows it won as JSON.
import { openDatabase } from '../../src/db/connect.ts';
import { parseDatabaseUrl } from '../../src/db/url.ts';
import { isoMicros } from '../../src/lib/clock.ts';
import { claimCooldown } from '../../src/notifications/store.ts';

const [url, subscriptionId, rounds, base] = [process.argv[2]!, process.argv[3]!, Number(process.argv[4]), Number(process.argv[5])];
const db = openDatabase(parseDatabaseUrl(url, '', '/'), { busyTimeoutMs: 30_000 });
const won: number[] = [];
for (let k = 0; k < rounds; k++) {
  const now = base + k * 61_000_000;
  if (await db.tx((tx) => claimCooldown(tx, subscriptionId, isoMicros(now), isoMicros(now - 60_000_000)))) won.push(k);
}
await db.close();
console.log(JSON.stringify(won));
