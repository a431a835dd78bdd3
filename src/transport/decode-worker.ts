// A worker thread of the frame decoding pool (decode-pool.ts): decodes the
// frames of one upload (JSON, canonical form, HMAC, event records) and sends
// them back; the session's replay guard stays with the caller.
import { FrameError } from './errors.ts';
import { toWire, type DecodeReply, type DecodeRequest, type DecodeResult } from './decode-pool.ts';
import { FrameVerifier } from './verifier.ts';

declare const self: Worker;

self.onmessage = (event: MessageEvent<DecodeRequest>) => {
  const { id, secret, binding, options, texts, now } = event.data;
  let reply: DecodeReply;
  try {
    const verifier = new FrameVerifier(secret, binding, options);
    const results: DecodeResult[] = texts.map((text) => {
      try {
        return verifier.decode(text, now);
      } catch (e) {
        if (e instanceof FrameError) return { kind: 'refused', error: e.kind, message: e.message };
        throw e;
      }
    });
    reply = { id, ...toWire(results) };
  } catch (e) {
    reply = { id, crash: e instanceof Error ? e.message : String(e) };
  }
  self.postMessage(reply);
};
