// A webhook receiver for the outbound client tests. It runs inside a network
// namespace (`ip netns exec`) on a public-looking address, so the guarded
// client reaches it without any test-only exemption from the blocked ranges.
//
//   bun outbound-receiver.ts <address> <cert dir>
//
// Listens on every address of the namespace (dual stack) on :443 (certificate
// naming the test hostname and the addresses), :8444 (certificate naming only
// another hostname and the addresses) and :80 (plain http). <address> is the
// IPv4 one, used in the redirect it hands out. Prints one JSON line `{"ready":true}` once all three
// listen. Every request is recorded; GET /__log on :80 returns the record. POST /__respond on :80
// with `{path, status, body}` (or `{path, hang: true}`, or `{path}` alone to forget it) sets the
// answer for one path (query ignored): tests of fixed provider paths choose success or failure.
// `{path, status, file}` answers with the bytes of that file (read at each request) as
// application/octet-stream: release binaries for `svc upgrade`; `headers` adds response headers.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

const [address, dir] = [process.argv[2], process.argv[3]];
if (!address || !dir) {
  console.error('usage: outbound-receiver.ts <address> <cert dir>');
  process.exit(2);
}

type Seen = {
  port: number;
  method: string;
  path: string;
  host: string | null;
  sni: string | null;
  remote: string | null;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** When the request had arrived whole (ms since the epoch). */
  at: number;
};
const seen: Seen[] = [];
type Answer = { status?: number; body?: string; file?: string; headers?: Record<string, string>; hang?: boolean; delayMs?: number };
const answers = new Map<string, Answer>();

function handler(port: number) {
  return (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      // `servername` is the SNI the client sent (false or undefined without one).
      const sni = (req.socket as Partial<TLSSocket>).servername;
      const entry: Seen = {
        port,
        method: req.method ?? '',
        path,
        host: req.headers.host ?? null,
        sni: typeof sni === 'string' ? sni : null,
        remote: req.socket.remoteAddress ?? null,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      if (path === '/__log') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(seen));
        return;
      }
      if (path === '/__respond') {
        const { path: target, ...answer } = JSON.parse(entry.body) as Answer & { path: string };
        if (Object.keys(answer).length === 0) answers.delete(target);
        else answers.set(target, answer);
        res.writeHead(204).end();
        return;
      }
      seen.push(entry);
      const route = path.split('?')[0] ?? path;
      const scripted = answers.get(route);
      if (scripted) {
        if (scripted.hang) return;
        const answer = () =>
          scripted.file !== undefined
            ? res.writeHead(scripted.status ?? 200, { 'content-type': 'application/octet-stream', ...scripted.headers }).end(readFileSync(scripted.file))
            : res.writeHead(scripted.status ?? 200, { 'content-type': 'text/plain', ...scripted.headers }).end(scripted.body ?? '');
        if (scripted.delayMs) setTimeout(answer, scripted.delayMs);
        else answer();
        return;
      }
      switch (route) {
        case '/big':
          res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(64 * 1024));
          return;
        case '/exact':
          res.writeHead(200, { 'content-type': 'text/plain' }).end('y'.repeat(8 * 1024));
          return;
        case '/hang':
          return; // never answers
        case '/stall-body':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial');
          return; // headers and a little body, then nothing
        case '/redirect':
          res.writeHead(302, { location: `https://${address}/echo?followed=1` }).end('moved');
          return;
        case '/status':
          res.writeHead(503, { 'content-type': 'text/plain', 'x-receiver': 'yes' }).end('unavailable');
          return;
        default:
          res.writeHead(200, { 'content-type': 'application/json', 'x-receiver': 'yes' }).end(
            JSON.stringify(entry),
          );
      }
    });
  };
}

const pem = (name: string) => ({ cert: readFileSync(join(dir, `${name}.crt`)), key: readFileSync(join(dir, `${name}.key`)) });
const servers = [
  https.createServer(pem('good'), handler(443)).listen(443, '::'),
  https.createServer(pem('nohost'), handler(8444)).listen(8444, '::'),
  http.createServer(handler(80)).listen(80, '::'),
];
await Promise.all(servers.map((s) => (s.listening ? null : new Promise((r) => s.once('listening', r)))));
console.log(JSON.stringify({ ready: true }));
