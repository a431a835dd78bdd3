// Address ranges the service never connects to on behalf of a user-supplied
// URL: anything that reaches the host itself, the private network around it
// or the cloud metadata endpoint, plus the IPv6 transition ranges that embed
// an IPv4 address and could smuggle one of those past a naive check.
// Documentation ranges (192.0.2.0/24, 2001:db8::/32, ...) are not routed on
// the Internet and are left alone.
import { addressList, ipFamily, listHas, type AddressList } from '../lib/net.ts';

export type BlockedRange =
  | 'not_an_address'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'benchmark'
  | 'multicast'
  | 'reserved'
  | 'ipv4_mapped'
  | 'ipv4_compatible'
  | '6to4'
  | 'nat64'
  | 'teredo';

// Order matters only for the label reported: the first match names the range.
const RANGES: ReadonlyArray<readonly [BlockedRange, readonly string[]]> = [
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  // fec0::/10 is the deprecated site-local range; some stacks still route it privately.
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', 'fec0::/10']],
  // 169.254.169.254 (AWS, GCP, Azure metadata) and fd00:ec2::254 sit in these or in `private`.
  ['link_local', ['169.254.0.0/16', 'fe80::/10']],
  ['cgnat', ['100.64.0.0/10']],
  ['benchmark', ['198.18.0.0/15']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  // 240/4 includes the limited broadcast 255.255.255.255; 192.0.0.0/24 holds
  // IETF protocol assignments (DS-Lite, NAT64 discovery) that are never a webhook.
  ['reserved', ['240.0.0.0/4', '192.0.0.0/24']],
  // ::a.b.c.d, deprecated since RFC 4291 but still parsed by every stack.
  ['ipv4_compatible', ['::/96']],
  ['6to4', ['2002::/16']],
  ['nat64', ['64:ff9b::/96', '64:ff9b:1::/48']],
  ['teredo', ['2001::/32']],
];

// One list per family: BlockList compares an IPv4 address with IPv6 rules by
// mapping it into ::ffff:0:0/96, so mixing families in one list would make
// IPv6 rules match plain IPv4 addresses.
type Lists = { label: BlockedRange; v4: AddressList; v6: AddressList };
const LISTS: readonly Lists[] = RANGES.map(([label, cidrs]) => ({
  label,
  v4: addressList(cidrs.filter((c) => !c.includes(':'))),
  v6: addressList(cidrs.filter((c) => c.includes(':'))),
}));

/** Drops brackets and an IPv6 zone (`fe80::1%eth0`), which dns.lookup may return. */
export function bareAddress(ip: string): string {
  let s = ip.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  return zone === -1 ? s : s.slice(0, zone);
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:7f00:1` or
 * `::ffff:127.0.0.1`, in any spelling), else null. The WHATWG URL parser gives
 * the canonical form, in which a mapped address always reads `::ffff:h:h`. */
export function unwrapMapped(ip: string): string | null {
  const s = bareAddress(ip);
  if (ipFamily(s) !== 'ipv6') return null;
  let canonical: string;
  try {
    canonical = new URL(`http://[${s}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const m = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!m) return null;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export type AddressVerdict =
  | { blocked: false }
  // `embedded` names the range of the IPv4 address inside a mapped one, if any.
  | { blocked: true; range: BlockedRange; embedded?: BlockedRange };

/** Whether the service may connect to `ip`. Anything that is not a plain
 * IPv4 or IPv6 address is refused rather than guessed at. */
export function checkAddress(ip: string): AddressVerdict {
  const s = bareAddress(ip);
  const family = ipFamily(s);
  if (!family) return { blocked: true, range: 'not_an_address' };
  const inner = unwrapMapped(s);
  if (inner !== null) {
    // The mapped form is refused outright: some stacks connect to the IPv4
    // address it carries, others do not, and no webhook needs it.
    const embedded = checkAddress(inner);
    return embedded.blocked
      ? { blocked: true, range: 'ipv4_mapped', embedded: embedded.range }
      : { blocked: true, range: 'ipv4_mapped' };
  }
  for (const l of LISTS) {
    if (listHas(family === 'ipv4' ? l.v4 : l.v6, s)) return { blocked: true, range: l.label };
  }
  return { blocked: false };
}
