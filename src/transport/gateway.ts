// The WebSocket gateway at /ws/agent. The upgrade is always accepted: refusals
// are close codes (the z4j agents read them), decided before the upgrade.
// Then: `hello` -> `hello_ack`, one verifier and one outbound signer per
// connection, inbound frames processed strictly in order through the shared
// router, a signed event_batch_ack for every stored batch, commands pushed as
// they are claimed. Outbound frames are signed at the moment they are written,
// in order, and writing pauses while Bun reports backpressure until `drain`.
//
// Close codes: 4002 replaced by a newer connection of the same (agent, worker),
// 4003 agent revoked, 4400 bad/oversized/non-hello first frame or malformed
// frame, 4401 bearer refused or project archived, 4403 frame signature or replay
// failure or address not allowed, 4408 idle, 4426 unsupported protocol,
// 4429 rate limit or per-agent worker cap, 1011 server error.
import type { ServerWebSocket } from 'bun';
import { recordHello, recordRefusedHello, recordWorkerGone, touchAgentLiveness, type AgentRow } from '../agents/service.ts';
import { claimCommands, commandFramePayload, failUnsignable } from '../commands/delivery.ts';
import { bufferedFiresFor, routeBufferedFire } from '../commands/service.ts';
import { nowMicros } from '../lib/clock.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { traceAgentUpload } from '../telemetry/index.ts';
import { BRAIN_VERSION } from '../version.ts';
import { FrameError } from './errors.ts';
import { helloAck, readHello, retryEnginesOf } from './hello.ts';
import type { JsonInputObject } from './json-convert.ts';
import { routeFrames } from './router.ts';
import { newFrameContext, type FrameContext } from './session-state.ts';
import type { LiveSocket } from './runtime.ts';
import { FrameSigner } from './signer.ts';
import { FrameVerifier } from './verifier.ts';

const log = logger('agent.ws');

export const WS_ROUTE = '/ws/agent';
/** Time a new connection has to send its hello. */
export const HELLO_TIMEOUT_MICROS = 10_000_000;
/** Frames waiting to be processed on one connection before it is closed (the agent re-sends). */
const MAX_INBOX = 2000;
const COMMANDS_PER_DRAIN = 500;

type Outbound = { type: 'command' | 'event_batch_ack' | 'error'; id: string; payload: JsonInputObject; onSignError?: (e: unknown) => void };

/** Handlers Elysia's websocket dispatcher calls with the raw socket and raw message. */
export interface SocketHandlers {
  open(ws: ServerWebSocket<unknown>): void;
  message(ws: ServerWebSocket<unknown>, message: string | Buffer): void;
  close(ws: ServerWebSocket<unknown>, code: number, reason: string): void;
  drain(ws: ServerWebSocket<unknown>): void;
}

interface Session {
  id: string;
  verifier: FrameVerifier;
  signer: FrameSigner;
  fc: FrameContext;
  retryEngines: Set<string>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class AgentSocket implements LiveSocket {
  readonly agentId: string;
  readonly projectId: string;
  workerKey = '';
  engines: string[] = [];
  private ws: ServerWebSocket<unknown> | null = null;
  private phase: 'connecting' | 'handshake' | 'open' | 'closed' = 'connecting';
  private readonly connectedAt = nowMicros();
  private lastInbound = nowMicros();
  private inbox: (string | Buffer)[] = [];
  private busy = false;
  private outbox: Outbound[] = [];
  private blocked = false;
  private session: Session | null = null;
  private draining = false;
  private drainAgain = false;
  private markClosed!: () => void;
  readonly closed = new Promise<void>((resolve) => (this.markClosed = resolve));

  /** `refusal` set: the socket is accepted only to be closed with that code. */
  constructor(
    private readonly ctx: AppContext,
    private readonly agent: AgentRow | null,
    private readonly refusal: { code: number; reason: string } | null,
    /** The upgrade request's id (traces of this connection's frames carry it). */
    private readonly requestId = '',
  ) {
    this.agentId = agent?.id ?? '';
    this.projectId = agent?.project_id ?? '';
  }

  handlers(): SocketHandlers {
    return {
      open: (ws) => this.onOpen(ws),
      message: (_ws, message) => this.onMessage(message),
      close: (_ws, code) => this.onClose(code),
      drain: () => this.onDrain(),
    };
  }

  private onOpen(ws: ServerWebSocket<unknown>): void {
    this.ws = ws;
    if (this.refusal) {
      this.phase = 'closed';
      ws.close(this.refusal.code, this.refusal.reason);
      return;
    }
    this.phase = 'handshake';
    this.ctx.agentTransport.sockets.handshaking.add(this);
  }

  kick(code: number, reason: string): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.ctx.agentTransport.sockets.handshaking.delete(this);
    this.ctx.agentTransport.sockets.unregister(this);
    this.ws?.close(code, reason);
  }

  checkIdle(now: number): void {
    if (this.phase === 'handshake' && now - this.connectedAt > HELLO_TIMEOUT_MICROS) this.kick(4408, 'no hello received');
    else if (this.phase === 'open' && now - this.lastInbound > this.ctx.config.SVC_WS_IDLE_TIMEOUT_SECONDS * 1_000_000) this.kick(4408, 'idle timeout');
  }

  private onMessage(message: string | Buffer): void {
    if (this.phase === 'closed' || this.phase === 'connecting') return;
    this.lastInbound = nowMicros();
    const size = typeof message === 'string' ? Buffer.byteLength(message, 'utf8') : message.byteLength;
    if (size > this.ctx.config.SVC_WS_MAX_FRAME_BYTES) return this.kick(4400, 'frame too large');
    if (this.inbox.length >= MAX_INBOX) return this.kick(1013, 'too many frames waiting; slow down');
    this.inbox.push(message);
    void this.pump();
  }

  private onClose(code: number): void {
    this.markClosed();
    const wasOpen = this.session !== null;
    this.phase = 'closed';
    this.inbox = [];
    this.outbox = [];
    this.ctx.agentTransport.sockets.handshaking.delete(this);
    this.ctx.agentTransport.sockets.unregister(this);
    if (wasOpen) {
      log.debug({ agent_id: this.agentId, worker_id: this.workerKey, code }, 'agent disconnected');
      if (this.workerKey !== '') {
        recordWorkerGone(this.ctx.db, this.agentId, this.workerKey).catch((e) =>
          log.warn({ err: describeError(e) }, 'recording a worker disconnect failed'),
        );
      }
    }
  }

  private onDrain(): void {
    this.blocked = false;
    this.flush();
  }

  /** Processes inbound frames one at a time, in arrival order. */
  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.inbox.length > 0 && this.phase !== 'closed') {
        const raw = this.inbox.shift()!;
        let text: string;
        try {
          text = typeof raw === 'string' ? raw : utf8.decode(raw);
        } catch {
          this.kick(4400, 'frame is not UTF-8');
          return;
        }
        if (this.phase === 'handshake') await this.hello(text);
        else await this.frame(text);
      }
    } catch (e) {
      log.error({ agent_id: this.agentId, err: describeError(e) }, 'agent connection failed');
      this.kick(1011, 'server error');
    } finally {
      this.busy = false;
    }
  }

  private async hello(text: string): Promise<void> {
    const ctx = this.ctx;
    const agent = this.agent!;
    const read = readHello(text);
    if (!read.ok) {
      if (read.code === 4426 && read.protocolVersion !== undefined) await recordRefusedHello(ctx.db, agent.id, read.protocolVersion);
      return this.kick(read.code, read.reason);
    }
    const facts = read.facts;
    this.workerKey = facts.worker?.workerId ?? '';
    this.engines = facts.engines;
    const rt = ctx.agentTransport;
    const cap = ctx.config.SVC_WS_PER_AGENT_CONCURRENCY_CAP;
    const overCap = () => this.kick(4429, 'too many worker connections for this agent');
    if (!rt.sockets.fits(this, cap)) return overCap();
    const hello = await recordHello(ctx.db, agent, facts);
    if (!hello.live) return this.kick(4003, 'agent revoked');
    if (hello.cameOnline) ctx.reactions.agentCameOnline(agent.id);
    if (this.phase === 'closed') return;
    const slot = rt.sockets.register(this, cap);
    if (slot === 'cap') return overCap();
    slot.replaced?.kick(4002, 'replaced by a newer connection');

    const sessionId = crypto.randomUUID();
    const binding = { agentId: agent.id, projectId: agent.project_id, sessionId };
    const secret = rt.signingKey(agent.project_id);
    this.session = {
      id: sessionId,
      verifier: new FrameVerifier(secret, binding),
      signer: new FrameSigner(secret, binding),
      fc: newFrameContext({
        agentId: agent.id,
        projectId: agent.project_id,
        transport: 'ws',
        workerId: this.workerKey === '' ? 'ws-legacy' : this.workerKey,
      }),
      retryEngines: retryEnginesOf(facts.capabilities),
    };
    const maxFrameBytes = ctx.config.SVC_WS_MAX_FRAME_BYTES;
    this.ws!.send(helloAck({ brainVersion: BRAIN_VERSION, agentId: agent.id, projectId: agent.project_id, sessionId, maxFrameBytes }));
    this.phase = 'open';
    rt.sockets.handshaking.delete(this);
    log.debug({ agent_id: agent.id, worker_id: this.workerKey, engines: facts.engines }, 'agent connected');
    // Buffered schedule.fire commands for an engine this agent advertises are replayed to it.
    for (const row of await bufferedFiresFor(ctx.db, agent.project_id, facts.engines)) await routeBufferedFire(ctx, row.id, agent.id);
    this.pushCommands();
  }

  private async frame(text: string): Promise<void> {
    const s = this.session!;
    let verified;
    try {
      verified = s.verifier.verify(text);
    } catch (e) {
      if (!(e instanceof FrameError)) throw e;
      if (e.kind === 'signature' || e.kind === 'replay') return this.kick(4403, e.message);
      if (e.kind === 'version') return this.kick(4426, e.message);
      return this.kick(4400, e.message);
    }
    if (verified.kind === 'handshake') return; // a repeated hello carries nothing new
    const rt = this.ctx.agentTransport;
    if (rt.livenessDue(this.agentId)) {
      const seen = await touchAgentLiveness(this.ctx.db, this.agentId);
      if (!seen.live) return this.kick(4003, 'agent revoked');
      if (seen.cameOnline) this.ctx.reactions.agentCameOnline(this.agentId);
    }
    const span = traceAgentUpload(null, {
      transport: 'ws',
      agentId: this.agentId,
      projectId: this.projectId,
      requestId: this.requestId,
      frames: 1,
      frameType: verified.type,
    });
    let outcome;
    try {
      [outcome] = await routeFrames(this.ctx, s.fc, [verified]);
    } catch (e) {
      span?.fail();
      throw e;
    } finally {
      span?.end(outcome ? { 'svc.frame.outcome': outcome.kind } : {});
    }
    if (!outcome) return;
    const batchId = verified.type === 'event_batch' ? verified.id : null;
    switch (outcome.kind) {
      case 'revoked':
        return this.kick(4003, 'agent revoked');
      case 'durable':
      case 'drop':
        // Acknowledged after the commit; the agent deletes the batch on this ack only.
        if (batchId !== null && outcome.ack) {
          this.send({ type: 'event_batch_ack', id: `eba_${batchId}`.slice(0, 64), payload: { acked_id: batchId.slice(0, 64), ...outcome.ack } });
        }
        return;
      case 'upgrade_required':
        this.send({
          type: 'error',
          id: `err_${batchId ?? 'frame'}`.slice(0, 64),
          payload: { code: 'scheduler_upgrade_required', message: outcome.message, fatal: true },
        });
        return;
      case 'transient':
        return; // no ack: the agent re-sends the batch
    }
  }

  /** Queues a frame; frames are signed when written so wire order is seq order. */
  private send(item: Outbound): void {
    if (this.phase !== 'open') return;
    this.outbox.push(item);
    this.flush();
  }

  private flush(): void {
    const s = this.session;
    while (!this.blocked && this.outbox.length > 0 && this.phase === 'open' && s) {
      const item = this.outbox.shift()!;
      let text: string;
      try {
        text = s.signer.sign(item.type, item.id, item.payload);
      } catch (e) {
        item.onSignError?.(e);
        continue;
      }
      const written = this.ws!.send(text);
      // -1: queued behind backpressure (wait for drain); 0: dropped, the socket is gone.
      if (written === -1) this.blocked = true;
      else if (written === 0) return this.kick(1011, 'send failed');
    }
  }

  /** Claims pending commands (oldest first) and queues them; re-runs when asked again meanwhile. */
  pushCommands(): void {
    if (this.phase !== 'open' || !this.session) return;
    if (this.draining) {
      this.drainAgain = true;
      return;
    }
    this.draining = true;
    void (async () => {
      try {
        do {
          this.drainAgain = false;
          const s = this.session!;
          const rows = await claimCommands(this.ctx.db, {
            agentId: this.agentId,
            max: COMMANDS_PER_DRAIN,
            retryEngines: s.retryEngines,
            session: `ws:${s.id}`,
          });
          if (rows.length > 0) this.ctx.reactions.commandsChanged?.(this.projectId, rows.map((r) => r.id));
          for (const row of rows) {
            this.send({
              type: 'command',
              id: row.id,
              payload: commandFramePayload(this.ctx, row),
              onSignError: (e) => {
                log.error({ agent_id: this.agentId, command_id: row.id, err: describeError(e) }, 'a claimed command could not be signed');
                void failUnsignable(this.ctx.db, row.id, 'sign failed');
              },
            });
          }
          if (rows.length === COMMANDS_PER_DRAIN) this.drainAgain = true;
        } while (this.drainAgain && this.phase === 'open');
      } catch (e) {
        log.error({ agent_id: this.agentId, err: describeError(e) }, 'pushing commands failed');
      } finally {
        this.draining = false;
      }
    })();
  }
}
