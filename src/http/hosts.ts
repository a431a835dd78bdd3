// Host allow-list: a request whose Host header names no allowed host is
// refused before any route runs (DNS-rebinding defence). Allowed: loopback
// names, this machine's hostname, the public URL's host, SVC_ALLOWED_HOSTS,
// and the persistent file $SVC_HOME/allowed-hosts kept by `svc allowed-hosts`.
// The file is re-read when it changes, so CLI edits apply without a restart.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { writeFileAtomic } from '../config/secrets.ts';

const LOOPBACK = ['localhost', '127.0.0.1', '::1'];

/** Lower-cases and strips the port and IPv6 brackets: `[::1]:7700` -> `::1`. */
export function normaliseHost(raw: string): string {
  let h = raw.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : h;
  }
  const colon = h.indexOf(':');
  if (colon >= 0 && h.indexOf(':', colon + 1) < 0) h = h.slice(0, colon);
  return h.replace(/\.$/, '');
}

const HOST_RE = /^(\*|[a-z0-9*]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|[0-9a-f:.]+)$/;

export function isValidHostEntry(host: string): boolean {
  return host.length <= 253 && HOST_RE.test(normaliseHost(host));
}

export function readHostsFile(path: string): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map(normaliseHost);
}

export function writeHostsFile(path: string, hosts: string[]): void {
  const header = '# Host header values svc accepts besides the built-in ones. Managed by `svc allowed-hosts`.\n';
  writeFileAtomic(path, header + hosts.map((h) => `${h}\n`).join(''), 0o644);
}

export class HostPolicy {
  private fileHosts: string[] = [];
  private fileMtime = -1;
  private checkedAt = 0;

  constructor(
    private readonly filePath: string,
    private readonly fixed: string[],
  ) {
    this.refresh(true);
  }

  static fromConfig(filePath: string, configured: readonly string[], publicUrl: string): HostPolicy {
    const fixed = [...LOOPBACK, hostname(), ...configured];
    if (publicUrl !== '') fixed.push(new URL(publicUrl).hostname);
    return new HostPolicy(filePath, fixed.map(normaliseHost));
  }

  private refresh(force = false): void {
    const now = Date.now();
    if (!force && now - this.checkedAt < 1000) return;
    this.checkedAt = now;
    let mtime = 0;
    try {
      mtime = statSync(this.filePath).mtimeMs;
    } catch {
      mtime = 0;
    }
    if (mtime !== this.fileMtime) {
      this.fileMtime = mtime;
      this.fileHosts = readHostsFile(this.filePath);
    }
  }

  /** The effective list, built-ins first. */
  list(): string[] {
    this.refresh();
    return [...new Set([...this.fixed, ...this.fileHosts])];
  }

  allows(hostHeader: string | null): boolean {
    if (!hostHeader) return false;
    const host = normaliseHost(hostHeader);
    return this.list().some((allowed) => allowed === '*' || allowed === host || (allowed.startsWith('*.') && host.endsWith(allowed.slice(1))));
  }
}
