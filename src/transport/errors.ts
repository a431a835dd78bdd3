// One error type for every way an inbound frame can be refused. `kind` tells
// the transport how to react; messages are short, fixed phrases that never
// echo frame content or secrets, so they are safe to log and send back.
//
//   malformed  not JSON, or JSON Python could not canonicalise (NaN, 1e999, lone surrogates)
//   protocol   well-formed JSON that is not a valid frame (z4j ProtocolError)
//   version    an integer `v` other than 2: recoverable, the peer speaks another
//              protocol version (z4j ProtocolVersionError)
//   signature  hmac missing, malformed or wrong, incl. a frame bound to another session
//   replay     stale or future ts, seq not increasing, nonce seen (z4j raises
//              SignatureError for these too; kept apart here for metrics)
export type FrameErrorKind = 'malformed' | 'protocol' | 'version' | 'signature' | 'replay';

export class FrameError extends Error {
  override name = 'FrameError';
  constructor(
    readonly kind: FrameErrorKind,
    message: string,
  ) {
    super(message);
  }
}
