// `svc upgrade [--apply]` of the compiled binary against a release manifest
// and binaries served by a real server on a public-looking address in a
// network namespace (the guarded outbound client refuses loopback and private
// addresses; nothing here exempts it). Each test upgrades its own copy of
// dist/svc in a temporary directory.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test';
import { chmodSync, copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { binaryPath, cleanEnv, runSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { startReceiver, unavailable, type Receiver } from '../helpers/outbound-netns.ts';

// Each test copies the 120 MB binary several times and runs it.
setDefaultTimeout(60_000);

const skip = unavailable();
if (skip) console.log(`SKIPPED svc upgrade tests: ${skip}`);

const PLATFORM = `${process.platform}-${process.arch}`;
const NEW_VERSION = '9.1.0';

const keyPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  // The raw key is the last 32 bytes of its SubjectPublicKeyInfo.
  return { privateKey, publicKey: (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32).toString('base64') };
};
const signer = keyPair();
const stranger = keyPair();

let receiver: Receiver;
let installed: string;
let work: string;
/** Release binaries: a wrapper that reports NEW_VERSION and runs a copy of dist/svc for everything else. */
const bins: Record<'good' | 'stale' | 'broken', string> = { good: '', stale: '', broken: '' };

beforeAll(async () => {
  if (skip) return;
  receiver = await startReceiver();
  installed = (await runSvc(['version'], cleanEnv())).stdout.trim();
  work = tempDir('svc-upgrade-work-');
  const real = join(work, 'svc-real');
  copyFileSync(binaryPath(), real);
  const script = (name: string, text: string) => {
    const path = join(work, name);
    writeFileSync(path, text);
    chmodSync(path, 0o755);
    return path;
  };
  bins.good = script('good', `#!/bin/sh\nif [ "$1" = version ]; then echo ${NEW_VERSION}; exit 0; fi\nexec ${real} "$@"\n`);
  // The real binary: its `version` is the installed one, not what the manifest promises.
  bins.stale = real;
  bins.broken = script('broken', '#!/bin/sh\necho "cannot start" >&2\nexit 3\n');
});
afterAll(async () => {
  await receiver?.stop();
});

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

type Publish = {
  version?: string;
  binary?: string;
  /** The checksum the manifest names; default that of the binary. */
  sha256?: string;
  size?: number;
  /** Who signs the manifest: the configured key, another one, or nobody (no .sig served). */
  signedBy?: KeyObject | null;
  platform?: string;
  /** Serve the signature as its 64 raw bytes rather than base64. */
  rawSignature?: boolean;
  /** An https manifest URL (the receiver's certificate trusted through NODE_EXTRA_CA_CERTS). */
  https?: boolean;
};

let published = 0;
/** Serves a manifest (and its signature and binary) under a fresh path; returns the manifest URL. */
async function publish(p: Publish = {}): Promise<string> {
  const base = `/release-${++published}`;
  const binary = p.binary ?? bins.good;
  const manifest = JSON.stringify(
    {
      schema: 1,
      packages: { svc: p.version ?? NEW_VERSION },
      binaries: {
        [p.platform ?? PLATFORM]: { url: `svc-${p.platform ?? PLATFORM}`, sha256: p.sha256 ?? sha256(binary), ...(p.size !== undefined ? { size: p.size } : {}) },
      },
    },
    null,
    2,
  );
  await receiver.respond(`${base}/manifest.json`, { status: 200, body: manifest });
  const by = p.signedBy === undefined ? signer.privateKey : p.signedBy;
  if (by) {
    const signature = sign(null, Buffer.from(manifest), by);
    if (p.rawSignature) {
      const file = join(work, `sig-${published}`);
      writeFileSync(file, signature);
      await receiver.respond(`${base}/manifest.json.sig`, { status: 200, file });
    } else {
      await receiver.respond(`${base}/manifest.json.sig`, { status: 200, body: signature.toString('base64') });
    }
  }
  await receiver.respond(`${base}/svc-${p.platform ?? PLATFORM}`, { status: 200, file: binary });
  return `${p.https ? 'https' : 'http'}://${receiver.address}${base}/manifest.json`;
}

/** A copy of dist/svc in a directory of its own, and what it was before. */
function install(): { dir: string; exe: string; before: string } {
  const dir = tempDir('svc-upgrade-');
  const exe = join(dir, 'svc');
  copyFileSync(binaryPath(), exe);
  chmodSync(exe, 0o755);
  return { dir, exe, before: sha256(exe) };
}

const envFor = (url: string, extra: Record<string, string> = {}) =>
  cleanEnv({ SVC_VERSION_CHECK_URL: url, SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'true', SVC_UPDATE_PUBLIC_KEY: signer.publicKey, ...extra });

async function upgrade(url: string, args: string[], extra: Record<string, string> = {}) {
  const target = install();
  const r = await runSvc(['upgrade', ...args], envFor(url, extra), { bin: target.exe });
  return { ...target, ...r };
}

/** The executable is byte-identical and nothing was left beside it. */
function untouched(t: { dir: string; exe: string; before: string }): void {
  expect(readdirSync(t.dir)).toEqual(['svc']);
  expect(sha256(t.exe)).toBe(t.before);
}

/** `--apply` fails: exit 2, `reason` (a string or pattern) on stderr, the executable untouched. */
async function refused(url: string, reason: string | RegExp, extra: Record<string, string> = {}, args = ['--apply']): Promise<void> {
  const t = await upgrade(url, args, extra);
  expect(t.code).toBe(2);
  if (typeof reason === 'string') expect(t.stderr).toContain(reason);
  else expect(t.stderr).toMatch(reason);
  if (args.includes('--apply')) expect(t.stderr.trimEnd()).toEndWith('; nothing was replaced');
  untouched(t);
}

const requested = async (path: string) => (await receiver.log()).filter((s) => s.path === path).length;
const binaryPathOf = (manifestUrl: string) => new URL(`svc-${PLATFORM}`, manifestUrl).pathname;

describe.skipIf(Boolean(skip))('svc upgrade', () => {
  test('check only: exit 0 when the manifest names this version, 1 (and what) when it names a newer one', async () => {
    const same = await upgrade(await publish({ version: installed }), []);
    expect({ code: same.code, stderr: same.stderr }).toEqual({ code: 0, stderr: '' });
    expect(same.stdout).toContain(`svc ${installed} is up to date`);
    untouched(same);

    const older = await upgrade(await publish({ version: '0.0.1' }), []);
    expect(older.code).toBe(0);

    const url = await publish();
    const newer = await upgrade(url, []);
    expect({ code: newer.code, stderr: newer.stderr }).toEqual({ code: 1, stderr: '' });
    expect(newer.stdout).toContain(`svc ${NEW_VERSION} is available (installed ${installed})`);
    expect(newer.stdout).toMatch(new RegExp(`svc +${installed.replace(/\./g, '\\.')} -> ${NEW_VERSION.replace(/\./g, '\\.')}`));
    expect(newer.stdout).toContain('svc upgrade --apply');
    untouched(newer);
    // A check downloads nothing.
    expect(await requested(binaryPathOf(url))).toBe(0);

    const elsewhere = await upgrade(await publish({ platform: 'plan9-mips' }), []);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stdout).toContain(`cannot install it here: the manifest names no binary for ${PLATFORM}`);
  });

  test('--apply: a good signed binary is swapped in and runs; the old one is kept beside it', async () => {
    const url = await publish();
    const t = await upgrade(url, ['--apply']);
    expect({ code: t.code, stderr: t.stderr }).toEqual({ code: 0, stderr: '' });
    expect(t.stdout).toContain('the manifest signature verifies against SVC_UPDATE_PUBLIC_KEY');
    expect(t.stdout).toContain(`upgraded ${t.exe} to ${NEW_VERSION}; the previous binary (${installed}) is kept at ${t.exe}.old`);
    expect(readdirSync(t.dir).sort()).toEqual(['svc', 'svc.old']);
    expect(sha256(t.exe)).toBe(sha256(bins.good));
    expect(sha256(join(t.dir, 'svc.old'))).toBe(t.before);
    // The new executable runs: its own version, and the rest of the CLI.
    const env = cleanEnv();
    expect((await runSvc(['version'], env, { bin: t.exe })).stdout.trim()).toBe(NEW_VERSION);
    const help = await runSvc(['upgrade', '--help'], env, { bin: t.exe });
    expect(help.code).toBe(0);
    // The kept one still runs as the old version.
    expect((await runSvc(['version'], env, { bin: join(t.dir, 'svc.old') })).stdout.trim()).toBe(installed);

  });

  test('--apply over https: without a key the checksum alone decides; with one, a raw signature file works too', async () => {
    const trust = { NODE_EXTRA_CA_CERTS: join(receiver.certDir, 'good.crt'), SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'false' };
    const unsigned = await upgrade(await publish({ https: true, signedBy: null }), ['--apply'], { ...trust, SVC_UPDATE_PUBLIC_KEY: '' });
    expect({ code: unsigned.code, stderr: unsigned.stderr }).toEqual({ code: 0, stderr: '' });
    expect(unsigned.stdout).toContain('not signature-checked');
    expect(sha256(unsigned.exe)).toBe(sha256(bins.good));
    expect(sha256(join(unsigned.dir, 'svc.old'))).toBe(unsigned.before);

    await refused(await publish({ https: true, signedBy: null, sha256: '00'.repeat(32) }), "the binary's SHA-256 is", { ...trust, SVC_UPDATE_PUBLIC_KEY: '' });

    const raw = await upgrade(await publish({ https: true, rawSignature: true }), ['--apply'], trust);
    expect({ code: raw.code, stderr: raw.stderr }).toEqual({ code: 0, stderr: '' });
    expect(raw.stdout).toContain('the manifest signature verifies');
    expect((await runSvc(['version'], cleanEnv(), { bin: raw.exe })).stdout.trim()).toBe(NEW_VERSION);

    // Without the receiver's certificate trusted: a TLS failure, nothing replaced.
    await refused(await publish({ https: true }), '(tls)', { SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: 'false' });
  });

  test('--apply follows the binary host redirecting (each hop under the outbound policy)', async () => {
    const url = await publish();
    const path = binaryPathOf(url);
    await receiver.respond(`${path}-moved`, { status: 200, file: bins.good });
    await receiver.respond(path, { status: 302, headers: { location: `${path}-moved?X-Amz-Signature=abc` } });
    const t = await upgrade(url, ['--apply']);
    expect({ code: t.code, stderr: t.stderr }).toEqual({ code: 0, stderr: '' });
    expect(sha256(t.exe)).toBe(sha256(bins.good));
    expect(await requested(`${path}-moved?X-Amz-Signature=abc`)).toBe(1);

    // A redirect to a blocked address is refused like any other destination.
    const url2 = await publish();
    await receiver.respond(binaryPathOf(url2), { status: 302, headers: { location: 'http://127.0.0.1/svc' } });
    await refused(url2, /could not download the binary: .* is not allowed/);
  });

  test('--apply when up to date: exit 0, nothing downloaded or replaced', async () => {
    const url = await publish({ version: installed });
    const t = await upgrade(url, ['--apply']);
    expect(t.code).toBe(0);
    expect(t.stdout).toContain('is up to date');
    untouched(t);
    expect(await requested(binaryPathOf(url))).toBe(0);
  });

  test('--apply: a wrong checksum leaves the old binary in place (exit 2)', async () => {
    await refused(await publish({ sha256: 'ab'.repeat(32) }), `not ${'ab'.repeat(32)} as the manifest says; nothing was replaced`);
    await refused(await publish({ size: 7 }), "larger than the manifest's size (7 bytes)");
  });

  test('--apply: a bad or missing signature leaves the old binary in place (exit 2)', async () => {
    await refused(await publish({ signedBy: stranger.privateKey }), 'does not verify against SVC_UPDATE_PUBLIC_KEY');
    await refused(await publish({ signedBy: null }), 'manifest signature');

    // Signed by the right key, but not this manifest: served with the signature of another one.
    const url = await publish();
    const other = await publish({ version: '9.9.9' });
    const path = new URL(url).pathname;
    await receiver.respond(`${path}.sig`, { status: 200, body: await (await fetch(`${other}.sig`, { proxy: false })).text() });
    await refused(url, 'does not verify');

    // Plain http and no key: nothing vouches for the manifest's checksums.
    await refused(await publish(), 'needs SVC_UPDATE_PUBLIC_KEY', { SVC_UPDATE_PUBLIC_KEY: '' });
  });

  test('--apply: a binary whose `version` fails or differs from the promise leaves the old one in place (exit 2)', async () => {
    await refused(await publish({ binary: bins.stale }), `printed "${installed}", not ${NEW_VERSION} as the manifest promised`);
    await refused(await publish({ binary: bins.broken }), "the new binary's `version` failed (exit 3)");
  });

  test('an unreachable or unusable manifest: exit 2, the old binary in place', async () => {
    // Nothing listens on :81 in the namespace.
    const down = `http://${receiver.address}:81/manifest.json`;
    for (const args of [['--apply'], []]) await refused(down, 'could not fetch the release manifest (connect)', {}, args);
    // The receiver's default answer is a JSON echo: no signature, no `packages`.
    await refused(`http://${receiver.address}/release-none/manifest.json`, 'the manifest signature is not an Ed25519 signature');
    await refused(`http://${receiver.address}/release-none/manifest.json`, 'the release manifest names no svc version', {}, []);

    await receiver.respond('/release-404/manifest.json', { status: 404, body: 'no' });
    await refused(`http://${receiver.address}/release-404/manifest.json`, 'answered HTTP 404');

    await refused('http://127.0.0.1:1/manifest.json', 'blocked_address');

    await refused('', 'SVC_VERSION_CHECK_URL is empty');
    await refused(await publish(), 'SVC_UPDATE_PUBLIC_KEY is not the base64 of a 32-byte Ed25519 public key', { SVC_UPDATE_PUBLIC_KEY: 'not-a-key' }, []);
  });

  test('--help says where the old binary is kept and that running services need a restart', async () => {
    const r = await runSvc(['upgrade', '--help'], cleanEnv());
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--apply');
    expect(r.stdout).toContain('<executable>.old');
    expect(r.stdout).toContain('Running services keep the old code until restarted');
  });
});
