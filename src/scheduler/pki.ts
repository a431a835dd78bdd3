// The scheduler's certificates: a CA kept in $SVC_HOME/scheduler-pki (made on
// first use), client certificates minted from it for scheduler instances (the
// common name is what SVC_SCHEDULER_GRPC_ALLOWED_CNS lists), and the server
// certificate of the service's scheduler endpoint when none is configured.
// Keys are EC P-256, written 0600; certificates 0644.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from '../config/secrets.ts';

export class PkiError extends Error {}

/** Names a scheduler instance may have (the certificate's common name). */
export const CN_RE = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

export const pkiDir = (home: string): string => join(home, 'scheduler-pki');
export const caPaths = (dir: string) => ({ cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') });
export const serverPaths = (dir: string) => ({ cert: join(dir, 'server.crt'), key: join(dir, 'server.key') });

const DAY = 86_400_000;

async function generate(cn: string, opts: { days: number; ca?: { cert: string; key: string }; extensions: unknown[] }): Promise<{ cert: string; key: string }> {
  const { default: selfsigned } = await import('selfsigned');
  const now = Date.now();
  const pems = await selfsigned.generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + opts.days * DAY),
    ...(opts.ca ? { ca: opts.ca } : {}),
    extensions: opts.extensions as never,
  });
  return { cert: pems.cert, key: pems.private };
}

function readPem(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new PkiError(`${what}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Reads a CA pair and checks that it is a CA whose key matches. */
export function readCa(certFile: string, keyFile: string): { cert: string; key: string; x509: X509Certificate } {
  const cert = readPem(certFile, 'CA certificate');
  const key = readPem(keyFile, 'CA key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new PkiError(`${certFile} is not a PEM certificate`);
  }
  if (!x509.ca) throw new PkiError(`${certFile} is not a CA certificate (basicConstraints CA:false)`);
  try {
    if (!x509.checkPrivateKey(createPrivateKey(key))) throw new PkiError(`${keyFile} is not the key of ${certFile}`);
  } catch (e) {
    if (e instanceof PkiError) throw e;
    throw new PkiError(`${keyFile} is not a PEM private key`);
  }
  return { cert, key, x509 };
}

/** The scheduler CA in `dir`, created (valid ten years) when missing; `created` says whether it was. */
export async function ensureCa(dir: string): Promise<{ certFile: string; keyFile: string; created: boolean }> {
  const p = caPaths(dir);
  if (existsSync(p.cert) && existsSync(p.key)) return { certFile: p.cert, keyFile: p.key, created: false };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = await generate(`svc scheduler CA (${hostname()})`, {
    days: 3650,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  writeFileAtomic(p.key, ca.key, 0o600);
  writeFileAtomic(p.cert, ca.cert, 0o644);
  return { certFile: p.cert, keyFile: p.key, created: true };
}

/** A client certificate for scheduler instance `name` (its common name), signed by the CA. */
export async function mintClientCert(name: string, ca: { cert: string; key: string }, days = 365): Promise<{ cert: string; key: string }> {
  if (!CN_RE.test(name)) throw new PkiError(`${JSON.stringify(name)} is not a scheduler name (letters, digits, . _ @ -; at most 64)`);
  return generate(name, {
    days,
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
}

/** Writes `<name>.crt` and `<name>.key` (0600) into `outDir`; refuses to overwrite. */
export function writePair(outDir: string, name: string, pair: { cert: string; key: string }): { cert: string; key: string } {
  mkdirSync(outDir, { recursive: true, mode: 0o700 });
  const files = { cert: join(outDir, `${name}.crt`), key: join(outDir, `${name}.key`) };
  for (const f of [files.cert, files.key]) if (existsSync(f)) throw new PkiError(`${f} exists; choose another --out-dir or remove it`);
  writeFileAtomic(files.key, pair.key, 0o600);
  writeFileAtomic(files.cert, pair.cert, 0o600);
  return files;
}

/** The server certificate of the scheduler endpoint in `dir` (minted from the CA there when missing,
 * expiring within 30 days, or not naming every one of `names`). */
export async function ensureServerCert(dir: string, names: string[]): Promise<{ cert: string; key: string; certFile: string; keyFile: string }> {
  const p = serverPaths(dir);
  const wanted = [...new Set(['localhost', '127.0.0.1', '::1', hostname(), ...names].filter((n) => n !== ''))];
  if (existsSync(p.cert) && existsSync(p.key)) {
    const cert = readFileSync(p.cert, 'utf8');
    const x = new X509Certificate(cert);
    const alt = x.subjectAltName ?? '';
    const fresh = Date.parse(x.validTo) - Date.now() > 30 * DAY;
    if (fresh && wanted.every((n) => alt.includes(n))) return { cert, key: readFileSync(p.key, 'utf8'), certFile: p.cert, keyFile: p.key };
  }
  const { certFile, keyFile } = await ensureCa(dir);
  const ca = readCa(certFile, keyFile);
  const altNames = wanted.map((n) => (/^[\d.]+$|:/.test(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n }));
  const pair = await generate(hostname(), {
    days: 825,
    ca: { cert: ca.cert, key: ca.key },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  writeFileAtomic(p.key, pair.key, 0o600);
  writeFileAtomic(p.cert, pair.cert, 0o644);
  return { ...pair, certFile: p.cert, keyFile: p.key };
}

/** The subject common name of a PEM certificate, or null. */
export function commonNameOf(pem: string): string | null {
  try {
    const subject = new X509Certificate(pem).subject;
    const line = subject.split('\n').find((l) => l.startsWith('CN='));
    return line ? line.slice(3) : null;
  } catch {
    return null;
  }
}

/** The allowed common names: SVC_SCHEDULER_GRPC_ALLOWED_CNS as JSON (`["a","b"]`) or comma-separated. */
export function allowedCns(setting: readonly string[]): Set<string> {
  const text = setting.join(',').trim();
  if (text.startsWith('[')) {
    try {
      const parsed = JSON.parse(text);
      if (Array.isArray(parsed)) return new Set(parsed.filter((x): x is string => typeof x === 'string' && x !== ''));
    } catch {
      /* fall through: read as comma-separated */
    }
  }
  return new Set(setting.map((s) => s.replace(/^[["\s]+|["\]\s]+$/g, '')).filter((s) => s !== ''));
}

/** SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS: common name -> the project slugs it may reach (absent: all). */
export function cnBindings(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  if (text.trim() === '') return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new PkiError('SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS must be a JSON object {"<cn>": ["<slug>", ...]}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new PkiError('SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS must be a JSON object');
  for (const [cn, slugs] of Object.entries(parsed)) {
    if (!Array.isArray(slugs) || !slugs.every((s) => typeof s === 'string')) throw new PkiError(`SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS: ${cn} must map to a list of project slugs`);
    out.set(cn, new Set(slugs as string[]));
  }
  return out;
}
