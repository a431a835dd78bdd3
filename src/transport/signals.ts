// Cross-process wake-ups of the agent transports, over the signal bus of
// src/signals/ (PostgreSQL LISTEN/NOTIFY between replicas and --workers
// processes; Unix sockets between the --workers processes of a SQLite host):
//
//   - a command committed in one process wakes the long-polls waiting on its
//     agent and pushes it to the agent's WebSockets in every other process;
//   - an agent revoked in one process kicks its sockets (4003), ends its waiting
//     polls (401) and forgets its long-poll sessions in every other process.
//
// The signal names agent ids only; each process then reads the database as it
// would after a sweep (the command, or the agent's standing), so a signal can
// never hand out anything the database does not say. Signals are best-effort:
// one lost while the listener reconnects is made up for by the sweeps that
// stay in transport/jobs.ts (delivery every 300 ms, revocations every 2 s, a
// waiting poll's own 250 ms re-check), and by a sweep run at once whenever
// the listener (re)connects.
//
// Several agents changed in one turn of the event loop go out together: ids
// are gathered until the loop comes round (setImmediate, well under a
// millisecond) and sent in as few NOTIFYs as fit.
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { MAX_SIGNAL_BYTES, signalsOf, type SignalBus } from '../signals/index.ts';

const log = logger('agent.signals');

export const AGENT_CHANNEL = 'agents';

type Kind = 'command' | 'revoked';

/** On the bus: `k` what happened, `a` the agents it happened to. */
export interface AgentSignal {
  k: Kind;
  a: string[];
}

/** Ids per signal: agent ids are UUIDs (36 characters, 39 bytes quoted with a comma); leaves room for the envelope. */
export const IDS_PER_SIGNAL = Math.floor((MAX_SIGNAL_BYTES - 200) / 39);

/** Gathers the agent ids of one event-loop turn and sends them to the other processes. */
export class AgentSignalOutbox {
  private readonly pending = { command: new Set<string>(), revoked: new Set<string>() };
  private scheduled = false;

  constructor(private readonly bus: SignalBus) {}

  add(kind: Kind, agentId: string): void {
    this.pending[kind].add(agentId);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    for (const k of ['revoked', 'command'] as const) {
      const ids = [...this.pending[k]];
      this.pending[k].clear();
      // This process acted already (runtime.ts); the signal is for the others.
      for (let i = 0; i < ids.length; i += IDS_PER_SIGNAL) {
        this.bus.publish(AGENT_CHANNEL, { k, a: ids.slice(i, i + IDS_PER_SIGNAL) } satisfies AgentSignal, { local: false });
      }
    }
  }
}

const isSignal = (d: unknown): d is AgentSignal =>
  typeof d === 'object' &&
  d !== null &&
  ((d as AgentSignal).k === 'command' || (d as AgentSignal).k === 'revoked') &&
  Array.isArray((d as AgentSignal).a) &&
  (d as AgentSignal).a.every((id) => typeof id === 'string');

/** Connects this process's agent transport to the others: what it announces goes out, what they announce
 * acts here; `resweep` (the delivery and revocation sweeps) runs whenever the bus (re)connects. */
export function attachAgentSignals(ctx: AppContext, resweep: () => Promise<void>): void {
  const bus = signalsOf(ctx);
  const rt = ctx.agentTransport;
  const outbox = new AgentSignalOutbox(bus);
  rt.announce = (kind, agentId) => outbox.add(kind, agentId);
  const unsubscribe = bus.subscribe(AGENT_CHANNEL, (data) => {
    if (!isSignal(data)) return;
    if (data.k === 'command') for (const id of data.a) rt.commandWaiting(id);
    else for (const id of data.a) rt.revokedHere(id);
  });
  const unhook = bus.onConnected(() => {
    resweep().catch((e) => log.warn({ err: describeError(e).message }, 'the sweep after the signal listener connected failed'));
  });
  ctx.lifecycle.onShutdown('agent-signals', () => {
    rt.announce = null;
    unsubscribe();
    unhook();
  });
}
