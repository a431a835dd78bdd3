// The outbound destination policy (spec: Authentication, additional rule 6):
// https only (http when the operator allows it), no credentials in the URL,
// and every address the hostname resolves to outside the blocked ranges.
// Channel and forwarder configuration call checkDestination to refuse a bad
// URL early; guardedFetch calls it again at dispatch because a DNS answer can
// change between the two (DNS rebinding).
import { ipFamily } from '../lib/net.ts';
import { bareAddress, checkAddress, type BlockedRange } from './blocked.ts';
import { DNS_TIMEOUT_MS, DnsError, resolveHost, systemResolver, type Resolver } from './resolve.ts';

export type RefusalReason = 'invalid_url' | 'scheme' | 'userinfo' | 'hostname' | 'dns' | 'blocked_address';

export type DestinationOptions = {
  /** SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: also accept `http://`. Nothing else changes. */
  allowHttp?: boolean;
  /** Stands in for DNS (tests); defaults to node:dns lookup. */
  resolver?: Resolver;
  dnsTimeoutMs?: number;
  signal?: AbortSignal;
  /** Blocked ranges this destination may still use, by the operator's explicit choice (an identity
   * provider on the private network: SVC_OIDC_ALLOW_PRIVATE_PROVIDER). Never widened for user-supplied URLs. */
  allowRanges?: readonly BlockedRange[];
};

export type Destination = {
  ok: true;
  url: URL;
  /** The hostname without IPv6 brackets: what Host, SNI and the certificate check use. */
  hostname: string;
  /** True when the URL names an IP address itself; no DNS was involved. */
  literal: boolean;
  /** The address to connect to: the first IPv4 answer, else the first IPv6 one. */
  address: string;
  family: 4 | 6;
  /** Every address the name resolved to; all of them passed the check. */
  addresses: string[];
};

export type Refusal = {
  ok: false;
  reason: RefusalReason;
  /** Safe to log and to show a channel owner: never the URL, its query or credentials, nor a resolved address. */
  message: string;
  /** For `blocked_address`: the range that caused the refusal. */
  range?: BlockedRange;
};

export type DestinationCheck = Destination | Refusal;

const refuse = (reason: RefusalReason, message: string, range?: BlockedRange): Refusal =>
  range === undefined ? { ok: false, reason, message } : { ok: false, reason, message, range };

/** Validates `url` against the policy and resolves it to the address to pin. Never throws. */
export async function checkDestination(url: string | URL, options: DestinationOptions = {}): Promise<DestinationCheck> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return refuse('invalid_url', 'destination is not a valid absolute URL');
  }
  if (u.protocol !== 'https:' && !(options.allowHttp && u.protocol === 'http:')) {
    const allowed = options.allowHttp ? 'https:// or http://' : 'https://';
    return refuse('scheme', `destination scheme must be ${allowed}`);
  }
  if (u.username !== '' || u.password !== '') return refuse('userinfo', 'destination URL must not carry credentials');
  // The WHATWG parser already rejects an empty host for http(s); this keeps
  // the guarantee if that ever changes.
  const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (hostname === '') return refuse('hostname', 'destination URL has no hostname');

  // IP literals (the parser has already turned 0x7f.1 and 2130706433 into
  // dotted form) are checked as they are; names go through the resolver.
  const literal = ipFamily(hostname) !== null;
  let addresses: string[];
  if (literal) {
    addresses = [hostname];
  } else {
    try {
      const answers = await resolveHost(hostname, options.resolver ?? systemResolver, options.dnsTimeoutMs ?? DNS_TIMEOUT_MS, options.signal);
      addresses = answers.map(bareAddress);
    } catch (e) {
      const detail = e instanceof DnsError ? `${e.message} (${e.code})` : 'lookup failed';
      return refuse('dns', `destination hostname did not resolve: ${detail}`);
    }
  }

  // Every address must pass: a client that tries them in turn (or an attacker
  // who answers with several) must not be able to land on a blocked one.
  for (const a of addresses) {
    const verdict = checkAddress(a);
    if (verdict.blocked && !options.allowRanges?.includes(verdict.range)) {
      const what = verdict.embedded ? `${verdict.range}, embedding ${verdict.embedded}` : verdict.range;
      const subject = literal ? 'destination address' : 'destination hostname resolves to an address that';
      return refuse('blocked_address', `${subject} is not allowed (${what})`, verdict.range);
    }
  }

  // Prefer IPv4: many hosts and containers have no IPv6 route, and with a
  // pinned address there is no happy-eyeballs fallback to rescue the request.
  const address = addresses.find((a) => ipFamily(a) === 'ipv4') ?? addresses[0]!;
  return { ok: true, url: u, hostname, literal, address, family: ipFamily(address) === 'ipv4' ? 4 : 6, addresses };
}
