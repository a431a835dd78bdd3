// Storage contract, run unchanged against SQLite and PostgreSQL
// (SVC_TEST_DIALECT selects; scripts/test runs both).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { eq, sql } from 'drizzle-orm';
import { Database } from 'bun:sqlite';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/connect.ts';
import { appliedMigrations, headRevision, knownMigrations, knownTables, listTables, schemaState, sync, upgrade } from '../../src/db/migrate.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { eventually } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';

let svc: TestService;
let db: Db;
beforeAll(async () => {
  svc = await testService();
  db = svc.ctx.db;
});
afterAll(() => svc.close());

describe(`storage on ${testDialect()}`, () => {
  test('migrations are applied once and stamped', async () => {
    const applied = await appliedMigrations(db);
    expect(applied!.map((a) => a.revision)).toContain(headRevision());
    expect(await upgrade(db)).toEqual([]);
    const state = await schemaState(db);
    expect(state.pending).toEqual([]);
    expect(state.unknown).toEqual([]);
    const tables = await listTables(db);
    for (const t of knownTables(db.dialect)) expect(tables).toContain(t);
  });

  test('a committed transaction is visible; a failed one leaves nothing', async () => {
    const { meta } = db.t;
    await db.tx(async (tx) => {
      await tx.q.insert(tx.t.meta).values({ key: 'contract.a', value: '1' });
    });
    await expect(
      db.tx(async (tx) => {
        await tx.q.insert(tx.t.meta).values({ key: 'contract.b', value: '2' });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const rows = await db.q.select().from(meta).where(sql`${meta.key} LIKE 'contract.%'`);
    expect(rows).toEqual([{ key: 'contract.a', value: '1' }]);
  });

  test('afterCommit hooks run after commit and never after rollback', async () => {
    const seen: string[] = [];
    await db.tx(async (tx) => {
      tx.afterCommit(() => seen.push('committed'));
      await tx.q.insert(tx.t.meta).values({ key: 'contract.c', value: '3' });
      expect(seen).toEqual([]);
    });
    await db
      .tx(async (tx) => {
        tx.afterCommit(() => seen.push('rolled back'));
        throw new Error('no');
      })
      .catch(() => {});
    expect(seen).toEqual(['committed']);
  });

  test('query() binds ? placeholders in order, inside and outside transactions, and refuses a miscount', async () => {
    await db.tx((tx) => tx.query('INSERT INTO svc_meta (key, value) VALUES (?, ?)', ['contract.q', 'v?1']));
    expect(await db.query('SELECT key, value FROM svc_meta WHERE key = ? AND value = ?', ['contract.q', 'v?1'])).toEqual([{ key: 'contract.q', value: 'v?1' }]);
    expect(await db.query('SELECT key FROM svc_meta WHERE key = ?', ['contract.none'])).toEqual([]);
    await expect(db.query('SELECT key FROM svc_meta WHERE key = ?', [])).rejects.toThrow('1 placeholders for 0 parameters');
    await expect(db.query('SELECT key FROM svc_meta WHERE key = ?', ['a', 'b'])).rejects.toThrow('1 placeholders for 2 parameters');
  });

  test('a nested tx() joins the open transaction', async () => {
    await expect(
      db.tx(async (outer) => {
        await outer.q.insert(outer.t.meta).values({ key: 'contract.n1', value: 'x' });
        await db.tx(async (inner) => {
          await inner.q.insert(inner.t.meta).values({ key: 'contract.n2', value: 'y' });
        });
        throw new Error('undo both');
      }),
    ).rejects.toThrow('undo both');
    const rows = await db.q.select().from(db.t.meta).where(sql`${db.t.meta.key} IN ('contract.n1', 'contract.n2')`);
    expect(rows).toEqual([]);
  });

  test('concurrent transactions from one process do not interleave', async () => {
    await db.tx((tx) => tx.q.insert(tx.t.meta).values({ key: 'contract.counter', value: '0' }).then(() => undefined));
    await Promise.all(
      Array.from({ length: 25 }, () =>
        db.tx(async (tx) => {
          const [row] = await tx.all<{ value: string }>(
            tx.dialect === 'postgres'
              ? sql`SELECT value FROM svc_meta WHERE key = 'contract.counter' FOR UPDATE`
              : sql`SELECT value FROM svc_meta WHERE key = 'contract.counter'`,
          );
          await Bun.sleep(1);
          await tx.q
            .update(tx.t.meta)
            .set({ value: String(Number(row!.value) + 1) })
            .where(eq(tx.t.meta.key, 'contract.counter'));
        }),
      ),
    );
    const [row] = await db.q.select().from(db.t.meta).where(eq(db.t.meta.key, 'contract.counter'));
    expect(row!.value).toBe('25');
  });

  test('processes migrating one fresh database at once apply each migration once', async () => {
    const fresh = await testService({ migrate: false });
    try {
      const url = fresh.ctx.database.dialect === 'sqlite' ? `sqlite://${fresh.ctx.database.path}` : fresh.ctx.loaded.config.SVC_DATABASE_URL;
      const child = () =>
        Bun.spawn([process.execPath, `${import.meta.dir}/../helpers/upgrade-child.ts`, url], { stdout: 'pipe', stderr: 'pipe' });
      const procs = [child(), child(), child()];
      const outputs = await Promise.all(procs.map(async (p) => ({ code: await p.exited, out: await new Response(p.stdout).text() })));
      for (const o of outputs) expect(o.code).toBe(0);
      const all = outputs.flatMap((o) => JSON.parse(o.out) as string[]);
      expect(all.sort()).toEqual(knownMigrations(fresh.ctx.db.dialect).map((m) => m.revision));
      const applied = await appliedMigrations(fresh.ctx.db);
      expect(applied!.map((a) => a.revision)).toEqual(all.sort());
    } finally {
      await fresh.close();
    }
  });

  test('a database from a newer svc is refused until synced', async () => {
    await db.tx(async (tx) => {
      await tx.run(sql`INSERT INTO svc_migrations (revision, name, checksum, applied_at) VALUES ('9999', 'from_the_future', 'x', '2099-01-01T00:00:00.000000+00:00')`);
      await tx.run(sql.raw('CREATE TABLE future_things (id TEXT PRIMARY KEY)'));
    });
    await expect(upgrade(db)).rejects.toThrow(/revision 9999, which this svc does not know/);
    const result = await sync(db, true);
    expect(result.removedStamps).toEqual(['9999']);
    expect(result.droppedTables).toEqual(['future_things']);
    expect(await upgrade(db)).toEqual([]);
    expect(await listTables(db)).not.toContain('future_things');
  });
});

describe.if(testDialect() === 'sqlite')('SQLite WAL checkpoints of a running service', () => {
  test('run in a background thread: the database file fills while no commit checkpoints inline', async () => {
    const path = join(tempDir('svc-wal-'), 'svc.db');
    const wal = openDatabase({ dialect: 'sqlite', path }, { backgroundCheckpoints: true });
    try {
      await wal.run(sql`SELECT 1`);
      await wal.tx((tx) => tx.run(sql`CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`));
      const before = statSync(path).size;
      // About 2 MB: below SQLite's own autocheckpoint (1,000 pages), so only the thread moves it into the file.
      for (let i = 0; i < 20; i++) {
        await wal.tx((tx) => tx.query(`INSERT INTO filler (body) SELECT printf('%.1000c', 'x') FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i FROM n)`, []));
      }
      await eventually(() => statSync(path).size > before + 2_000_000, 5000, 'the background checkpoint');
    } finally {
      await wal.close();
    }
    const check = new Database(path, { readonly: true });
    expect(check.query('SELECT COUNT(*) AS n FROM filler').get()).toEqual({ n: 2000 });
    check.close();
  });

  test('writes that never pause still see the WAL start over once it holds more than the limit', async () => {
    // A writer only starts the WAL over when it finds every frame copied back,
    // which one that is always busy never does: the thread has the service
    // pause its writes for a moment and makes the next one start over.
    const path = join(tempDir('svc-wal-'), 'svc.db');
    const wal = openDatabase({ dialect: 'sqlite', path }, { backgroundCheckpoints: true, walRestartAboveBytes: 1_000_000 });
    // The WAL header's checkpoint sequence number goes up each time the file starts over.
    const header = Buffer.alloc(16);
    const startsOver = (): number => {
      const fd = openSync(`${path}-wal`, 'r');
      try {
        readSync(fd, header, 0, 16, 0);
        return header.readUInt32BE(12);
      } finally {
        closeSync(fd);
      }
    };
    let written = 0;
    try {
      await wal.tx((tx) => tx.run(sql`CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`));
      const first = startsOver();
      // Each start-over waits for PASSIVE passes that sync the file: on a slow disk about 5 s apiece.
      const until = Date.now() + 35_000;
      while (startsOver() < first + 3 && Date.now() < until) {
        // About 200 kB a transaction, back to back.
        await wal.tx((tx) => tx.query(`INSERT INTO filler (body) SELECT printf('%.1000c', 'x') FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) SELECT i FROM n)`, []));
        written += 200_000;
        // The event loop turns (as a serving process's does); the writes go on at once.
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(startsOver()).toBeGreaterThanOrEqual(first + 3);
      expect(statSync(`${path}-wal`).size).toBeLessThan(written);
    } finally {
      await wal.close();
    }
    const check = new Database(path, { readonly: true });
    expect(check.query('SELECT COUNT(*) AS n FROM filler').get()).toEqual({ n: written / 1000 });
    check.close();
  }, 50_000);
});
