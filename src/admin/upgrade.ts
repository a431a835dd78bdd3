// `svc upgrade [--apply]`: the release manifest at SVC_VERSION_CHECK_URL
// (src/admin/versions.ts) compared with this build, and with --apply the
// binary it names for this OS and architecture installed in place of the
// running executable. Every request goes through the guarded outbound client
// (destination policy, size cap, deadline); the signature and the binary may
// redirect a few times, each hop checked again. Before anything is replaced the
// binary must match the manifest's SHA-256 (and size, when given), the
// manifest must carry a valid Ed25519 signature when SVC_UPDATE_PUBLIC_KEY is
// set, and the new binary's own `version` must print the version the manifest
// promised. Then: written beside the executable, fsynced, the current one
// hard-linked to `<exe>.old`, the new one renamed over `<exe>`, the directory
// fsynced. A failure at any step leaves `<exe>` as it was.
import { createHash } from 'node:crypto';
import { accessSync, closeSync, constants, copyFileSync, fchmodSync, fsyncSync, linkSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ApiError } from '../http/errors.ts';
import { guardedFetchBytes, type GuardedBytesResponse, type GuardedFailure, type GuardedInit } from '../outbound/client.ts';
import { VERSION } from '../version.ts';
import { compareVersions, fetchManifest, newerPackages, type UpdateInfo } from './versions.ts';

/** The key of this build's entry in the manifest's `binaries`: `linux-x64`, `linux-arm64`, `darwin-arm64`, ... */
export const PLATFORM = `${process.platform}-${process.arch}`;
/** The largest binary downloaded (a manifest `size` lowers it). */
export const MAX_BINARY_BYTES = 512 * 1024 * 1024;
const SIGNATURE_MAX_BYTES = 1024;
const VERSION_RUN_TIMEOUT_MS = 30_000;
/** Suffix of the previous binary kept beside the executable. */
export const OLD_SUFFIX = '.old';

/** Any failure of `svc upgrade`: the message is safe to print (no manifest query string, no resolved address). */
export class UpgradeError extends Error {}

export type UpgradeOptions = {
  /** SVC_VERSION_CHECK_URL. */
  url: string;
  /** SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP, as for the version check. */
  allowHttp: boolean;
  /** SVC_UPDATE_PUBLIC_KEY: base64 of a raw Ed25519 public key, or empty. */
  publicKey: string;
  downloadTimeoutMs: number;
};

export type BinaryEntry = { url: URL; sha256: string; size: number | null };

export type Release = {
  installed: string;
  /** `packages.svc` of the manifest, when it names one. */
  latest: string | null;
  /** `latest` is newer than this build. */
  newer: boolean;
  /** Every package of the manifest newer than the installed one (the version check's list). */
  updates: UpdateInfo[];
  /** This platform's binary, or why there is none usable. */
  binary: BinaryEntry | { problem: string };
  /** The manifest's signature was checked against SVC_UPDATE_PUBLIC_KEY. */
  signed: boolean;
};

export type Installed = { exe: string; kept: string; previous: string; version: string; bytes: number; signed: boolean };

/** Where a URL points, for messages: no credentials, no query (either may hold a token). */
export const shownUrl = (u: URL): string => `${u.protocol}//${u.host}${u.pathname}`;

/** The detached signature of the manifest: its URL with `.sig` appended to the path (the query kept). */
export function signatureUrl(manifestUrl: string): URL {
  const u = new URL(manifestUrl);
  u.pathname += '.sig';
  return u;
}

/** The raw 32-byte key of SVC_UPDATE_PUBLIC_KEY (base64 or base64url). */
export function decodePublicKey(text: string): Uint8Array<ArrayBuffer> {
  const t = text.trim();
  const raw = /^[A-Za-z0-9+/_-]+={0,2}$/.test(t) ? Buffer.from(t, 'base64') : Buffer.alloc(0);
  if (raw.length !== 32) throw new UpgradeError('SVC_UPDATE_PUBLIC_KEY is not the base64 of a 32-byte Ed25519 public key');
  return new Uint8Array(raw);
}

/** A signature file holds the 64 signature bytes themselves or their base64. */
function decodeSignature(bytes: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer> | null {
  if (bytes.length === 64) return bytes;
  const t = new TextDecoder().decode(bytes).trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) return null;
  const raw = Buffer.from(t, 'base64');
  return raw.length === 64 ? new Uint8Array(raw) : null;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/** A GET through the guarded client that follows up to five redirects (release hosts such as
 * GitHub's answer downloads with one); every hop is checked against the outbound policy again. */
async function download(url: URL, init: GuardedInit): Promise<GuardedBytesResponse | GuardedFailure> {
  let at = url;
  for (let hop = 0; ; hop++) {
    const res = await guardedFetchBytes(at, { ...init, method: 'GET' });
    const location = res.ok && REDIRECTS.has(res.status) ? res.headers.get('location') : null;
    if (location === null || hop === MAX_REDIRECTS) return res;
    try {
      at = new URL(location, at);
    } catch {
      return res;
    }
  }
}

async function verifySignature(manifest: Uint8Array<ArrayBuffer>, options: UpgradeOptions): Promise<void> {
  const key = decodePublicKey(options.publicKey);
  const res = await download(signatureUrl(options.url), {
    headers: { accept: 'application/octet-stream, text/plain' },
    maxResponseBytes: SIGNATURE_MAX_BYTES,
    timeoutMs: 10_000,
    allowHttp: options.allowHttp,
  });
  if (!res.ok) throw new UpgradeError(`could not fetch the manifest signature: ${res.message}`);
  if (res.status !== 200) throw new UpgradeError(`the manifest signature (${shownUrl(signatureUrl(options.url))}) answered HTTP ${res.status}`);
  const signature = res.truncated ? null : decodeSignature(res.bytes);
  if (!signature) throw new UpgradeError('the manifest signature is not an Ed25519 signature (64 bytes, raw or base64)');
  const publicKey = await crypto.subtle.importKey('raw', key, { name: 'Ed25519' }, false, ['verify']);
  if (!(await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, signature, manifest))) {
    throw new UpgradeError('the manifest signature does not verify against SVC_UPDATE_PUBLIC_KEY');
  }
}

function binaryEntry(manifest: Record<string, unknown>, manifestUrl: string): BinaryEntry | { problem: string } {
  if (manifest.schema !== 1) return { problem: `the manifest's schema is ${JSON.stringify(manifest.schema ?? null)}, not 1` };
  const binaries = manifest.binaries;
  const entry = binaries && typeof binaries === 'object' && Object.hasOwn(binaries, PLATFORM) ? (binaries as Record<string, unknown>)[PLATFORM] : undefined;
  if (entry === undefined) return { problem: `the manifest names no binary for ${PLATFORM}` };
  const e = (entry && typeof entry === 'object' ? entry : {}) as Record<string, unknown>;
  let url: URL;
  try {
    if (typeof e.url !== 'string') throw new Error();
    url = new URL(e.url, manifestUrl);
  } catch {
    return { problem: `the manifest's ${PLATFORM} binary has no valid url` };
  }
  if (typeof e.sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(e.sha256)) return { problem: `the manifest's ${PLATFORM} binary has no sha256 (64 hex digits)` };
  const size = e.size ?? null;
  if (size !== null && !(Number.isSafeInteger(size) && (size as number) > 0 && (size as number) <= MAX_BINARY_BYTES)) {
    return { problem: `the manifest's ${PLATFORM} binary has an invalid size (1..${MAX_BINARY_BYTES} bytes)` };
  }
  return { url, sha256: e.sha256.toLowerCase(), size: size as number | null };
}

/** Fetches the manifest (checking its signature when `verify` and a key is set) and compares it with this build. */
export async function readRelease(options: UpgradeOptions, verify: boolean): Promise<Release> {
  // A mistyped key is reported whatever the mode, before any request.
  if (options.publicKey !== '') decodePublicKey(options.publicKey);
  // Over plain http the manifest's checksums could be anyone's: installing needs its signature.
  if (verify && options.publicKey === '' && /^http:/i.test(options.url)) {
    throw new UpgradeError('--apply from a plain http manifest needs SVC_UPDATE_PUBLIC_KEY (the manifest signed) or an https SVC_VERSION_CHECK_URL');
  }
  let fetched: Awaited<ReturnType<typeof fetchManifest>>;
  try {
    fetched = await fetchManifest(options.url, options.allowHttp);
  } catch (e) {
    if (e instanceof ApiError) throw new UpgradeError(e.message);
    throw e;
  }
  const signed = verify && options.publicKey !== '';
  if (signed) await verifySignature(fetched.bytes, options);
  const packages = fetched.manifest.packages;
  const svc = packages && typeof packages === 'object' ? (packages as Record<string, unknown>).svc : undefined;
  const latest = typeof svc === 'string' && /^\d+(\.\d+)*/.test(svc) ? svc : null;
  return {
    installed: VERSION,
    latest,
    newer: latest !== null && compareVersions(latest, VERSION) > 0,
    updates: newerPackages(fetched.manifest),
    binary: binaryEntry(fetched.manifest, options.url),
    signed,
  };
}

/** The file this process runs from (symlinks resolved: the target is what gets replaced). */
export function currentExecutable(): string {
  if (!Bun.main.startsWith('/$bunfs/')) throw new UpgradeError('--apply replaces the compiled svc executable; this process runs from source');
  if (process.platform === 'win32') throw new UpgradeError('--apply cannot replace a running executable on Windows; replace it by hand');
  try {
    return realpathSync(process.execPath);
  } catch {
    throw new UpgradeError('cannot locate the running executable');
  }
}

const tempName = (exe: string, what: string): string =>
  join(dirname(exe), `.${basename(exe)}.${what}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`);

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Writes `bytes` to a new file with `mode` and makes it durable. */
function writeDurably(path: string, bytes: Uint8Array, mode: number): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    // Exactly the old file's mode, whatever the umask.
    fchmodSync(fd, mode);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // best effort: see installRelease
  }
}

/** Runs `<path> version`; it must exit 0 and print exactly `expected`. */
async function checkRuns(path: string, expected: string): Promise<void> {
  let proc: Bun.Subprocess<'ignore', 'pipe', 'pipe'>;
  try {
    proc = Bun.spawn([path, 'version'], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env: process.env });
  } catch (e) {
    throw new UpgradeError(`the new binary does not start (${(e as { code?: string }).code ?? 'error'})`);
  }
  const timer = setTimeout(() => proc.kill('SIGKILL'), VERSION_RUN_TIMEOUT_MS);
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited, new Response(proc.stderr).text()]).finally(() => clearTimeout(timer));
  if (code !== 0) throw new UpgradeError(`the new binary's \`version\` failed (exit ${code ?? 'killed'})`);
  const printed = stdout.trim();
  if (printed !== expected) throw new UpgradeError(`the new binary's \`version\` printed ${JSON.stringify(printed.slice(0, 80))}, not ${expected} as the manifest promised`);
}

/** Downloads, checks and installs `release` over `exe`; `note` hears each step. */
export async function installRelease(release: Release, options: UpgradeOptions, exe: string, note: (line: string) => void): Promise<Installed> {
  if ('problem' in release.binary) throw new UpgradeError(release.binary.problem);
  if (release.latest === null) throw new UpgradeError('the manifest names no svc version');
  const binary = release.binary;
  const dir = dirname(exe);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw new UpgradeError(`cannot write to ${dir} (run as the executable's owner)`);
  }
  const mode = statSync(exe).mode & 0o7777;

  note(`downloading ${shownUrl(binary.url)}`);
  const cap = binary.size ?? MAX_BINARY_BYTES;
  const res = await download(binary.url, {
    headers: { accept: 'application/octet-stream' },
    // One byte past the cap tells "too large" from "exactly the cap".
    maxResponseBytes: cap + 1,
    timeoutMs: options.downloadTimeoutMs,
    allowHttp: options.allowHttp,
  });
  if (!res.ok) throw new UpgradeError(`could not download the binary: ${res.message}`);
  if (res.status !== 200) throw new UpgradeError(`the binary's URL answered HTTP ${res.status}`);
  if (res.bytes.length > cap) throw new UpgradeError(binary.size === null ? `the binary is larger than ${MAX_BINARY_BYTES} bytes` : `the binary is larger than the manifest's size (${binary.size} bytes)`);
  if (binary.size !== null && res.bytes.length !== binary.size) throw new UpgradeError(`the binary has ${res.bytes.length} bytes, not ${binary.size} as the manifest says`);
  const digest = createHash('sha256').update(res.bytes).digest('hex');
  if (digest !== binary.sha256) throw new UpgradeError(`the binary's SHA-256 is ${digest}, not ${binary.sha256} as the manifest says`);
  note(`SHA-256 ${digest} matches the manifest (${res.bytes.length} bytes)`);

  const fresh = tempName(exe, 'new');
  const keep = tempName(exe, 'old');
  const kept = `${exe}${OLD_SUFFIX}`;
  try {
    try {
      writeDurably(fresh, res.bytes, mode | 0o100);
    } catch (e) {
      throw new UpgradeError(`cannot write the new binary beside ${exe} (${(e as { code?: string }).code ?? 'error'})`);
    }
    await checkRuns(fresh, release.latest);
    note(`the new binary runs and reports ${release.latest}`);
    // The current binary under its kept name: a second link to the same file
    // (a copy where the file system has no hard links), then renamed over any
    // earlier one.
    try {
      try {
        linkSync(exe, keep);
      } catch {
        copyFileSync(exe, keep);
        const fd = openSync(keep, 'r');
        fsyncSync(fd);
        closeSync(fd);
      }
      renameSync(keep, kept);
      renameSync(fresh, exe);
    } catch (e) {
      throw new UpgradeError(`cannot replace ${exe} (${(e as { code?: string }).code ?? 'error'})`);
    }
  } finally {
    unlinkQuietly(fresh);
    unlinkQuietly(keep);
  }
  // The swap is done; making the renames durable is all that is left (some
  // file systems cannot fsync a directory, and nothing can be undone anyway).
  fsyncDir(dir);
  return { exe, kept, previous: release.installed, version: release.latest, bytes: res.bytes.length, signed: release.signed };
}
