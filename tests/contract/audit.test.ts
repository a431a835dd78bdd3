// The audit chain on both databases: appends, tamper evidence, retention,
// known heads, key lifecycle and recovery operations.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { appendRows, AuditChainError } from '../../src/audit/chain.ts';
import { Keyring } from '../../src/audit/keyring.ts';
import {
  activateChainState,
  exportAndDeleteFrozen,
  forkCleanup,
  prune,
  resealWatermark,
  retireChainKey,
  rotateChainKey,
} from '../../src/audit/maintenance.ts';
import { AuditService } from '../../src/audit/service.ts';
import { loadState } from '../../src/audit/store.ts';
import { envelopeOf, IN_SERVICE, verifyChain } from '../../src/audit/verify.ts';
import { rootCause } from '../../src/lib/errors.ts';
import { sortedJson } from '../../src/lib/sorted-json.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { appendMany, orderedIds, tamper } from '../helpers/audit.ts';

let svc: TestService;
beforeEach(async () => {
  svc = await testService();
});
afterEach(() => svc.close());

const db = () => svc.ctx.db;
const audit = () => svc.ctx.audit;
const keyring = () => audit().keyring;
const headEnvelope = async () => sortedJson(envelopeOf((await loadState(db()))!)!);

describe(`audit chain on ${testDialect()}`, () => {
  test('appends form one chain that verifies', async () => {
    await appendMany(db(), audit(), 40);
    const report = await verifyChain(db(), keyring(), { pageSize: 7 });
    expect(report).toMatchObject({ clean: true, rowsVerified: 40, findings: [] });
    const state = (await loadState(db()))!;
    expect(state.active_row_count).toBe(40);
    expect(state.active_key_counts).toEqual({ [keyring().current.id]: 40 });
  });

  test('concurrent first appends on an empty chain start one chain (no state row to lock yet)', async () => {
    expect(await loadState(db())).toBeNull();
    // Open the pool's connections first (PostgreSQL opens them lazily), so the appends really overlap.
    await Promise.all(Array.from({ length: 10 }, () => db().tx((tx) => tx.run(sql`SELECT 1`))));
    await Promise.all(Array.from({ length: 24 }, (_, i) => audit().record(db(), { action: 'race.first', target_id: String(i) })));
    expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 24, findings: [] });
  });

  test('one transaction appending 2,500 rows (several statements on PostgreSQL) verifies', async () => {
    await db().tx((tx) => appendRows(tx, keyring(), Array.from({ length: 2500 }, (_, i) => ({ action: 'batch.row', metadata: { i, z: 'last', a: 'first' } }))));
    await audit().record(db(), { action: 'after.batch' });
    expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 2501, findings: [] });
    expect((await loadState(db()))!.active_row_count).toBe(2501);
  });

  test('a row appended in a rolled-back transaction leaves nothing', async () => {
    await appendMany(db(), audit(), 3);
    await db()
      .tx(async (tx) => {
        await audit().append(tx, { action: 'never.happened' });
        throw new Error('action failed');
      })
      .catch(() => {});
    expect((await orderedIds(db())).length).toBe(3);
    expect((await verifyChain(db(), keyring())).clean).toBe(true);
  });

  test('the table is append-only: updates and deletes are refused by the database', async () => {
    const [id] = await appendMany(db(), audit(), 2);
    const refusal = (p: Promise<unknown>) => p.then(() => 'accepted', (e) => (rootCause(e) as Error).message);
    expect(await refusal(db().tx((tx) => tx.run(sql`UPDATE audit_log SET action = 'x' WHERE id = ${id!}`)))).toContain('append-only');
    expect(await refusal(db().tx((tx) => tx.run(sql`DELETE FROM audit_log WHERE id = ${id!}`)))).toContain('append-only');
    expect((await verifyChain(db(), keyring())).clean).toBe(true);
  });

  test('anonymising a deleted user keeps the chain verifying; changing the user does not', async () => {
    const row = await audit().record(db(), { action: 'user.login', user_id: '00000000-0000-4000-8000-000000000001' });
    await db().tx((tx) => tx.run(sql`UPDATE audit_log SET user_id = NULL WHERE id = ${row.id}`));
    expect((await verifyChain(db(), keyring())).clean).toBe(true);
    const other = await audit().record(db(), { action: 'user.login', user_id: '00000000-0000-4000-8000-000000000002' });
    await tamper(db(), [`UPDATE audit_log SET user_id = '00000000-0000-4000-8000-000000000003' WHERE id = '${other.id}'`]);
    const report = await verifyChain(db(), keyring());
    expect(report.clean).toBe(false);
    expect(report.firstBadRowId).toBe(other.id);
  });

  test('metadata is stored as canonical text; the same content spelled differently still verifies', async () => {
    const row = await audit().record(db(), { action: 'meta.order', metadata: { zeta: 1, alpha: { b: [1, 'x'], a: null } } });
    const [stored] = await db().query<{ metadata: unknown }>('SELECT metadata FROM audit_log WHERE id = ?', [row.id]);
    if (db().dialect === 'sqlite') expect(stored!.metadata).toBe('{"alpha":{"a":null,"b":[1,"x"]},"zeta":1}');
    else expect(stored!.metadata).toEqual({ zeta: 1, alpha: { b: [1, 'x'], a: null } });
    await tamper(db(), [
      db().dialect === 'postgres'
        ? `UPDATE audit_log SET metadata = '{ "zeta": 1, "alpha": {"b": [1, "x"], "a": null} }'::jsonb WHERE id = '${row.id}'`
        : `UPDATE audit_log SET metadata = '{ "zeta": 1, "alpha": {"b": [1, "x"], "a": null} }' WHERE id = '${row.id}'`,
    ]);
    expect((await verifyChain(db(), keyring())).clean).toBe(true);
  });

  test('appends while a verification walks do not make it fail', async () => {
    await appendMany(db(), audit(), 30);
    let added = 0;
    // Between pages, more rows are appended: the walk covers the rows up to the head it started from.
    const report = await verifyChain(db(), keyring(), { pageSize: 7, onPage: async () => void (await audit().record(db(), { action: 'during.verify', target_id: String(added++) })) });
    expect(report).toMatchObject({ clean: true, rowsVerified: 30, findings: [] });
    expect(added).toBeGreaterThan(3);
    expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 30 + added });
  });

  describe('tampering is caught and the row is named', () => {
    test('changed metadata', async () => {
      const ids = await appendMany(db(), audit(), 10);
      const victim = ids[4]!;
      await tamper(db(), [
        db().dialect === 'postgres'
          ? `UPDATE audit_log SET metadata = '{"i": 999}'::jsonb WHERE id = '${victim}'`
          : `UPDATE audit_log SET metadata = '{"i":999}' WHERE id = '${victim}'`,
      ]);
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      expect(report.firstBadRowId).toBe(victim);
      expect(report.findings[0]).toContain(`row ${victim}`);
      expect(report.findings[0]).toContain('altered');
    });

    test('a deleted middle row', async () => {
      await appendMany(db(), audit(), 10);
      const ordered = await orderedIds(db());
      await tamper(db(), [`DELETE FROM audit_log WHERE id = '${ordered[5]}'`]);
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      expect(report.firstBadRowId).toBe(ordered[6]!);
      expect(report.findings.join('\n')).toContain('records 10 rows but 9 were found');
    });

    test('two rows swapped in order', async () => {
      await appendMany(db(), audit(), 10);
      const rows = await db().all<{ id: string; occurred_at: string }>(sql`SELECT id, occurred_at FROM audit_log ORDER BY occurred_at, id`);
      const [a, b] = [rows[3]!, rows[4]!];
      await tamper(db(), [
        `UPDATE audit_log SET occurred_at = '1999-01-01T00:00:00.000000+00:00' WHERE id = '${a.id}'`,
        `UPDATE audit_log SET occurred_at = '${a.occurred_at}' WHERE id = '${b.id}'`,
        `UPDATE audit_log SET occurred_at = '${b.occurred_at}' WHERE id = '${a.id}'`,
      ]);
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      // b now comes first, right after rows[2], and does not follow it.
      expect(report.firstBadRowId).toBe(b.id);
    });

    test('a row added after the head, outside the chain', async () => {
      const ids = await appendMany(db(), audit(), 5);
      const forged = crypto.randomUUID();
      await tamper(db(), [
        `INSERT INTO audit_log SELECT '${forged}', '2999-01-01T00:00:00.000000+00:00', action, target_type, target_id, result, outcome, event_id, user_id, actor_digest, api_key_id, project_id, source_ip, user_agent, metadata, row_hmac, row_hmac, hmac_key_id, chain_generation FROM audit_log WHERE id = '${ids[4]}'`,
      ]);
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      expect(report.firstBadRowId).toBe(forged);
      expect(report.findings).toEqual([`1 rows lie after the head recorded in the chain state, from row ${forged} (added outside the chain, or the state was moved back)`]);
    });

    test('a row of another generation where none were frozen', async () => {
      const ids = await appendMany(db(), audit(), 4);
      await tamper(db(), [
        `INSERT INTO audit_log SELECT '${crypto.randomUUID()}', occurred_at, action, target_type, target_id, result, outcome, event_id, user_id, actor_digest, api_key_id, project_id, source_ip, user_agent, metadata, NULL, row_hmac, hmac_key_id, '${crypto.randomUUID()}' FROM audit_log WHERE id = '${ids[1]}'`,
      ]);
      const report = await verifyChain(db(), keyring());
      expect(report).toMatchObject({ clean: false, rowsVerified: 4, frozenRows: 1 });
      expect(report.findings).toEqual(['frozen rows of earlier generations do not match their recorded digest (1 found, 0 recorded)']);
    });

    test('a truncated tail (newest rows removed)', async () => {
      await appendMany(db(), audit(), 6);
      const ordered = await orderedIds(db());
      await tamper(db(), [`DELETE FROM audit_log WHERE id IN ('${ordered[4]}', '${ordered[5]}')`]);
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      expect(report.findings.join('\n')).toContain('is not the head recorded in the chain state');
    });

    test('an altered chain state is refused, and appends stop', async () => {
      await appendMany(db(), audit(), 3);
      await db().tx((tx) => tx.run(sql`UPDATE audit_chain_state SET active_row_count = 2`));
      const report = await verifyChain(db(), keyring());
      expect(report.clean).toBe(false);
      expect(report.findings[0]).toContain('does not authenticate');
      await expect(audit().record(db(), { action: 'x' })).rejects.toBeInstanceOf(AuditChainError);
    });
  });

  test('retention pruning leaves an authenticated prune point and a verifying chain', async () => {
    await appendMany(db(), audit(), 12);
    const rows = await db().all<{ id: string; occurred_at: string; row_hmac: string }>(sql`SELECT id, occurred_at, row_hmac FROM audit_log ORDER BY occurred_at, id`);
    const cutoff = rows[5]!.occurred_at; // rows 0..4 are older
    expect(await prune(db(), keyring(), cutoff)).toBe(5);
    const state = (await loadState(db()))!;
    expect(state.prune_row_hmac).toBe(rows[4]!.row_hmac);
    expect(state.active_row_count).toBe(7);
    const report = await verifyChain(db(), keyring());
    expect(report).toMatchObject({ clean: true, rowsVerified: 7 });
    // A pruning done behind the service's back (no prune point) is caught.
    await tamper(db(), [`DELETE FROM audit_log WHERE id = '${rows[5]!.id}'`]);
    expect((await verifyChain(db(), keyring())).firstBadRowId).toBe(rows[6]!.id);
  });

  describe('known heads', () => {
    test('CURRENT_MATCH, then VERIFIED_ANCESTOR as the chain grows', async () => {
      await appendMany(db(), audit(), 5);
      const head = await headEnvelope();
      expect((await verifyChain(db(), keyring(), { knownHead: head })).knownHead).toBe('CURRENT_MATCH');
      await appendMany(db(), audit(), 3);
      const later = await verifyChain(db(), keyring(), { knownHead: head });
      expect(later).toMatchObject({ knownHead: 'VERIFIED_ANCESTOR', clean: true });
    });

    test('PRUNE_MATCH and CURRENT_PRUNE_MATCH', async () => {
      await appendMany(db(), audit(), 4);
      const head = await headEnvelope();
      await appendMany(db(), audit(), 2);
      const newest = (await loadState(db()))!.head_occurred_at!;
      const state4 = JSON.parse(head) as { occurred_at: string };
      // Prune exactly up to the exported head.
      const rows = await db().all<{ occurred_at: string }>(sql`SELECT occurred_at FROM audit_log ORDER BY occurred_at, id`);
      await prune(db(), keyring(), rows[4]!.occurred_at);
      expect(state4.occurred_at < newest).toBe(true);
      expect((await verifyChain(db(), keyring(), { knownHead: head })).knownHead).toBe('PRUNE_MATCH');
      const current = await headEnvelope();
      await prune(db(), keyring(), '9999-01-01T00:00:00.000000+00:00');
      expect((await verifyChain(db(), keyring(), { knownHead: current })).knownHead).toBe('CURRENT_PRUNE_MATCH');
    });

    test('UNPROVABLE and INVALID are not clean', async () => {
      await appendMany(db(), audit(), 2);
      const unknown = sortedJson({ row_hmac: 'a'.repeat(64) });
      expect(await verifyChain(db(), keyring(), { knownHead: unknown })).toMatchObject({ knownHead: 'UNPROVABLE', clean: false });
      const head = JSON.parse(await headEnvelope());
      for (const bad of [sortedJson({ ...head, extra: 1 }), '{"row_hmac":"xyz"}', 'not json', sortedJson({ ...head, hmac_version: 2 })]) {
        expect(await verifyChain(db(), keyring(), { knownHead: bad })).toMatchObject({ knownHead: 'INVALID', clean: false });
      }
    });

    test('rolling the database back to an earlier state verifies on its own but not against a later head', async () => {
      await appendMany(db(), audit(), 5);
      // Snapshot the audit tables as a backup would.
      const earlierState = (await db().all(sql`SELECT * FROM audit_chain_state`))[0] as Record<string, unknown>;
      const earlierIds = await orderedIds(db());
      await appendMany(db(), audit(), 4);
      const laterHead = await headEnvelope();
      // Roll back: the later rows vanish and the earlier state returns, as in a restore.
      const later = (await orderedIds(db())).filter((id) => !earlierIds.includes(id));
      const cols = Object.keys(earlierState);
      const literal = (v: unknown) => (v === null ? 'NULL' : typeof v === 'number' ? String(v) : `'${(typeof v === 'string' ? v : JSON.stringify(v)).replace(/'/g, "''")}'`);
      await tamper(db(), [
        `DELETE FROM audit_log WHERE id IN (${later.map((id) => `'${id}'`).join(', ')})`,
        'DELETE FROM audit_chain_state',
        `INSERT INTO audit_chain_state (${cols.join(', ')}) VALUES (${cols.map((c) => literal(earlierState[c])).join(', ')})`,
      ]);
      expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 5 });
      expect(await verifyChain(db(), keyring(), { knownHead: laterHead })).toMatchObject({ clean: false, knownHead: 'UNPROVABLE' });
    });
  });

  describe('key lifecycle', () => {
    test('rotate to a new key, keep verifying old rows, retire the old key once its rows are pruned', async () => {
      await appendMany(db(), audit(), 3);
      const oldSecret = svc.ctx.config.SVC_AUDIT_CHAIN_SECRET;
      const rotated = new Keyring('n'.repeat(48), [oldSecret]);
      // Appends refuse until the chain is rotated to the new key.
      await expect(new AuditService(rotated).record(db(), { action: 'x' })).rejects.toThrow(/rotate-chain-key/);
      const { from, to } = await rotateChainKey(db(), rotated);
      expect(from).toBe(keyring().current.id);
      expect(to).toBe(rotated.current.id);
      await appendMany(db(), new AuditService(rotated), 2);
      expect(await verifyChain(db(), rotated)).toMatchObject({ clean: true, rowsVerified: 6 });
      const marker = await db().all<{ action: string; hmac_key_id: string }>(sql`SELECT action, hmac_key_id FROM audit_log WHERE action = 'audit.chain_key_rotated'`);
      expect(marker).toEqual([{ action: 'audit.chain_key_rotated', hmac_key_id: rotated.current.id }]);
      // Without the old key the old rows no longer verify.
      expect((await verifyChain(db(), new Keyring('n'.repeat(48)))).clean).toBe(false);
      await expect(retireChainKey(db(), rotated, from)).rejects.toThrow(/still signed with this key/);
      const rows = await db().all<{ occurred_at: string }>(sql`SELECT occurred_at FROM audit_log ORDER BY occurred_at, id`);
      await prune(db(), rotated, rows[3]!.occurred_at);
      await retireChainKey(db(), rotated, from);
      expect(await verifyChain(db(), new Keyring('n'.repeat(48)))).toMatchObject({ clean: true });
    });
  });

  describe('recovery operations', () => {
    test('activate-chain-state adopts rows that verify when the state row is lost', async () => {
      await appendMany(db(), audit(), 4);
      await db().tx((tx) => tx.run(sql`DELETE FROM audit_chain_state`));
      await expect(audit().record(db(), { action: 'x' })).rejects.toThrow(/activate-chain-state/);
      const dry = await activateChainState(db(), keyring(), { apply: false });
      expect(dry).toMatchObject({ mode: 'adopt', rows: 4 });
      expect(await loadState(db())).toBeNull();
      await activateChainState(db(), keyring(), { apply: true });
      expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 5 });
      await appendMany(db(), audit(), 1);
      expect((await verifyChain(db(), keyring())).clean).toBe(true);
      await expect(activateChainState(db(), keyring(), { apply: true })).rejects.toThrow(/nothing to activate/);
    });

    test('rows that no longer verify are frozen under a digest, exported and deleted', async () => {
      await appendMany(db(), audit(), 4);
      const lostKey = new Keyring('l'.repeat(48));
      const plan = await activateChainState(db(), lostKey, { apply: true });
      expect(plan).toMatchObject({ mode: 'freeze', rows: 4 });
      expect(await verifyChain(db(), lostKey)).toMatchObject({ clean: true, rowsVerified: 1, frozenRows: 4 });
      // A frozen row changed after the fact is caught by the digest.
      const lines: string[] = [];
      const result = await exportAndDeleteFrozen(db(), lostKey, (l) => lines.push(l), { apply: true });
      expect(result.rows).toBe(4);
      expect(lines).toHaveLength(4);
      expect(JSON.parse(lines[0]!).action).toStartWith('test.action');
      expect(await verifyChain(db(), lostKey)).toMatchObject({ clean: true, frozenRows: 0 });
    });

    test('a frozen row altered after activation breaks the digest', async () => {
      await appendMany(db(), audit(), 3);
      const lostKey = new Keyring('l'.repeat(48));
      await activateChainState(db(), lostKey, { apply: true });
      const [first] = await orderedIds(db());
      await tamper(db(), [`UPDATE audit_log SET action = 'rewritten' WHERE id = '${first}'`]);
      expect((await verifyChain(db(), lostKey)).findings.join()).toContain('frozen rows');
      await expect(exportAndDeleteFrozen(db(), lostKey, () => {}, { apply: true })).rejects.toThrow(/digest/);
    });

    test('reseal-watermark accepts a start the operator has examined', async () => {
      await appendMany(db(), audit(), 6);
      const ordered = await orderedIds(db());
      await tamper(db(), [`DELETE FROM audit_log WHERE id IN ('${ordered[0]}', '${ordered[1]}')`]);
      expect((await verifyChain(db(), keyring())).clean).toBe(false);
      const dry = await resealWatermark(db(), keyring(), { apply: false });
      expect(dry).toMatchObject({ rowsRecorded: 6, rowsFound: 4 });
      expect((await verifyChain(db(), keyring())).clean).toBe(false);
      await resealWatermark(db(), keyring(), { apply: true });
      expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 5 });
      const [marker] = await db().all<{ metadata: unknown }>(sql`SELECT metadata FROM audit_log WHERE action = 'audit.watermark_resealed'`);
      expect(marker).toBeDefined();
    });

    test('fork-cleanup quarantines rows that branch off the chain', async () => {
      await appendMany(db(), audit(), 5);
      const rows = await db().all<Record<string, unknown>>(sql`SELECT * FROM audit_log ORDER BY occurred_at, id`);
      const base = rows[2]!;
      const forkId = '11111111-1111-4111-8111-111111111111';
      const cols = Object.keys(base);
      const literal = (c: string, v: unknown) =>
        c === 'id' ? `'${forkId}'` : c === 'row_hmac' ? `'${'f'.repeat(64)}'` : v === null ? 'NULL' : `'${(typeof v === 'string' ? v : JSON.stringify(v)).replace(/'/g, "''")}'`;
      await tamper(db(), [
        'DROP INDEX audit_log_prev_unique',
        `INSERT INTO audit_log (${cols.join(', ')}) VALUES (${cols.map((c) => literal(c, base[c])).join(', ')})`,
      ]);
      expect((await verifyChain(db(), keyring())).clean).toBe(false);
      expect(await forkCleanup(db(), keyring(), { apply: false })).toEqual([forkId]);
      expect(await forkCleanup(db(), keyring(), { apply: true })).toEqual([forkId]);
      expect(await verifyChain(db(), keyring())).toMatchObject({ clean: true, rowsVerified: 6 });
      const quarantined = await db().all<{ id: string }>(sql`SELECT id FROM audit_log_forks`);
      expect(quarantined).toEqual([{ id: forkId }]);
    });
  });
});

test(`1,000 concurrent appends from two processes leave one unbroken chain (${testDialect()})`, async () => {
  const url = svc.ctx.database.dialect === 'sqlite' ? `sqlite://${svc.ctx.database.path}` : svc.ctx.loaded.config.SVC_DATABASE_URL;
  const env = { ...process.env, SVC_AUDIT_CHAIN_SECRET: svc.ctx.config.SVC_AUDIT_CHAIN_SECRET };
  const procs = [0, 1].map(() =>
    Bun.spawn([process.execPath, `${import.meta.dir}/../helpers/append-child.ts`, url, '500', '16'], { env, stdout: 'pipe', stderr: 'pipe' }),
  );
  const results = await Promise.all(procs.map(async (p) => ({ code: await p.exited, err: await new Response(p.stderr).text() })));
  for (const r of results) expect(r).toEqual({ code: 0, err: '' });
  const report = await verifyChain(svc.ctx.db, svc.ctx.audit.keyring);
  expect(report).toMatchObject({ clean: true, rowsVerified: 1000, findings: [] });
  const pids = await svc.ctx.db.all<{ n: number }>(sql`SELECT COUNT(DISTINCT target_id) AS n FROM audit_log`);
  expect(Number(pids[0]!.n)).toBe(1000);
}, 120_000);

describe(`long chains are checked in worker threads (${testDialect()})`, () => {
  // At least 50,000 rows a thread: with two threads, the walk is cut in two at the middle row.
  const ROWS = 110_000;

  test('the same report as one thread; a row altered after the cut and a row removed at the cut are named', async () => {
    for (let done = 0; done < ROWS; done += 5000) {
      await db().tx((tx) => appendRows(tx, keyring(), Array.from({ length: 5000 }, (_, i) => ({ action: 'bulk.row', target_id: String(done + i), metadata: { i: done + i } }))));
    }
    const inThread = await verifyChain(db(), keyring());
    expect(inThread).toMatchObject({ clean: true, rowsVerified: ROWS, threads: 0 });
    // As the service runs it (one worker thread), and as `svc audit verify` does (this thread and a worker).
    expect(await verifyChain(db(), keyring(), IN_SERVICE)).toEqual({ ...inThread, threads: 1 });
    expect(await verifyChain(db(), keyring(), { threads: 2, callingThreadToo: true })).toEqual({ ...inThread, threads: 2 });
    const threaded = await verifyChain(db(), keyring(), { threads: 2 });
    expect(threaded).toEqual({ ...inThread, threads: 2 });

    const ordered = await orderedIds(db());
    const cut = ROWS / 2;
    await tamper(db(), [
      `DELETE FROM audit_log WHERE id = '${ordered[cut + 1]}'`,
      db().dialect === 'postgres'
        ? `UPDATE audit_log SET metadata = '{"i": -1}'::jsonb WHERE id = '${ordered[80_000]}'`
        : `UPDATE audit_log SET metadata = '{"i":-1}' WHERE id = '${ordered[80_000]}'`,
    ]);
    const broken = await verifyChain(db(), keyring(), { threads: 2 });
    expect(broken).toMatchObject({ clean: false, rowsVerified: ROWS - 1, firstBadRowId: ordered[cut + 2], threads: 2 });
    expect(broken.findings[0]).toStartWith(`row ${ordered[cut + 2]} (`);
    expect(broken.findings[0]).toContain('does not follow the row before it');
    expect(broken.findings[1]).toStartWith(`row ${ordered[80_000]} (`);
    expect(broken.findings[1]).toContain('altered');
    expect(broken.findings).toContain(`the chain state records ${ROWS} rows but ${ROWS - 1} were found`);
    const again = await verifyChain(db(), keyring());
    expect({ ...again, threads: 2 }).toEqual(broken);
    expect(await verifyChain(db(), keyring(), { threads: 2, callingThreadToo: true })).toEqual(broken);
  }, 120_000);
});
