// A webhook receiver for the notification pages, on an address the outbound policy allows (11.88.x.y, public
// space) that is nonetheless only a network namespace of this machine: a veth pair joins it to the host, so svc's
// sends never leave the machine. Inside, a small Node HTTP server on port 80 records what it is sent and answers
// 503 with a body on paths under /down (204 elsewhere); nothing listens on 443, so an https:// URL there fails
// with a refused connection at once. A Node twin of tests/helpers/outbound-netns.ts (Playwright runs on Node).
// Needs root and iproute2: `receiverUnavailable()` says why not.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface HookReceiver {
  /** The namespace's address (IPv4). */
  address: string;
  /** What the receiver was sent so far, oldest first. */
  seen(): Promise<SeenRequest[]>;
  stop(): Promise<void>;
}

const SERVER = `
const http = require('node:http');
const seen = [];
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/__seen') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(seen));
        return;
      }
      seen.push({ method: req.method, path: req.url, headers: req.headers, body });
      if (req.url.startsWith('/down')) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('receiver is down for maintenance');
        return;
      }
      res.writeHead(204);
      res.end();
    });
  })
  .listen(80, process.argv[1], () => console.log('{"ready":true}'));
`;

const ip = (args: string[]) => spawnSync('ip', args, { encoding: 'utf8' });

function must(args: string[]): void {
  const r = ip(args);
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr?.trim() || r.error?.message}`);
}

export function receiverUnavailable(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating a network namespace needs root';
  if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) return 'iproute2 (`ip`) is not installed';
  return null;
}

export async function startHookReceiver(): Promise<HookReceiver> {
  // Unique per run and within the 15-byte interface name limit.
  const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 3).toString(36)}`.slice(-7);
  const ns = `svce2e-${tag}`;
  const hostIf = `ve2e${tag}h`;
  const nsIf = `ve2e${tag}n`;
  // A random /30 in 11.88.0.0/16: beside tests/helpers/outbound-netns.ts's 11.87.0.0/16, never on top of it.
  const n = Math.floor(Math.random() * 16384);
  const v4 = (last: number) => `11.88.${n >> 6}.${(n & 63) * 4 + last}`;
  let child: ChildProcess | null = null;
  const cleanup = () => {
    child?.kill('SIGKILL');
    ip(['netns', 'del', ns]);
    ip(['link', 'del', hostIf]);
  };
  process.once('exit', cleanup);
  try {
    must(['netns', 'add', ns]);
    must(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    must(['link', 'set', nsIf, 'netns', ns]);
    must(['addr', 'add', `${v4(1)}/30`, 'dev', hostIf]);
    must(['-n', ns, 'addr', 'add', `${v4(2)}/30`, 'dev', nsIf]);
    must(['link', 'set', hostIf, 'up']);
    must(['-n', ns, 'link', 'set', nsIf, 'up']);
    must(['-n', ns, 'link', 'set', 'lo', 'up']);
    const address = v4(2);
    const proc = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', SERVER, address], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the receiver did not start: ${out}`)), 10_000);
      proc.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('{"ready":true}')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the receiver exited (${code}): ${out}`));
      });
    });
    return {
      address,
      seen: async () => (await fetch(`http://${address}/__seen`)).json() as Promise<SeenRequest[]>,
      stop: async () => {
        process.off('exit', cleanup);
        const exited = proc.exitCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : null;
        cleanup();
        await exited;
      },
    };
  } catch (e) {
    process.off('exit', cleanup);
    cleanup();
    throw e;
  }
}
