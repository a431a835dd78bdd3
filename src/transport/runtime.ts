// Process-local state of the agent transports: the long-poll session
// registry, the connected WebSockets by (agent, worker), the per-IP connect
// bucket shared by both transports, the ten-minute memory of audited refusals,
// waiting polls, and the signals other areas send (a command was issued, an
// agent was revoked), which reach the other processes and replicas through
// transport/signals.ts. Each worker process has its own, as the spec allows.
import type { Config } from '../config/load.ts';
import { nowMicros, sleep } from '../lib/clock.ts';
import { addressList, type AddressList } from '../lib/net.ts';
import { RateLimiter } from '../lib/rate-limit.ts';
import { deriveProjectSecret } from './credentials.ts';
import type { EventRecord } from '../ingest/events.ts';
import type { FrameContext, LongPollState } from './session-state.ts';
import { DecodePool, defaultDecodeThreads } from './decode-pool.ts';
import { SessionRegistry } from './sessions.ts';

/** What the runtime needs of a connected WebSocket (gateway.ts). */
export interface LiveSocket {
  readonly agentId: string;
  readonly projectId: string;
  /** hello.worker_id, or '' for agents that send none (they share one slot). */
  readonly workerKey: string;
  readonly engines: readonly string[];
  /** Closes with a WebSocket close code. */
  kick(code: number, reason: string): void;
  /** Resolves once the socket has closed. */
  readonly closed: Promise<void>;
  /** Claims and sends the agent's pending commands. */
  pushCommands(): void;
  /** Closes the socket when it has been silent too long. */
  checkIdle(nowMicros: number): void;
}

export const AGENT_CONNECTS_PER_MINUTE = 600;
/** A waiting long-poll's own re-check of its commands (spec: every 250 ms). */
export const RECHECK_MS = 250;
/** The same while signals wake it at once and a sweep of every waiting poll runs every 300 ms
 * (docs/spec-deviations.md): its own re-check then only re-validates the agent and picks up re-sends. */
export const SIGNALLED_RECHECK_MS = 5000;
const REFUSAL_AUDIT_INTERVAL_MICROS = 10 * 60_000_000;
/** Liveness writes per agent and process are spaced at least this far apart. */
const LIVENESS_WRITE_MICROS = 1_000_000;
const MAX_REMEMBERED = 100_000;

export class SocketRegistry {
  private readonly byAgent = new Map<string, Map<string, LiveSocket>>();
  private count = 0;
  /** Accepted sockets that have not completed their hello yet (idle checks only). */
  readonly handshaking = new Set<LiveSocket>();

  get size(): number {
    return this.count;
  }

  /** Whether registering `socket` would stay within the per-agent cap of distinct workers (0 = no cap). */
  fits(socket: LiveSocket, cap: number): boolean {
    const slots = this.byAgent.get(socket.agentId);
    return cap === 0 || slots?.has(socket.workerKey) === true || (slots?.size ?? 0) < cap;
  }

  /** Registers a socket. A socket of the same (agent, worker) is returned to be
   * closed with 4002; 'cap' when the agent already has `cap` other workers (0 = no cap). */
  register(socket: LiveSocket, cap: number): { replaced: LiveSocket | null } | 'cap' {
    let slots = this.byAgent.get(socket.agentId);
    const previous = slots?.get(socket.workerKey) ?? null;
    if (!previous && cap > 0 && (slots?.size ?? 0) >= cap) return 'cap';
    if (!slots) this.byAgent.set(socket.agentId, (slots = new Map()));
    slots.set(socket.workerKey, socket);
    if (!previous) this.count++;
    return { replaced: previous };
  }

  /** Removes the socket if it still holds its slot (a replaced socket does not). */
  unregister(socket: LiveSocket): void {
    const slots = this.byAgent.get(socket.agentId);
    if (slots?.get(socket.workerKey) !== socket) return;
    slots.delete(socket.workerKey);
    this.count--;
    if (slots.size === 0) this.byAgent.delete(socket.agentId);
  }

  of(agentId: string): LiveSocket[] {
    return [...(this.byAgent.get(agentId)?.values() ?? [])];
  }

  agentIds(): string[] {
    return [...this.byAgent.keys()];
  }

  all(): LiveSocket[] {
    return [...this.byAgent.values()].flatMap((slots) => [...slots.values()]);
  }
}

/** Remembers when a refusal was last audited, per agent or address. */
class RefusalMemory {
  private readonly last = new Map<string, number>();

  /** True (and remembered) when no row for `key` was written in the last ten minutes. */
  shouldAudit(key: string): boolean {
    const now = nowMicros();
    const at = this.last.get(key);
    if (at !== undefined && now - at < REFUSAL_AUDIT_INTERVAL_MICROS) return false;
    this.last.delete(key);
    this.last.set(key, now);
    if (this.last.size > MAX_REMEMBERED) this.last.delete(this.last.keys().next().value!);
    return true;
  }
}

export class AgentTransport {
  readonly sessions = new SessionRegistry<LongPollState>();
  readonly sockets = new SocketRegistry();
  readonly connectBucket = new RateLimiter(AGENT_CONNECTS_PER_MINUTE, 60_000);
  readonly refusals = new RefusalMemory();
  /** Decodes the frames of large long-poll uploads in worker threads. */
  readonly decoders = new DecodePool(defaultDecodeThreads());
  readonly allowlist: AddressList | null;
  /** Whether a batch needs a newer scheduler adapter than the agent runs. svc runs
   * no external-schedule protocol, so nothing does; tests substitute a rule. */
  needsSchedulerUpgrade: (records: EventRecord[], fc: FrameContext) => boolean = () => false;
  /** Tells the other processes of a command issued or an agent revoked here (set by transport/signals.ts
   * when the process serves; null: nothing leaves this process, as in tests without background work). */
  announce: ((kind: 'command' | 'revoked', agentId: string) => void) | null = null;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Per agent, the number of the last wake-up (oldest first, at most MAX_REMEMBERED). */
  private readonly lastWake = new Map<string, number>();
  private wakes = 0;
  private readonly livenessWrites = new Map<string, number>();
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly config: Pick<Config, 'SVC_AGENT_IP_ALLOWLIST' | 'SVC_SECRET'>) {
    this.allowlist = config.SVC_AGENT_IP_ALLOWLIST.length > 0 ? addressList(config.SVC_AGENT_IP_ALLOWLIST) : null;
  }

  /** The project's frame signing key (current master), cached. */
  signingKey(projectId: string): Buffer {
    let key = this.keys.get(projectId);
    if (!key) this.keys.set(projectId, (key = deriveProjectSecret(this.config.SVC_SECRET, projectId)));
    return key;
  }

  /** A command for `agentId` was committed: wake its waiting polls and push to its sockets here, and tell
   * the other processes and replicas to do the same (transport/signals.ts). */
  commandIssued(agentId: string): void {
    this.commandWaiting(agentId);
    this.announce?.('command', agentId);
  }

  /** Wakes this process's polls waiting on `agentId` and pushes to its sockets here (a signal, or a sweep's find). */
  commandWaiting(agentId: string): void {
    this.wake(agentId);
    for (const socket of this.sockets.of(agentId)) socket.pushCommands();
  }

  /** The agent was revoked (committed): kick its sockets, end its waits, forget its sessions, here and (by a
   * signal) in every other process and replica. */
  agentRevoked(agentId: string): void {
    this.revokedHere(agentId);
    this.announce?.('revoked', agentId);
  }

  /** This process's part of a revocation (a signal from another process, or the revocation sweep's find). */
  revokedHere(agentId: string): void {
    this.sessions.dropAgent(agentId);
    this.livenessWrites.delete(agentId);
    this.wake(agentId);
    for (const socket of this.sockets.of(agentId)) socket.kick(4003, 'agent revoked');
  }

  /** A mark to pass to waitForSignal: a wake-up of `agentId` after this call (while the poll was still
   * reading the database, before it waits) then ends the wait at once instead of being missed. */
  wakeMark(agentId: string): number {
    return this.lastWake.get(agentId) ?? 0;
  }

  /** Resolves after `ms` of clock time, or at once when `agentId` is woken (or was, since `mark`). */
  waitForSignal(agentId: string, ms: number, mark?: number): Promise<void> {
    if (mark !== undefined && this.wakeMark(agentId) !== mark) return Promise.resolve();
    return new Promise((resolve) => {
      let set = this.waiters.get(agentId);
      if (!set) this.waiters.set(agentId, (set = new Set()));
      const done = () => {
        const s = this.waiters.get(agentId);
        if (!s?.delete(done)) return;
        if (s.size === 0) this.waiters.delete(agentId);
        resolve();
      };
      set.add(done);
      void sleep(ms).then(done);
    });
  }

  /** Closes every socket with 1001 (shutting down) and waits, at most `ms`, for the close frames to go out. */
  async closeAllSockets(ms = 1000): Promise<void> {
    const sockets = [...this.sockets.handshaking, ...this.sockets.all()];
    for (const socket of sockets) socket.kick(1001, 'server shutting down');
    await Promise.race([Promise.all(sockets.map((s) => s.closed)), new Promise((r) => setTimeout(r, ms))]);
  }

  /** Agents with a poll waiting in this process (the sweeps look for their commands and revocations). */
  waitingAgentIds(): string[] {
    return [...this.waiters.keys()];
  }

  /** How often a waiting poll re-reads the database by itself: every 250 ms (the spec's figure) while
   * nothing else wakes it; every 5 s once cross-process signals and the sweeps do (transport/signals.ts). */
  recheckMs(): number {
    return this.announce ? SIGNALLED_RECHECK_MS : RECHECK_MS;
  }

  /** Number of polls waiting on `agentId` (tests wait for a poll to be parked). */
  waitingOn(agentId: string): number {
    return this.waiters.get(agentId)?.size ?? 0;
  }

  private wake(agentId: string): void {
    this.lastWake.delete(agentId);
    this.lastWake.set(agentId, ++this.wakes);
    if (this.lastWake.size > MAX_REMEMBERED) this.lastWake.delete(this.lastWake.keys().next().value!);
    for (const done of [...(this.waiters.get(agentId) ?? [])]) done();
  }

  /** True when a liveness write for the agent is due (at most one a second per process). */
  livenessDue(agentId: string): boolean {
    const now = nowMicros();
    const at = this.livenessWrites.get(agentId);
    if (at !== undefined && now - at < LIVENESS_WRITE_MICROS && now >= at) return false;
    this.livenessWrites.delete(agentId);
    this.livenessWrites.set(agentId, now);
    if (this.livenessWrites.size > MAX_REMEMBERED) this.livenessWrites.delete(this.livenessWrites.keys().next().value!);
    return true;
  }
}
