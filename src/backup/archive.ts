// The backup file: a POSIX tar (ustar) of two members, the database payload
// (`svc.db`, a SQLite clone, or `svc.pgdump`, a pg_dump custom-format
// archive) and `manifest.json`, which names the payload's size and SHA-256
// and what restore checks before touching anything (format, svc version,
// dialect, migration revision, the audit chain's key). Plain tar, so
// `tar -xf` gets the files out by hand; written payload first, so the
// payload's digest is known when the manifest is written, and read from the
// member headers alone (seeks), so a restore refuses a wrong dialect or a
// newer revision before reading gigabytes.
//
// Written to a hidden temporary file beside the destination (mode 0600 from
// its creation) and linked into place at the end: the destination never
// holds a partial backup, and an existing one is never replaced (link()
// refuses, whatever raced us).
import { closeSync, fstatSync, fsyncSync, linkSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import type { Dialect } from '../db/connect.ts';
import { Refused } from './errors.ts';

export const BACKUP_FORMAT = 'svc-backup';
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_NAME = 'manifest.json';
export const payloadName = (dialect: Dialect): string => (dialect === 'sqlite' ? 'svc.db' : 'svc.pgdump');

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  svc_version: string;
  dialect: Dialect;
  /** The newest migration applied in the payload (null: none). */
  revision: string | null;
  /** When the snapshot began: the data is as of that moment (or one a few milliseconds later). */
  created_at: string;
  payload: { name: string; bytes: number; sha256: string };
  /** The chain state's key id and the rows it counts, read in the same snapshot as the payload. */
  audit: { state_key_id: string | null; rows: number };
  /** Fingerprint of the SVC_SECRET agents' tokens and sessions were issued under. */
  secret_fingerprint: string | null;
  /** `svc migrate prepare-runtime-rollback`: the revision an older runtime is to run at. */
  rollback_to?: string;
}

/** The file is not a usable backup (not one, truncated, corrupt, of another format). */
export class BackupFileError extends Refused {}

const BLOCK = 512;
const CHUNK = 4 * 1024 * 1024;
/** 11 octal digits: sizes below 8 GiB; larger ones use GNU's base-256 form (GNU tar and bsdtar read it). */
const OCTAL_LIMIT = 8 ** 11;

function writeOctal(header: Buffer, offset: number, width: number, value: number): void {
  header.write(value.toString(8).padStart(width - 1, '0') + '\0', offset, width, 'ascii');
}

/** A ustar member header (exported for tests). */
export function memberHeader(name: string, size: number, mtimeSeconds: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  writeOctal(h, 100, 8, 0o600);
  writeOctal(h, 108, 8, 0);
  writeOctal(h, 116, 8, 0);
  if (size < OCTAL_LIMIT) writeOctal(h, 124, 12, size);
  else {
    h[124] = 0x80;
    let rest = BigInt(size);
    for (let i = 135; i > 124; i--) {
      h[i] = Number(rest & 0xffn);
      rest >>= 8n;
    }
  }
  writeOctal(h, 136, 12, mtimeSeconds);
  h.write('        ', 148, 8, 'ascii');
  h.write('0', 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write('svc', 265, 32, 'ascii');
  h.write('svc', 297, 32, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

interface Member {
  name: string;
  offset: number;
  size: number;
}

/** The size field of a member header: octal, or GNU's base-256 (exported for tests). */
export function parseSize(h: Buffer): number {
  if ((h[124]! & 0x80) !== 0) {
    let v = 0n;
    for (let i = 125; i < 136; i++) v = (v << 8n) | BigInt(h[i]!);
    return Number(v);
  }
  const text = h.toString('ascii', 124, 136).replace(/\0.*$/s, '').trim();
  if (!/^[0-7]+$/.test(text)) throw new BackupFileError('not an svc backup (a member header is malformed)');
  return parseInt(text, 8);
}

function headerChecksumOk(h: Buffer): boolean {
  const stored = parseInt(h.toString('ascii', 148, 156).replace(/\0.*$/s, '').trim(), 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
  return stored === sum;
}

/** The members of a tar file, from their headers (the data is skipped). */
function members(fd: number, fileSize: number): Member[] {
  const found: Member[] = [];
  const h = Buffer.alloc(BLOCK);
  let at = 0;
  for (;;) {
    if (at + BLOCK > fileSize) throw new BackupFileError('the backup is truncated (it ends inside its contents)');
    readSync(fd, h, 0, BLOCK, at);
    if (h.every((b) => b === 0)) return found;
    if (h.toString('ascii', 257, 262) !== 'ustar' || !headerChecksumOk(h)) {
      throw new BackupFileError(found.length === 0 ? 'not an svc backup (not a tar archive made by svc backup)' : 'the backup is corrupt (a member header does not check)');
    }
    const size = parseSize(h);
    const name = h.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    found.push({ name, offset: at + BLOCK, size });
    at += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (found.length > 16) throw new BackupFileError('not an svc backup (too many members)');
  }
}

/** Copies `length` bytes from `src` at `from` to `dst` at `to`, hashing them. */
function copyHashing(src: number, from: number, dst: number, to: number, length: number): string {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(CHUNK);
  let done = 0;
  while (done < length) {
    const n = readSync(src, buf, 0, Math.min(CHUNK, length - done), from + done);
    if (n === 0) throw new BackupFileError('the backup is truncated');
    hash.update(buf.subarray(0, n));
    writeAll(dst, buf.subarray(0, n), to + done);
    done += n;
  }
  return hash.digest('hex');
}

/** SHA-256 of a whole file, read in chunks. */
export function sha256File(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const hash = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let n; (n = readSync(fd, buf, 0, CHUNK, null)) > 0; ) hash.update(buf.subarray(0, n));
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let written = 0;
  while (written < data.length) written += writeSync(fd, data, written, data.length - written, position + written);
}

/** A hidden file beside `path`, for work that ends in a rename or link to it. */
export const besideTemp = (path: string, tag: string): string => join(dirname(path), `.${basename(path)}.${tag}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);

/**
 * Writes the backup file `dest` from the payload file: tar of the payload,
 * then the manifest `complete()` builds from the payload's size and digest.
 * Refuses an existing `dest` (before and at the end). Returns the manifest.
 */
export function writeBackupFile(dest: string, payloadPath: string, name: string, complete: (payload: BackupManifest['payload']) => BackupManifest): BackupManifest {
  const tmp = besideTemp(dest, 'partial');
  const out = openSync(tmp, 'wx', 0o600);
  let manifest: BackupManifest;
  try {
    const src = openSync(payloadPath, 'r');
    try {
      const size = fstatSync(src).size;
      const mtime = Math.floor(Date.now() / 1000);
      writeAll(out, memberHeader(name, size, mtime), 0);
      const sha256 = copyHashing(src, 0, out, BLOCK, size);
      let at = BLOCK + size;
      const pad = (Math.ceil(size / BLOCK) * BLOCK) - size;
      if (pad > 0) writeAll(out, Buffer.alloc(pad), at);
      at += pad;
      manifest = complete({ name, bytes: size, sha256 });
      const text = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
      writeAll(out, memberHeader(MANIFEST_NAME, text.length, mtime), at);
      at += BLOCK;
      writeAll(out, Buffer.concat([text, Buffer.alloc(Math.ceil(text.length / BLOCK) * BLOCK - text.length + 2 * BLOCK)]), at);
    } finally {
      closeSync(src);
    }
    fsyncSync(out);
    closeSync(out);
    linkSync(tmp, dest); // EEXIST when something appeared there meanwhile
    syncDir(dirname(dest));
  } catch (e) {
    try {
      closeSync(out);
    } catch {
      /* already closed */
    }
    throw e;
  } finally {
    unlinkSync(tmp);
  }
  return manifest;
}

export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface OpenedBackup {
  path: string;
  manifest: BackupManifest;
  payload: Member;
}

/** Reads and checks the manifest of a backup file (headers only; the payload is checked by extractPayload). */
export function openBackupFile(path: string): OpenedBackup {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) throw new BackupFileError('the backup file is empty');
    const found = members(fd, size);
    const entry = found.find((m) => m.name === MANIFEST_NAME);
    if (!entry) throw new BackupFileError('the backup has no manifest (it is truncated, or not made by svc backup)');
    if (entry.offset + entry.size > size) throw new BackupFileError('the backup is truncated');
    const text = Buffer.alloc(entry.size);
    readSync(fd, text, 0, entry.size, entry.offset);
    const manifest = parseManifest(text.toString('utf8'));
    const payload = found.find((m) => m.name === manifest.payload.name);
    if (!payload) throw new BackupFileError(`the backup has no ${manifest.payload.name}`);
    if (payload.size !== manifest.payload.bytes) throw new BackupFileError(`the backup is corrupt: ${payload.name} holds ${payload.size} bytes, its manifest says ${manifest.payload.bytes}`);
    if (payload.offset + payload.size > size) throw new BackupFileError('the backup is truncated');
    return { path, manifest, payload };
  } finally {
    closeSync(fd);
  }
}

function parseManifest(text: string): BackupManifest {
  let m: BackupManifest;
  try {
    m = JSON.parse(text);
  } catch {
    throw new BackupFileError('the backup manifest is not valid JSON (corrupt)');
  }
  if (m?.format !== BACKUP_FORMAT) throw new BackupFileError('not an svc backup (its manifest names another format)');
  if (m.format_version !== BACKUP_FORMAT_VERSION) throw new BackupFileError(`backup format version ${m.format_version} is not one this svc reads (${BACKUP_FORMAT_VERSION}); use a newer svc`);
  const ok =
    (m.dialect === 'sqlite' || m.dialect === 'postgres') &&
    (m.revision === null || (typeof m.revision === 'string' && /^\d{4}$/.test(m.revision))) &&
    typeof m.payload?.name === 'string' &&
    m.payload.name === payloadName(m.dialect) &&
    Number.isSafeInteger(m.payload.bytes) &&
    /^[0-9a-f]{64}$/.test(m.payload.sha256 ?? '');
  if (!ok) throw new BackupFileError('the backup manifest is incomplete or malformed (corrupt)');
  return m;
}

/** Copies the payload to `to` (created with mode 0600, must not exist), checking its size and SHA-256. */
export function extractPayload(backup: OpenedBackup, to: string): void {
  const src = openSync(backup.path, 'r');
  try {
    const dst = openSync(to, 'wx', 0o600);
    try {
      const digest = copyHashing(src, backup.payload.offset, dst, 0, backup.payload.size);
      if (digest !== backup.manifest.payload.sha256) {
        throw new BackupFileError(`the backup is corrupt: ${backup.payload.name} does not match the SHA-256 in its manifest`);
      }
      fsyncSync(dst);
    } finally {
      closeSync(dst);
    }
  } finally {
    closeSync(src);
  }
}
