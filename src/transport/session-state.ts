// What the transports keep per WebSocket connection or long-poll session. A
// module of its own, below the router and the transports, so that the agent
// transport's registry (runtime.ts, held by the app context) can name these
// types without importing the modules that take the app context.
import type { FrameSigner } from './signer.ts';
import type { FrameVerifier } from './verifier.ts';

/** Per connection (WebSocket) or per session (long-poll) state the router keeps. */
export interface FrameContext {
  readonly agentId: string;
  readonly projectId: string;
  readonly transport: 'ws' | 'longpoll';
  /** Authenticated worker identity recorded with health samples. */
  readonly workerId: string;
  /** Receive times (µs) of status samples stored in the last minute. */
  statusTimes: number[];
  lossWarnedAt: number;
  lossKey: string;
}

export const newFrameContext = (fields: Pick<FrameContext, 'agentId' | 'projectId' | 'transport' | 'workerId'>): FrameContext => ({
  ...fields,
  statusTimes: [],
  lossWarnedAt: -Infinity,
  lossKey: '',
});

/** A long-poll session's state (transport/longpoll.ts). */
export interface LongPollState {
  verifier: FrameVerifier;
  signer: FrameSigner;
  fc: FrameContext;
  /** Recorded on claimed commands. */
  label: string;
  /** Settles once this session's latest upload has been through the replay guard: uploads
   * decode side by side but are admitted in the order they arrived. */
  admitted: Promise<void>;
}
