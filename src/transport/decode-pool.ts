// Frame decoding off the event loop. Decoding a frame (JSON, canonical form,
// HMAC, event records) depends on the frame alone and is most of the CPU an
// upload of 500 event frames costs; done in worker threads, the event loop
// keeps to HTTP, the replay guard and storage, and a second core does the rest.
// Small uploads decode inline (a thread hop costs more than it saves). The
// frames of one session always go to the same worker, which answers in order.
import { availableParallelism } from 'node:os';
import type { ReadEvents } from '../ingest/events.ts';
import { logger } from '../lib/log.ts';
import { workerEntry } from '../lib/workers.ts';
import { FrameError, type FrameErrorKind } from './errors.ts';
import type { FrameBinding } from './frames.ts';
import type { PlainObject } from './json-convert.ts';
import type { DecodedFrame, DecodedSignedFrame, FrameVerifier, FrameVerifierOptions } from './verifier.ts';

const log = logger('agent.decode');

export interface DecodeRequest {
  id: number;
  secret: Uint8Array;
  binding: FrameBinding;
  options: FrameVerifierOptions;
  texts: string[];
  now: number;
}

export type DecodeResult = DecodedFrame | { kind: 'refused'; error: FrameErrorKind; message: string };

/** The results as they cross threads: see toWire. */
export type DecodeReply = { id: number; wire: string; cloned: DecodeResult[] } | { id: number; crash: string };

/** One frame of an upload: decoded, or why it was refused. */
export type Decoded = DecodedFrame | FrameError;

/** The frames of an upload by index. Inline, a frame is decoded when asked for: the
 * frames after one that ends the upload (a bad signature) cost nothing. */
export type DecodedUpload = (index: number) => Decoded;

/** One worker per spare core, at most four; none on a single core. */
export const defaultDecodeThreads = (): number => Math.max(0, Math.min(4, availableParallelism() - 1));

/** Bun's workers can be unref'd (the DOM typing, in scope here, does not say so). */
type Thread = Worker & Pick<Bun.Worker, 'ref' | 'unref'>;

export class DecodePool {
  /** Uploads with fewer frames decode inline (tests lower it to send every upload through the pool). */
  minFrames = 32;
  /** Uploads decoded in a thread so far. */
  threaded = 0;
  private workers: Thread[] | null = null;
  /** Closed, or a thread failed: decode inline from now on. */
  private stopped = false;
  private nextId = 0;
  private inFlight = 0;
  private readonly pending = new Map<number, { resolve: (r: DecodeResult[]) => void; reject: (e: Error) => void }>();

  constructor(private readonly size: number) {}

  /** Whether an upload is being decoded in a thread right now. */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  /** The frames of an upload, decoded with `verifier`'s key and binding: all at once in a
   * thread when the upload is large, else one by one as asked for. */
  async decodeUpload(verifier: FrameVerifier, texts: string[], session: string, now: number): Promise<DecodedUpload> {
    const pool = texts.length >= this.minFrames ? this.threads() : null;
    if (pool) {
      const results = await this.post(pool[affinity(session, pool.length)]!, { secret: verifier.secret, binding: verifier.binding, options: verifier.options, texts, now }).catch(
        (e: unknown) => (e instanceof PoolFailed ? null : Promise.reject(e)),
      );
      if (results) {
        this.threaded++;
        return (k) => {
          const r = results[k]!;
          return r.kind === 'refused' ? new FrameError(r.error, r.message) : r;
        };
      }
    }
    return (k) => {
      try {
        return verifier.decode(texts[k]!, now);
      } catch (e) {
        if (e instanceof FrameError) return e;
        throw e;
      }
    };
  }

  close(): void {
    this.stopped = true;
    for (const w of this.workers ?? []) w.terminate();
    this.workers = null;
    this.fail(new PoolFailed('the decoding pool closed'));
  }

  private threads(): Thread[] | null {
    if (this.stopped || this.size === 0) return null;
    if (!this.workers) {
      this.workers = Array.from({ length: this.size }, () => {
        const worker = new Worker(workerEntry('transport/decode-worker')) as Thread;
        worker.onmessage = (event: MessageEvent<DecodeReply>) => {
          const reply = event.data;
          const waiting = this.pending.get(reply.id);
          if (!waiting) return;
          this.pending.delete(reply.id);
          this.settled();
          if ('crash' in reply) waiting.reject(new Error(`frame decoding failed: ${reply.crash}`));
          else waiting.resolve(fromWire(reply.wire, reply.cloned));
        };
        worker.onerror = (event) => this.broke(event.message);
        // A thread that ends without an error event (ours end only through close()) broke too.
        worker.addEventListener('close', () => this.broke('the thread exited'));
        worker.unref();
        return worker;
      });
    }
    return this.workers;
  }

  /** A thread failed: from here on every upload decodes inline, those in flight too. */
  private broke(reason: string): void {
    if (this.stopped) return;
    log.error({ err: reason }, 'a frame decoding thread failed; decoding inline from now on');
    this.stopped = true;
    for (const w of this.workers ?? []) w.terminate();
    this.workers = null;
    this.fail(new PoolFailed(reason));
  }

  private post(worker: Thread, job: Omit<DecodeRequest, 'id'>): Promise<DecodeResult[]> {
    const id = ++this.nextId;
    // An idle pool never keeps the process alive; a busy one does.
    if (this.inFlight++ === 0) for (const w of this.workers ?? []) w.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...job } satisfies DecodeRequest);
    });
  }

  private settled(): void {
    if (--this.inFlight === 0) for (const w of this.workers ?? []) w.unref();
  }

  private fail(error: PoolFailed): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
    this.inFlight = 0;
  }
}

class PoolFailed extends Error {}

// Structured clone is slow for many small objects (about 8 µs a frame both
// ways, measured); JSON text crosses at a fraction of that. A signed frame
// whose stamp has an integer seq and whose data JSON can carry (event records
// are JSON data already: storableObject) goes as
// [type, id, seq as decimal text, nonce, ts, ts parsed, payload, batch (or -1: none)];
// anything else (refusals, handshakes, big integers) as 0, with the result
// itself in `cloned`, in order. (A float -0.0 arrives as 0: storage writes
// both as 0 anyway, through JSON.stringify.) One JSON.stringify call writes
// the whole upload (a call per frame cost twice as much); only an upload with
// a bigint left in some payload is written frame by frame.
export function toWire(results: DecodeResult[]): { wire: string; cloned: DecodeResult[] } {
  const entries = results.map((r) => {
    if (r.kind !== 'decoded' || typeof r.stamp.seq !== 'bigint') return 0;
    const { seq, nonce, ts, tsMicros } = r.stamp;
    return [r.type, r.id, seq.toString(), nonce, ts, tsMicros ?? null, r.payload, r.batch === undefined ? -1 : r.batch];
  });
  try {
    return { wire: JSON.stringify(entries), cloned: results.filter((_, i) => entries[i] === 0) };
  } catch {
    // A bigint in some payload: find its frames one by one.
  }
  const cloned: DecodeResult[] = [];
  const parts = entries.map((entry, i) => {
    try {
      if (entry !== 0) return JSON.stringify(entry);
    } catch {
      // this one: cloned below
    }
    cloned.push(results[i]!);
    return '0';
  });
  return { wire: `[${parts.join(',')}]`, cloned };
}

type WireFrame = [DecodedSignedFrame['type'], string | null, string, unknown, unknown, number | null, PlainObject, ReadEvents | null | -1];

export function fromWire(wire: string, cloned: DecodeResult[]): DecodeResult[] {
  let next = 0;
  return (JSON.parse(wire) as (WireFrame | 0)[]).map((e) =>
    e === 0
      ? cloned[next++]!
      : {
          kind: 'decoded',
          type: e[0],
          id: e[1],
          stamp: { seq: BigInt(e[2]), nonce: e[3], ts: e[4], tsMicros: e[5] },
          payload: e[6],
          batch: e[7] === -1 ? undefined : e[7],
        },
  );
}

/** A stable worker index for a session, so its uploads are decoded in arrival order. */
function affinity(session: string, n: number): number {
  let h = 0;
  for (let i = 0; i < session.length; i++) h = (h * 31 + session.charCodeAt(i)) | 0;
  return Math.abs(h) % n;
}
