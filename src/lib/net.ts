// Address lists (trusted proxies, agent allow-list, blocked outbound ranges)
// on node:net's BlockList, which understands CIDR and IPv4-mapped IPv6.
import net from 'node:net';

export type AddressList = net.BlockList;

/** Strips brackets and an IPv4-mapped prefix so `::ffff:10.0.0.1` reads as `10.0.0.1`. */
export function normaliseIp(ip: string): string {
  let s = ip.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(s);
  return mapped ? mapped[1]! : s.toLowerCase();
}

export const ipFamily = (ip: string): 'ipv4' | 'ipv6' | null =>
  net.isIPv4(ip) ? 'ipv4' : net.isIPv6(ip) ? 'ipv6' : null;

export class AddressListError extends Error {}

/** Builds a list from entries such as `10.0.0.0/8`, `::1`, `192.168.1.7`. */
export function addressList(entries: readonly string[]): AddressList {
  const list = new net.BlockList();
  for (const raw of entries) {
    const [addr, bits, extra] = raw.trim().split('/');
    const ip = normaliseIp(addr ?? '');
    const family = ipFamily(ip);
    if (!family || extra !== undefined) throw new AddressListError(`not an address or CIDR range: ${raw}`);
    if (bits === undefined) {
      list.addAddress(ip, family);
      continue;
    }
    const prefix = Number(bits);
    const max = family === 'ipv4' ? 32 : 128;
    if (!/^\d+$/.test(bits) || prefix > max) throw new AddressListError(`bad prefix length in ${raw}`);
    list.addSubnet(ip, prefix, family);
  }
  return list;
}

export function listHas(list: AddressList, ip: string): boolean {
  const n = normaliseIp(ip);
  const family = ipFamily(n);
  return family !== null && list.check(n, family);
}
