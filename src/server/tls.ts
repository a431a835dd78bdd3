// TLS without a proxy. z4j agents refuse plain http outside dev mode, so
// `svc serve` speaks https itself when given a certificate and key, or with a
// self-signed pair minted into $SVC_HOME/tls whose SHA-256 fingerprint agents
// can pin or trust.
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/load.ts';
import { writeFileAtomic } from '../config/secrets.ts';

export interface TlsMaterial {
  cert: string;
  key: string;
  certFile: string;
  /** SHA-256 fingerprint of the leaf certificate, colon-separated hex. */
  fingerprint: string;
}

export class TlsError extends Error {}

export const selfSignedPaths = (tlsDir: string) => ({
  cert: join(tlsDir, 'self-signed.crt'),
  key: join(tlsDir, 'self-signed.key'),
});

export function fingerprintOf(certPem: string): string {
  const x = new X509Certificate(certPem);
  return createHash('sha256').update(x.raw).digest('hex').toUpperCase().match(/../g)!.join(':');
}

function readPair(certFile: string, keyFile: string): TlsMaterial {
  let cert: string;
  let key: string;
  try {
    cert = readFileSync(certFile, 'utf8');
  } catch (e) {
    throw new TlsError(`SVC_TLS_CERT_FILE: cannot read ${certFile} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    key = readFileSync(keyFile, 'utf8');
  } catch (e) {
    throw new TlsError(`SVC_TLS_KEY_FILE: cannot read ${keyFile} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let x: X509Certificate;
  try {
    x = new X509Certificate(cert);
  } catch {
    throw new TlsError(`SVC_TLS_CERT_FILE: ${certFile} is not a PEM certificate`);
  }
  try {
    if (!x.checkPrivateKey(createPrivateKey(key))) throw new TlsError(`SVC_TLS_KEY_FILE: the key does not match the certificate`);
  } catch (e) {
    if (e instanceof TlsError) throw e;
    throw new TlsError(`SVC_TLS_KEY_FILE: ${keyFile} is not a PEM private key`);
  }
  return { cert, key, certFile, fingerprint: fingerprintOf(cert) };
}

/** Mints a self-signed pair for `names` (DNS names or IP addresses) into tlsDir. */
export async function mintSelfSigned(tlsDir: string, names: string[]): Promise<TlsMaterial> {
  const altNames = [...new Set(['localhost', '127.0.0.1', '::1', hostname(), ...names])].map((n) =>
    /^[\d.]+$|:/.test(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n },
  );
  const now = new Date();
  const { default: selfsigned } = await import('selfsigned');
  const pems = await selfsigned.generate([{ name: 'commonName', value: hostname() }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 60_000),
    notAfterDate: new Date(now.getTime() + 825 * 86400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const paths = selfSignedPaths(tlsDir);
  writeFileAtomic(paths.key, pems.private, 0o600);
  writeFileAtomic(paths.cert, pems.cert, 0o644);
  return { cert: pems.cert, key: pems.private, certFile: paths.cert, fingerprint: fingerprintOf(pems.cert) };
}

/** The TLS material `svc serve` should use, or null for plain http. */
export async function resolveTls(config: Config, tlsDir: string): Promise<TlsMaterial | null> {
  if (config.SVC_TLS_CERT_FILE !== '') return readPair(config.SVC_TLS_CERT_FILE, config.SVC_TLS_KEY_FILE);
  if (!config.SVC_TLS_SELF_SIGNED) return null;
  const paths = selfSignedPaths(tlsDir);
  if (existsSync(paths.cert) && existsSync(paths.key)) return readPair(paths.cert, paths.key);
  const names = config.SVC_PUBLIC_URL !== '' ? [new URL(config.SVC_PUBLIC_URL).hostname] : [];
  return mintSelfSigned(tlsDir, names);
}
