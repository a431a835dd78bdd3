// The backup file format (src/backup/archive.ts) and the PostgreSQL tool lookup.
import { expect, test } from 'bun:test';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { extractPayload, memberHeader, openBackupFile, parseSize, writeBackupFile, type BackupManifest } from '../../src/backup/archive.ts';
import { pgTool } from '../../src/backup/postgres.ts';
import { tempDir } from '../helpers/home.ts';

const manifestFor = (payload: BackupManifest['payload']): BackupManifest => ({
  format: 'svc-backup',
  format_version: 1,
  svc_version: '0.1.0',
  dialect: 'sqlite',
  revision: '0009',
  created_at: '2026-11-26T00:00:00.000000+00:00',
  payload,
  audit: { state_key_id: null, rows: 0 },
  secret_fingerprint: null,
});

test('a backup file is a tar that tar lists and extracts; the payload comes back byte for byte', () => {
  const dir = tempDir();
  const payload = join(dir, 'payload');
  writeFileSync(payload, crypto.getRandomValues(new Uint8Array(70_001)));
  const file = join(dir, 'b.tar');
  const m = writeBackupFile(file, payload, 'svc.db', manifestFor);
  expect(m.payload.bytes).toBe(70_001);
  const listed = Bun.spawnSync(['tar', '-tvf', file]).stdout.toString();
  expect(listed).toMatch(/-rw------- svc\/svc\s+70001 .* svc\.db/);
  expect(listed).toContain('manifest.json');
  const out = join(dir, 'x');
  mkdirSync(out);
  expect(Bun.spawnSync(['tar', '-xf', file, '-C', out]).exitCode).toBe(0);
  expect(Buffer.compare(readFileSync(join(out, 'svc.db')), readFileSync(payload))).toBe(0);
  expect(JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'))).toEqual(m);
  const opened = openBackupFile(file);
  extractPayload(opened, join(dir, 'back'));
  expect(Buffer.compare(readFileSync(join(dir, 'back')), readFileSync(payload))).toBe(0);
  // Never over an existing file.
  expect(() => writeBackupFile(file, payload, 'svc.db', manifestFor)).toThrow();
});

test('member sizes: octal below 8 GiB, base-256 above (as GNU tar writes and reads them)', () => {
  for (const size of [0, 511, 512, 8 ** 11 - 1, 8 ** 11, 3 * 2 ** 40 + 7]) expect(parseSize(memberHeader('svc.db', size, 0))).toBe(size);
  const big = memberHeader('svc.db', 2 ** 33 + 5, 0);
  expect(big[124]).toBe(0x80);
  const file = join(tempDir(), 'big.tar');
  writeFileSync(file, big);
  // GNU tar reads the size (then complains about the missing data).
  expect(Bun.spawnSync(['tar', '-tvf', file]).stdout.toString()).toContain(String(2 ** 33 + 5));
});

test('a missing PostgreSQL tool is named, with where it was looked for', () => {
  expect(() => pgTool('pg_dump', '/nonexistent', '/nonexistent/postgresql')).toThrow(/pg_dump is not installed \(looked on PATH and in \/nonexistent\/postgresql\/\*\/bin\)/);
});
