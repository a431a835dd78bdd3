// https without a proxy: a configured pair, and a self-signed one minted on request.
import { afterAll, describe, expect, test } from 'bun:test';
import { X509Certificate, createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { cleanEnv, runSvc, startSvc, type RunningSvc } from '../helpers/binary.ts';

const running: RunningSvc[] = [];
afterAll(async () => {
  for (const r of running) await r.stop('SIGKILL');
});

/** Sends a plain-text HTTP request to the port and returns what came back (or the error). */
function plainHttp(port: number): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    let data = '';
    sock.setTimeout(3000, () => {
      sock.destroy();
      resolve(data || 'timeout');
    });
    sock.on('connect', () => sock.write('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
    sock.on('data', (d) => (data += d.toString('latin1')));
    sock.on('error', (e) => resolve(data || `error: ${e.message}`));
    sock.on('close', () => resolve(data || 'closed'));
  });
}

async function expectHttpsOnly(svc: RunningSvc, certPem: string): Promise<void> {
  expect(svc.url).toStartWith('https://');
  // A client that trusts exactly this certificate gets the health answer.
  const res = await fetch(`https://localhost:${svc.port}/api/v1/health`, { tls: { ca: certPem } } as RequestInit);
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('{"status":"ok"}');
  // A client that trusts nothing in particular is refused by its own TLS check.
  await expect(fetch(`https://localhost:${svc.port}/api/v1/health`)).rejects.toThrow();
  // Plain http on the same port is never served.
  const answer = await plainHttp(svc.port);
  expect(answer).not.toContain('{"status":"ok"}');
  expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
}

describe('TLS', () => {
  test('self-signed pair minted on request, fingerprint printed, https served', async () => {
    const env = cleanEnv();
    const minted = await runSvc(['tls', 'self-signed'], env);
    expect(minted.code).toBe(0);
    const certFile = join(env.SVC_HOME!, 'tls/self-signed.crt');
    const cert = readFileSync(certFile, 'utf8');
    const fingerprint = createHash('sha256').update(new X509Certificate(cert).raw).digest('hex').toUpperCase().match(/../g)!.join(':');
    expect(minted.stdout).toContain(`SHA-256 fingerprint: ${fingerprint}`);
    expect(statSync(join(env.SVC_HOME!, 'tls/self-signed.key')).mode & 0o777).toBe(0o600);
    // Refuses to overwrite without --force.
    expect((await runSvc(['tls', 'self-signed'], env)).code).toBe(1);

    const svc = await startSvc({ ...env, SVC_TLS_SELF_SIGNED: 'true' });
    running.push(svc);
    expect(svc.stderr()).toContain(`SHA-256 fingerprint ${fingerprint}`);
    await expectHttpsOnly(svc, cert);
    expect((await runSvc(['tls', 'fingerprint'], env)).stdout.trim()).toBe(fingerprint);
  });

  test('SVC_TLS_SELF_SIGNED mints the pair on first serve', async () => {
    const env = cleanEnv({ SVC_TLS_SELF_SIGNED: 'true' });
    const svc = await startSvc(env);
    running.push(svc);
    const cert = readFileSync(join(env.SVC_HOME!, 'tls/self-signed.crt'), 'utf8');
    await expectHttpsOnly(svc, cert);
  });

  test('a configured certificate and key are served; a missing key file is a clear error', async () => {
    const source = cleanEnv();
    await runSvc(['tls', 'self-signed'], source);
    const certFile = join(source.SVC_HOME!, 'tls/self-signed.crt');
    const keyFile = join(source.SVC_HOME!, 'tls/self-signed.key');
    const svc = await startSvc(cleanEnv({ SVC_TLS_CERT_FILE: certFile, SVC_TLS_KEY_FILE: keyFile }));
    running.push(svc);
    await expectHttpsOnly(svc, readFileSync(certFile, 'utf8'));

    const bad = await runSvc(['serve', '--port', '0'], cleanEnv({ SVC_TLS_CERT_FILE: certFile, SVC_TLS_KEY_FILE: '/nonexistent/key.pem' }));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('SVC_TLS_KEY_FILE: cannot read /nonexistent/key.pem');
  });
});
