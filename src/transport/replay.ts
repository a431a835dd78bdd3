// Freshness and replay rules for signed frames, one guard per session and
// direction (agent-protocol.md §2.5). The HMAC proves who sent a frame; this
// proves it is new: ts within the skew window, seq strictly increasing, nonce
// not seen recently. Checks run in z4j's order and nothing is committed unless
// all pass, so a refused frame never consumes its seq or nonce.
import { nowMicros } from '../lib/clock.ts';
import { FrameError } from './errors.ts';
import { parseFrameTimestamp } from './timestamp.ts';

export const MAX_FRAME_TS_SKEW_SECONDS = 60;
/** Longer than the skew window on both sides, so a frame at the edge cannot outlive its nonce. */
export const MAX_NONCE_TRACK_SECONDS = 180;
export const MAX_NONCE_ENTRIES = 4096;
export const MIN_SEQ = 1n;

/** A frame's seq, nonce and ts as sent (any JSON, or absent). */
export interface FrameStamp {
  seq?: unknown;
  nonce?: unknown;
  ts?: unknown;
  /** parseFrameTimestamp(ts) when ts is a string, if the caller parsed it already (decoding threads do). */
  tsMicros?: number | null;
}

export interface AcceptedStamp {
  seq: bigint;
  nonce: string;
  ts: string;
  tsMicros: number;
}

export class ReplayGuard {
  private lastSeqValue = 0n;
  private readonly seen = new Set<string>();
  // Accepted nonces with their receiver time (µs), oldest first: a queue read
  // from `head` (a Map would leave deleted entries at its front, which every
  // new iterator walks over again, so eviction would cost more per frame as
  // the map churns).
  private readonly order: string[] = [];
  private readonly times: number[] = [];
  private head = 0;

  get lastSeq(): bigint {
    return this.lastSeqValue;
  }

  /** Checks the stamp of a signed frame (already HMAC-verified) and records it; throws FrameError('replay'). */
  accept(stamp: FrameStamp): AcceptedStamp {
    const { seq, nonce, ts } = stamp;
    // z4j's isinstance(seq, int) would also let `true` through as 1; no agent
    // sends that, and refusing it is the safer reading.
    if (typeof seq !== 'bigint' || seq < MIN_SEQ) throw new FrameError('replay', 'frame envelope missing valid seq');
    if (typeof nonce !== 'string' || nonce === '') throw new FrameError('replay', 'frame envelope missing nonce');
    if (ts === undefined || ts === null) throw new FrameError('replay', 'frame envelope missing ts');
    if (typeof ts !== 'string') throw new FrameError('replay', 'frame ts must be an ISO 8601 string');
    const tsMicros = stamp.tsMicros !== undefined ? stamp.tsMicros : parseFrameTimestamp(ts);
    if (tsMicros === null) throw new FrameError('replay', 'frame ts is not an ISO 8601 timestamp with an offset');
    const now = nowMicros();
    if (Math.abs(now - tsMicros) > MAX_FRAME_TS_SKEW_SECONDS * 1_000_000) {
      throw new FrameError('replay', 'frame ts outside the skew window');
    }
    if (seq <= this.lastSeqValue) throw new FrameError('replay', 'frame seq not greater than the last accepted');
    this.evict(now - MAX_NONCE_TRACK_SECONDS * 1_000_000, MAX_NONCE_ENTRIES);
    if (this.seen.has(nonce)) throw new FrameError('replay', 'frame nonce replayed');

    this.lastSeqValue = seq;
    this.seen.add(nonce);
    this.order.push(nonce);
    this.times.push(now);
    this.evict(-Infinity, MAX_NONCE_ENTRIES);
    return { seq, nonce, ts, tsMicros };
  }

  /** Forgets nonces accepted before `cutoff`, and the oldest beyond `max`. */
  private evict(cutoff: number, max: number): void {
    while (this.head < this.order.length && (this.times[this.head]! < cutoff || this.seen.size > max)) {
      this.seen.delete(this.order[this.head]!);
      this.head++;
    }
    // Drop the consumed front now and then (amortised O(1) a frame).
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order.splice(0, this.head);
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }
}
