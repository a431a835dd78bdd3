// A real webhook receiver on a non-blocked address, for tests of the guarded
// outbound client. A network namespace joined to the host by a veth pair gets
// addresses from 11.0.0.0/8 and 2001:db8::/32 (public and documentation
// space, neither blocked), and tests/helpers/outbound-receiver.ts serves
// https and http inside it; other servers (the SMTP one) can be started in it
// too. Needs root and iproute2; `unavailable()` says why not when they are
// missing.
import { spawn, spawnSync, type Subprocess } from 'bun';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';

export const RECEIVER_HOSTNAME = 'hooks.svc-test.example';

/** One request as the receiver saw it; `sni` is null without SNI, `remote` is the client address. */
export type Seen = {
  port: number;
  method: string;
  path: string;
  host: string | null;
  sni: string | null;
  remote: string | null;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** When the request had arrived whole (ms since the epoch). */
  at: number;
};

export type Receiver = {
  hostname: string;
  /** The namespace's IPv4 address (the receiver listens on all its addresses). */
  address: string;
  /** The host end of the veth pair: where the client's connections come from. */
  hostSide: string;
  /** Its IPv6 address, or null when the host has IPv6 disabled. */
  address6: string | null;
  /** Certificate on :443: SAN has the hostname, the extra names and both addresses. Doubles as its own CA. */
  goodCert: string;
  /** Certificate on :8444: SAN has another hostname and both addresses, not the test hostname. */
  noHostCert: string;
  /** Holds good.crt/good.key and nohost.crt/nohost.key, for other servers in the namespace. */
  certDir: string;
  /** Requests the receiver has seen (read over plain http on :80). */
  log(): Promise<Seen[]>;
  /** Sets the answer for `path` (query ignored), `{hang: true}` for none, or null to go back to the default.
   * `file` (a path on this machine) answers with that file's bytes instead of `body`; `headers` are added to the answer. */
  respond(
    path: string,
    answer: { status: number; body?: string; file?: string; headers?: Record<string, string>; delayMs?: number } | { hang: true } | null,
  ): Promise<void>;
  /** Runs a program inside the namespace, resolving once it prints `{"ready":true}`; stopped with the receiver. */
  spawn(argv: string[]): Promise<Subprocess<'ignore', 'pipe', 'pipe'>>;
  stop(): Promise<void>;
};

export type ReceiverOptions = {
  /** More DNS names for the good certificate (provider hosts a test resolver sends to the receiver). */
  names?: string[];
};

const ip = (args: string[]): { ok: boolean; err: string } => {
  const r = spawnSync(['ip', ...args], { stdout: 'pipe', stderr: 'pipe' });
  return { ok: r.exitCode === 0, err: r.stderr.toString().trim() };
};

const must = (args: string[]): void => {
  const r = ip(args);
  if (!r.ok) throw new Error(`ip ${args.join(' ')}: ${r.err}`);
};

/** Why the netns receiver cannot run here, or null when it can. */
export function unavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating a network namespace needs root';
  if (spawnSync(['sh', '-c', 'command -v ip'], { stdout: 'pipe' }).exitCode !== 0) return 'iproute2 (`ip`) is not installed';
  return null;
}

async function mint(dir: string, name: string, dnsNames: string[], ips: string[]): Promise<string> {
  const now = Date.now();
  const pems = await selfsigned.generate([{ name: 'commonName', value: dnsNames[0]! }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 86400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [...dnsNames.map((value) => ({ type: 2 as const, value })), ...ips.map((a) => ({ type: 7 as const, ip: a }))],
      },
    ],
  });
  writeFileSync(join(dir, `${name}.crt`), pems.cert);
  writeFileSync(join(dir, `${name}.key`), pems.private, { mode: 0o600 });
  return pems.cert;
}

/** Creates the namespace, the veth pair and the receiver. On any failure
 * everything made so far is removed before the error propagates. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  // Unique per run, short enough for the 15-byte interface name limit.
  const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`.slice(-7);
  const ns = `svcob-${tag}`;
  const hostIf = `vob${tag}h`;
  const nsIf = `vob${tag}n`;
  // A random /30 inside 11.87.0.0/16 (and /64 inside 2001:db8:87::/48) so
  // parallel runs on one host do not collide.
  const n = Math.floor(Math.random() * 16384);
  const base = `11.87.${n >> 6}.${(n & 63) * 4}`.split('.').map(Number);
  const v4 = (last: number) => `${base[0]}.${base[1]}.${base[2]}.${base[3]! + last}`;
  const v6 = (last: number) => `2001:db8:87:${n.toString(16)}::${last}`;
  const ipv6 = existsSync('/proc/sys/net/ipv6/conf/all/disable_ipv6')
    ? (await Bun.file('/proc/sys/net/ipv6/conf/all/disable_ipv6').text()).trim() === '0'
    : false;
  const dir = mkdtempSync(join(tmpdir(), 'svc-outbound-'));
  // The receiver first, then whatever tests started beside it.
  const children: Subprocess<'ignore', 'pipe', 'pipe'>[] = [];

  const cleanup = async (): Promise<void> => {
    for (const child of children) {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await child.exited;
      }
    }
    ip(['netns', 'del', ns]);
    // Deleting the namespace destroys the pair; this catches a half-made setup.
    ip(['link', 'del', hostIf]);
    rmSync(dir, { recursive: true, force: true });
  };
  // A crashed test run still leaves no namespace behind.
  const onExit = () => {
    for (const child of children) child.kill('SIGKILL');
    ip(['netns', 'del', ns]);
    ip(['link', 'del', hostIf]);
  };
  process.once('exit', onExit);

  try {
    must(['netns', 'add', ns]);
    must(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    must(['link', 'set', nsIf, 'netns', ns]);
    must(['addr', 'add', `${v4(1)}/30`, 'dev', hostIf]);
    must(['-n', ns, 'addr', 'add', `${v4(2)}/30`, 'dev', nsIf]);
    if (ipv6) {
      // nodad: the addresses are usable at once instead of after duplicate detection.
      must(['addr', 'add', `${v6(1)}/64`, 'dev', hostIf, 'nodad']);
      must(['-n', ns, 'addr', 'add', `${v6(2)}/64`, 'dev', nsIf, 'nodad']);
    }
    must(['link', 'set', hostIf, 'up']);
    must(['-n', ns, 'link', 'set', nsIf, 'up']);
    must(['-n', ns, 'link', 'set', 'lo', 'up']);

    const ips = ipv6 ? [v4(2), v6(2)] : [v4(2)];
    const goodCert = await mint(dir, 'good', [RECEIVER_HOSTNAME, ...(options.names ?? [])], ips);
    const noHostCert = await mint(dir, 'nohost', ['other.svc-test.example'], ips);

    const inside = async (argv: string[]) => {
      const child = spawn(['ip', 'netns', 'exec', ns, ...argv], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
      children.push(child);
      await waitReady(child, argv.slice(0, 2).join(' '));
      return child;
    };
    await inside([process.execPath, join(import.meta.dir, 'outbound-receiver.ts'), v4(2), dir]);

    const address = v4(2);
    return {
      hostname: RECEIVER_HOSTNAME,
      address,
      hostSide: v4(1),
      address6: ipv6 ? v6(2) : null,
      goodCert,
      noHostCert,
      certDir: dir,
      log: async () => (await fetch(`http://${address}/__log`, { proxy: false })).json() as Promise<Seen[]>,
      respond: async (path, answer) => {
        const r = await fetch(`http://${address}/__respond`, { method: 'POST', body: JSON.stringify({ path, ...answer }), proxy: false });
        if (r.status !== 204) throw new Error(`receiver refused the answer for ${path}: ${r.status}`);
      },
      spawn: inside,
      stop: async () => {
        process.off('exit', onExit);
        await cleanup();
      },
    };
  } catch (e) {
    process.off('exit', onExit);
    await cleanup();
    throw e;
  }
}

async function waitReady(child: Subprocess<'ignore', 'pipe', 'pipe'>, label: string): Promise<void> {
  const reader = child.stdout.getReader();
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  let out = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
      if (out.includes('"ready":true')) return;
    }
    const err = await new Response(child.stderr).text();
    throw new Error(`${label} exited before it was ready: ${err.trim() || out.trim()}`);
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
