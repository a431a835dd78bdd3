// Signals between the processes of one host on SQLite (`svc serve --workers N`,
// or several `svc serve` sharing one $SVC_HOME): each process listens on a Unix
// stream socket of its own, $SVC_HOME/run/signals-<pid>.sock, and sends every
// signal to each peer it finds there, one JSON line per signal.
//
// Why a mesh of peers and not one hub in the first process: a signal takes one
// hop between any two processes instead of two; no process is special, so
// nothing is elected, and a restarted worker (new pid, new socket) is found by
// the others on their next send (the directory is re-read at most once a
// second, and at once when a peer connects). Measured on this 2-core machine
// (docs/live-updates.md): a round trip between two processes takes 0.01-0.1 ms
// (2,000 ping-pongs: p50 0.01 ms, p95 0.04-0.1 ms), so the choice is
// about robustness, not speed; with N <= 64 processes the N-1 connections per
// process cost nothing worth counting.
//
// Streams, not datagrams: Bun has no Unix datagram sockets, and a stream keeps
// large bursts in order. A peer that cannot keep up gets at most 1 MiB queued;
// beyond that its signals are dropped (the bus is best-effort; see bus.ts).
import { chmodSync, existsSync, mkdirSync, readdirSync, unlinkSync, watch, type FSWatcher } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket, UnixSocketListener } from 'bun';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { SignalTransport } from './bus.ts';

const log = logger('signals');

const FILE = /^signals-(\d+)(?:-[a-z0-9]+)?\.sock$/;
const DISCOVER_EVERY_MS = 1000;
const MAX_QUEUED_BYTES = 1024 * 1024;
/** sun_path holds 108 bytes on Linux (104 on some systems), the terminating NUL included. */
const MAX_SOCKET_PATH = 100;

/** The directory of the sockets: the run directory, or a private one under the temp dir when its paths would be too long. */
export function signalDir(runDir: string): string {
  if (Buffer.byteLength(join(runDir, 'signals-4294967295-tag.sock')) <= MAX_SOCKET_PATH) return runDir;
  const tag = new Bun.CryptoHasher('sha256').update(runDir).digest('hex').slice(0, 16);
  return join(tmpdir(), `svc-signals-${tag}`);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

interface Peer {
  path: string;
  socket: Socket<undefined> | null;
  connecting: boolean;
  /** Bytes waiting for the socket to drain (or to connect). */
  queued: Buffer[];
  queuedBytes: number;
}

export interface UnixSignalOptions {
  runDir: string;
  onMessage(text: string): void;
  /** Tells apart several buses of one process (tests); the socket is signals-<pid>[-<tag>].sock. */
  tag?: string;
}

export class UnixSignals implements SignalTransport {
  readonly kind = 'unix' as const;
  readonly dir: string;
  readonly path: string;
  private server: UnixSocketListener<{ rest: string }> | null = null;
  private watcher: FSWatcher | null = null;
  private readonly peers = new Map<string, Peer>();
  private discoveredAt = 0;
  private stopped = false;
  dropped = 0;

  constructor(private readonly o: UnixSignalOptions) {
    this.dir = signalDir(o.runDir);
    this.path = join(this.dir, `signals-${process.pid}${o.tag ? `-${o.tag}` : ''}.sock`);
  }

  /** Listens, then finds the peers already there and tells them (by connecting) that this process exists. */
  start(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if (existsSync(this.path)) unlinkSync(this.path); // a previous process with this pid
    this.server = Bun.listen<{ rest: string }>({
      unix: this.path,
      socket: {
        open: (socket) => {
          socket.data = { rest: '' };
          // A peer connecting may be new: look again before the next send.
          this.discoveredAt = 0;
        },
        data: (socket, chunk) => {
          const text = socket.data.rest + chunk.toString('utf8');
          const lines = text.split('\n');
          socket.data.rest = lines.pop() ?? '';
          for (const line of lines) if (line !== '') this.o.onMessage(line);
        },
      },
    });
    chmodSync(this.path, 0o600);
    // A socket appearing or going: look again before the next send (the once-a-second look covers a lost event).
    try {
      this.watcher = watch(this.dir, () => (this.discoveredAt = 0));
      this.watcher.unref();
    } catch {
      // no inotify here: the periodic look alone
    }
    this.discover();
    for (const peer of this.peers.values()) this.connect(peer);
  }

  connected(): boolean {
    return this.server !== null;
  }

  send(text: string): void {
    if (this.stopped) return;
    if (Date.now() - this.discoveredAt > DISCOVER_EVERY_MS) this.discover();
    if (this.peers.size === 0) return;
    const line = Buffer.from(`${text}\n`, 'utf8');
    for (const peer of this.peers.values()) this.write(peer, line);
  }

  /** The peers are the other sockets in the directory; stale files (their process gone) are removed. */
  private discover(): void {
    this.discoveredAt = Date.now();
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      names = [];
    }
    const seen = new Set<string>();
    for (const name of names) {
      const m = FILE.exec(name);
      if (!m) continue;
      const path = join(this.dir, name);
      if (path === this.path) continue;
      if (!alive(Number(m[1]))) {
        try {
          unlinkSync(path);
        } catch {
          // removed meanwhile
        }
        continue;
      }
      seen.add(path);
      if (!this.peers.has(path)) this.peers.set(path, { path, socket: null, connecting: false, queued: [], queuedBytes: 0 });
    }
    for (const [path, peer] of this.peers) {
      if (seen.has(path)) continue;
      peer.socket?.end();
      this.peers.delete(path);
    }
  }

  private write(peer: Peer, line: Buffer): void {
    if (peer.queuedBytes + line.length > MAX_QUEUED_BYTES) {
      this.dropped++;
      return;
    }
    if (peer.socket && peer.queued.length === 0) {
      const n = peer.socket.write(line);
      if (n === line.length) return;
      line = line.subarray(Math.max(0, n));
    }
    peer.queued.push(line);
    peer.queuedBytes += line.length;
    if (!peer.socket) this.connect(peer);
  }

  private flush(peer: Peer): void {
    const socket = peer.socket;
    while (socket && peer.queued.length > 0) {
      const head = peer.queued[0]!;
      const n = socket.write(head);
      if (n < head.length) {
        peer.queued[0] = head.subarray(Math.max(0, n));
        peer.queuedBytes -= Math.max(0, n);
        return;
      }
      peer.queued.shift();
      peer.queuedBytes -= head.length;
    }
  }

  private connect(peer: Peer): void {
    if (peer.connecting || peer.socket || this.stopped) return;
    peer.connecting = true;
    Bun.connect<undefined>({
      unix: peer.path,
      socket: {
        open: (socket) => {
          peer.connecting = false;
          if (this.stopped || this.peers.get(peer.path) !== peer) return void socket.end();
          peer.socket = socket;
          this.flush(peer);
        },
        drain: () => this.flush(peer),
        data: () => {},
        close: () => {
          if (peer.socket) peer.socket = null;
        },
        error: (_socket, e) => log.debug({ peer: peer.path, err: describeError(e).message }, 'signal peer socket error'),
      },
    }).catch((e: unknown) => {
      // Gone (or not yet listening): forgotten until the directory shows it again.
      peer.connecting = false;
      peer.queued = [];
      peer.queuedBytes = 0;
      if (this.peers.get(peer.path) === peer) this.peers.delete(peer.path);
      log.debug({ peer: peer.path, err: describeError(e).message }, 'signal peer unreachable');
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    for (const peer of this.peers.values()) peer.socket?.end();
    this.peers.clear();
    this.server?.stop(true);
    this.server = null;
    try {
      unlinkSync(this.path);
    } catch {
      // already gone
    }
  }
}
