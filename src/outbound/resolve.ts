// Hostname resolution for outbound requests. The guard needs every address a
// name resolves to (not just the first), and it needs the answer itself so it
// can connect to the address it checked instead of letting the HTTP client
// resolve the name again.
import { promises as dns } from 'node:dns';

/** Resolves a hostname to its addresses (IPv4 and IPv6 text form). Tests pass
 * their own in place of DNS; everything after resolution stays the same. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

export const DNS_TIMEOUT_MS = 5000;

/** getaddrinfo through node:dns, so /etc/hosts and the system's resolver
 * configuration apply exactly as for any other program on the host. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await dns.lookup(hostname, { all: true, order: 'verbatim' });
  return answers.map((a) => a.address);
};

export class DnsError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Runs `resolver` with a deadline. getaddrinfo cannot be cancelled, so a
 * stuck lookup is abandoned (it finishes in the background) rather than
 * holding up the caller. Throws DnsError; the message never names the host. */
export async function resolveHost(
  hostname: string,
  resolver: Resolver,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DnsError(`lookup timed out after ${timeoutMs} ms`, 'ETIMEOUT')), timeoutMs);
    if (signal) {
      onAbort = () => reject(new DnsError('lookup abandoned: request aborted', 'EABORTED'));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    const addresses = await Promise.race([resolver(hostname), deadline]);
    if (addresses.length === 0) throw new DnsError('lookup returned no addresses', 'ENODATA');
    return [...addresses];
  } catch (e) {
    if (e instanceof DnsError) throw e;
    const code = (e as { code?: unknown })?.code;
    throw new DnsError('lookup failed', typeof code === 'string' && /^[A-Z0-9_]{1,32}$/i.test(code) ? code : 'EUNKNOWN');
  } finally {
    clearTimeout(timer);
    if (signal && onAbort) signal.removeEventListener('abort', onAbort);
  }
}
