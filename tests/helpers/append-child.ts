// Run by tests as a separate process: appends argv[3] audit rows to the
// database argv[2] (a SVC_DATABASE_URL), keeping argv[4] appends in flight
// at once, signed with SVC_AUDIT_CHAIN_SECRET from the environment; argv[5]
// rows a transaction (default 1: one append per action, as the service does).
import { appendRows } from '../../src/audit/chain.ts';
import { AuditService } from '../../src/audit/service.ts';
import { openDatabase } from '../../src/db/connect.ts';
import { parseDatabaseUrl } from '../../src/db/url.ts';

const [url, count, parallel, perTx] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4] ?? 8), Number(process.argv[5] ?? 1)];
const db = openDatabase(parseDatabaseUrl(url, '', '/'), { busyTimeoutMs: 30_000 });
const audit = AuditService.fromConfig({ SVC_AUDIT_CHAIN_SECRET: process.env.SVC_AUDIT_CHAIN_SECRET!, SVC_AUDIT_CHAIN_PREVIOUS_SECRETS: [] });
let next = 0;
await Promise.all(
  Array.from({ length: parallel }, async () => {
    while (next < count) {
      const first = next;
      next = Math.min(count, next + perTx);
      const entries = Array.from({ length: next - first }, (_, k) => ({ action: 'concurrency.append', target_id: `${process.pid}:${first + k}`, metadata: { pid: process.pid, i: first + k } }));
      await db.tx((tx) => appendRows(tx, audit.keyring, entries));
    }
  }),
);
await db.close();
