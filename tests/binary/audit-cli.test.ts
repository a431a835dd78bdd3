// `svc audit ...` of the compiled binary on a real SQLite installation.
import { describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, runSvc, startSvc } from '../helpers/binary.ts';

const env = cleanEnv();
const dbPath = join(env.SVC_HOME!, 'svc.db');
const secretOf = (name: string, home = env.SVC_HOME!) => readFileSync(join(home, 'secret.env'), 'utf8').match(new RegExp(`^${name}=(.+)$`, 'm'))?.[1];

async function append(n: number, perTransaction = 1, home = env.SVC_HOME!): Promise<void> {
  const p = Bun.spawn([process.execPath, join(import.meta.dir, '../helpers/append-child.ts'), `sqlite://${join(home, 'svc.db')}`, String(n), '4', String(perTransaction)], {
    env: { ...process.env, SVC_AUDIT_CHAIN_SECRET: secretOf('SVC_AUDIT_CHAIN_SECRET', home)! },
    stderr: 'pipe',
  });
  expect(await p.exited).toBe(0);
}

/** Edits the database as someone with file access could, triggers and all. */
function rawEdit(statements: string[]): void {
  const db = new Database(dbPath);
  db.exec('DROP TRIGGER audit_log_no_update');
  for (const s of statements) db.exec(s);
  db.close();
}

describe('svc audit', () => {
  test('a fresh installation verifies; export-head prints the closed envelope on stdout', async () => {
    const svc = await startSvc(env);
    await svc.stop();
    await append(25);
    const verify = await runSvc(['audit', 'verify'], env);
    expect(verify.code).toBe(0);
    expect(verify.stderr).toContain('audit chain: OK (25 rows verified)');
    expect(verify.stdout).toBe('');
    const head = await runSvc(['audit', 'export-head', '--verify'], env);
    expect(head.code).toBe(0);
    const envelope = JSON.parse(head.stdout);
    expect(Object.keys(envelope)).toEqual(['generation', 'hmac_key_id', 'hmac_version', 'id', 'occurred_at', 'row_hmac']);
    expect(envelope.row_hmac).toMatch(/^[0-9a-f]{64}$/);
    expect((await runSvc(['audit', 'verify', '--known-head', head.stdout.trim()], env)).stderr).toContain('known head: CURRENT_MATCH');
  });

  test('a rollback to an older copy of the database verifies alone but not against the later head', async () => {
    const backup = join(env.SVC_HOME!, 'older.db');
    const live = new Database(dbPath);
    live.exec(`VACUUM INTO '${backup}'`);
    live.close();
    await append(10);
    const later = (await runSvc(['audit', 'export-head'], env)).stdout.trim();
    const headFile = join(env.SVC_HOME!, 'head.json');
    writeFileSync(headFile, later);
    // Restore the older copy over the live database.
    for (const suffix of ['-wal', '-shm']) rmSync(dbPath + suffix, { force: true });
    copyFileSync(backup, dbPath);
    const alone = await runSvc(['audit', 'verify'], env);
    expect(alone.code).toBe(0);
    expect(alone.stderr).toContain('audit chain: OK (25 rows verified)');
    for (const arg of [later, `@${headFile}`]) {
      const anchored = await runSvc(['audit', 'verify', '--known-head', arg], env);
      expect(anchored.code).toBe(1);
      expect(anchored.stderr).toContain('known head: UNPROVABLE');
    }
    const fromStdin = await runSvc(['audit', 'verify', '--known-head', '-'], env, { stdin: later });
    expect(fromStdin.code).toBe(1);
    const invalid = await runSvc(['audit', 'verify', '--known-head', '{"row_hmac":"x","extra":1}'], env);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('known head: INVALID');
  });

  test('tampering: verify exits 1 and names the row; export-head refuses after state tampering', async () => {
    const db = new Database(dbPath);
    const victim = (db.query('SELECT id FROM audit_log ORDER BY occurred_at, id LIMIT 1 OFFSET 12').get() as { id: string }).id;
    db.close();
    rawEdit([`UPDATE audit_log SET metadata = '{"i":12,"forged":true}' WHERE id = '${victim}'`]);
    const r = await runSvc(['audit', 'verify'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`first bad row: ${victim}`);
    expect(r.stderr).toContain(`finding: row ${victim}`);
    const state = new Database(dbPath);
    state.exec("UPDATE audit_chain_state SET active_row_count = 1");
    state.close();
    const head = await runSvc(['audit', 'export-head'], env);
    expect(head.code).toBe(1);
    expect(head.stdout).toBe('');
    expect(head.stderr).toContain('refusing to export an unauthenticated head');
  });
});

describe('a long chain', () => {
  const long = cleanEnv();
  const rows = 110_000;

  test('is verified by worker threads inside the binary, and a row altered in the second half is named', async () => {
    const svc = await startSvc(long);
    await svc.stop();
    await append(rows, 5000, long.SVC_HOME!);
    // 50,000 rows a thread at least: two threads here, one on a single core.
    const threads = Math.min(2, availableParallelism());
    const clean = await runSvc(['audit', 'verify'], long);
    expect(clean.stderr).toContain(`audit chain: OK (${rows} rows verified in ${threads} thread${threads > 1 ? 's' : ''})`);
    expect(clean.code).toBe(0);
    const db = new Database(join(long.SVC_HOME!, 'svc.db'));
    const victim = (db.query('SELECT id FROM audit_log ORDER BY occurred_at, id LIMIT 1 OFFSET 99000').get() as { id: string }).id;
    db.exec('DROP TRIGGER audit_log_no_update');
    db.exec(`UPDATE audit_log SET target_id = 'forged' WHERE id = '${victim}'`);
    db.close();
    const broken = await runSvc(['audit', 'verify'], long);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`first bad row: ${victim}`);
  }, 120_000);
});

describe('chain maintenance commands', () => {
  const env2 = cleanEnv();
  const db2 = join(env2.SVC_HOME!, 'svc.db');
  const secret2 = () => readFileSync(join(env2.SVC_HOME!, 'secret.env'), 'utf8').match(/^SVC_AUDIT_CHAIN_SECRET=(.+)$/m)![1]!;
  const append2 = async (n: number) => {
    const p = Bun.spawn([process.execPath, join(import.meta.dir, '../helpers/append-child.ts'), `sqlite://${db2}`, String(n), '2'], {
      env: { ...process.env, SVC_AUDIT_CHAIN_SECRET: secret2() },
    });
    expect(await p.exited).toBe(0);
  };

  test('every maintenance command has --help', async () => {
    for (const cmd of ['verify', 'export-head', 'rotate-chain-key', 'retire-chain-key', 'activate-chain-state', 'reseal-watermark', 'export-and-delete-frozen', 'fork-cleanup']) {
      const r = await runSvc(['audit', cmd, '--help'], env2);
      expect({ cmd, code: r.code }).toEqual({ cmd, code: 0 });
      expect(r.stdout).toContain(`svc audit ${cmd}`);
    }
  });

  test('rotate-chain-key --generate, then retire-chain-key refuses while old rows remain', async () => {
    const svc = await startSvc(env2);
    await svc.stop();
    await append2(5);
    const before = secret2();
    const rotated = await runSvc(['audit', 'rotate-chain-key', '--generate'], env2);
    expect(rotated.code).toBe(0);
    expect(rotated.stderr).toContain('audit chain key rotated');
    const file = readFileSync(join(env2.SVC_HOME!, 'secret.env'), 'utf8');
    expect(file).toContain(`SVC_AUDIT_CHAIN_PREVIOUS_SECRETS=${before}`);
    expect(secret2()).not.toBe(before);
    expect((await runSvc(['audit', 'verify'], env2)).stderr).toContain('audit chain: OK (6 rows verified)');
    // Rotating again without a new key is refused.
    expect((await runSvc(['audit', 'rotate-chain-key'], env2)).code).toBe(1);
    const db = new Database(db2);
    const oldKey = (db.query("SELECT json_extract(metadata, '$.from_key_id') AS k FROM audit_log WHERE action = 'audit.chain_key_rotated'").get() as { k: string }).k;
    db.close();
    const retire = await runSvc(['audit', 'retire-chain-key', '--key-id', oldKey], env2);
    expect(retire.code).toBe(1);
    expect(retire.stderr).toContain('5 retained rows are still signed with this key');
    expect((await runSvc(['audit', 'retire-chain-key', '--key-id', 'nothex'], env2)).code).toBe(2);
    // The service starts with the rotated key.
    const again = await startSvc(env2);
    expect((await fetch(`${again.url}/api/v1/health/ready`)).status).toBe(200);
    await again.stop();
  });

  test('activate-chain-state, reseal-watermark, export-and-delete-frozen, fork-cleanup report and exit', async () => {
    expect((await runSvc(['audit', 'activate-chain-state'], env2)).stderr).toContain('nothing to activate');
    expect((await runSvc(['audit', 'fork-cleanup'], env2)).stderr).toContain('no forked rows');
    const frozen = await runSvc(['audit', 'export-and-delete-frozen', '--destination', join(env2.SVC_HOME!, 'frozen.jsonl')], env2);
    expect(frozen.code).toBe(1);
    expect(frozen.stderr).toContain('there are no frozen rows');
    expect((await runSvc(['audit', 'export-and-delete-frozen'], env2)).code).toBe(2);
    const reseal = await runSvc(['audit', 'reseal-watermark'], env2);
    expect(reseal.code).toBe(1);
    expect(reseal.stderr).toContain('already where the chain starts');

    // The service refuses to start while the chain state is missing.
    const db = new Database(db2);
    db.exec('DELETE FROM audit_chain_state');
    db.close();
    const refused = await runSvc(['serve', '--port', '0'], env2);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('activate-chain-state');
    const dry = await runSvc(['audit', 'activate-chain-state'], env2);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toContain('would activate: adopting 6 rows');
    const applied = await runSvc(['audit', 'activate-chain-state', '--apply'], env2);
    expect(applied.code).toBe(0);
    expect((await runSvc(['audit', 'verify'], env2)).stderr).toContain('audit chain: OK (7 rows verified)');
  });
});
