// Group commit (src/db/group-commit.ts), on SQLite and PostgreSQL: writes
// queued while a transaction runs share the next one on SQLite, each commits
// or fails on its own account, and a write that decides to write nothing
// leaves the others alone. On PostgreSQL every write is its own transaction.
import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../src/db/connect.ts';
import { GATHER_MS, groupedTx } from '../../src/db/group-commit.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';

let svc: TestService;
let db: Db;
let transactions = 0;
beforeAll(async () => {
  svc = await testService();
  db = svc.ctx.db;
  // Count the transactions the writer opens.
  const tx = db.tx.bind(db);
  (db as { tx: Db['tx'] }).tx = (fn) => {
    transactions++;
    return tx(fn);
  };
});
afterAll(() => svc.close());
beforeEach(async () => {
  await db.tx((tx) => tx.run(sql`DELETE FROM svc_meta WHERE key LIKE 'gc.%'`));
  transactions = 0;
});

const put = (key: string) => async (tx: Tx) => {
  await tx.run(sql`INSERT INTO svc_meta (key, value) VALUES (${key}, 'v')`);
  return key;
};
const stored = async (): Promise<string[]> =>
  (await db.all<{ key: string }>(sql`SELECT key FROM svc_meta WHERE key LIKE 'gc.%' ORDER BY key`)).map((r) => r.key);
const shared = testDialect() === 'sqlite';

test('writes queued while one runs share the next transaction (SQLite); each gets its own result', async () => {
  const results = await Promise.all([groupedTx(db, put('gc.a')), groupedTx(db, put('gc.b')), groupedTx(db, put('gc.c'))]);
  expect(results).toEqual(['gc.a', 'gc.b', 'gc.c']);
  expect(await stored()).toEqual(['gc.a', 'gc.b', 'gc.c']);
  // SQLite: the first runs at once, the two queued behind it share one; PostgreSQL: one each.
  expect(transactions).toBe(shared ? 2 : 3);
});

test('with more writes announced, an idle writer waits a moment and they share one transaction', async () => {
  const first = groupedTx(db, put('gc.a'), true);
  await Bun.sleep(GATHER_MS / 4);
  const second = groupedTx(db, put('gc.b'));
  expect(await Promise.all([first, second])).toEqual(['gc.a', 'gc.b']);
  expect(transactions).toBe(shared ? 1 : 2);
});

test('a failing write fails alone: the others of its transaction are retried on their own and commit', async () => {
  const fail = async (tx: Tx) => {
    await tx.run(sql`INSERT INTO svc_meta (key, value) VALUES ('gc.doomed', 'v')`);
    throw new Error('storage failed');
  };
  const outcomes = await Promise.allSettled([groupedTx(db, put('gc.first')), groupedTx(db, put('gc.a')), groupedTx(db, fail), groupedTx(db, put('gc.b'))]);
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  expect((outcomes[2] as PromiseRejectedResult).reason.message).toBe('storage failed');
  expect(await stored()).toEqual(['gc.a', 'gc.b', 'gc.first']);
});

test('a write that returns without writing (a revoked agent) leaves the others alone', async () => {
  const nothing = async () => null;
  const results = await Promise.all([groupedTx(db, put('gc.a')), groupedTx(db, nothing), groupedTx(db, put('gc.b'))]);
  expect(results).toEqual(['gc.a', null, 'gc.b']);
  expect(await stored()).toEqual(['gc.a', 'gc.b']);
});

test('after-commit hooks run once each after the commit; one that throws fails nothing', async () => {
  const runs: Record<string, number> = {};
  const hooked = (key: string, hook: () => void) => async (tx: Tx) => {
    runs[key] = (runs[key] ?? 0) + 1;
    tx.afterCommit(hook);
    return put(key)(tx);
  };
  const ran: string[] = [];
  const results = await Promise.all([
    groupedTx(db, hooked('gc.first', () => ran.push('first'))),
    groupedTx(db, hooked('gc.a', () => ran.push('a'))),
    groupedTx(db, hooked('gc.b', () => {
      throw new Error('a metric failed');
    })),
    groupedTx(db, hooked('gc.c', () => ran.push('c'))),
  ]);
  expect(results).toEqual(['gc.first', 'gc.a', 'gc.b', 'gc.c']);
  expect(runs).toEqual({ 'gc.first': 1, 'gc.a': 1, 'gc.b': 1, 'gc.c': 1 });
  expect(ran.sort()).toEqual(['a', 'c', 'first']); // PostgreSQL commits them side by side, in any order
  expect(await stored()).toEqual(['gc.a', 'gc.b', 'gc.c', 'gc.first']);
});
