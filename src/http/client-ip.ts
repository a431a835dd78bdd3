// The client address of a request. X-Forwarded-For is believed only when the
// socket peer is a trusted proxy; the chain is walked right to left and the
// first untrusted hop is the client.
import { listHas, normaliseIp, type AddressList } from '../lib/net.ts';

export function clientIp(peer: string | null, forwardedFor: string | null, trusted: AddressList | null): string | null {
  if (!peer) return null;
  let ip = normaliseIp(peer);
  if (!trusted || !forwardedFor || !listHas(trusted, ip)) return ip;
  const hops = forwardedFor
    .split(',')
    .map((h) => normaliseIp(h))
    .filter((h) => h !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    ip = hops[i]!;
    if (!listHas(trusted, ip)) return ip;
  }
  return ip;
}
