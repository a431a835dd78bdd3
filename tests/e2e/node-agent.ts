// The TypeScript test agent (tests/helpers/test-agent.ts) inside Playwright's Node process. The agent is
// written for Bun: svc's frame signing calls Bun.CryptoHasher, and its WebSocket client sends headers. On Node
// this module supplies both before any frame is signed: an HMAC hasher over node:crypto, and the `ws` client
// (Node 20 has no WebSocket; `ws` takes headers the way Bun's does).
import { createHmac, type Hmac } from 'node:crypto';
import WebSocket from 'ws';

class NodeHasher {
  private readonly hmac: Hmac;
  constructor(
    private readonly algorithm: string,
    private readonly key: string | Uint8Array,
  ) {
    this.hmac = createHmac(algorithm, key);
  }
  update(data: string | Uint8Array): this {
    this.hmac.update(data);
    return this;
  }
  digest(encoding?: 'hex' | 'base64'): string | Buffer {
    return encoding ? this.hmac.digest(encoding) : this.hmac.digest();
  }
  /** svc copies only keyed hashers nothing was fed to yet (src/lib/crypto.ts), so a fresh one is an exact copy. */
  copy(): NodeHasher {
    return new NodeHasher(this.algorithm, this.key);
  }
}

const g = globalThis as Record<string, unknown>;
if (!('Bun' in g)) g.Bun = { CryptoHasher: NodeHasher };
if (!('WebSocket' in g)) g.WebSocket = WebSocket;

export { taskEvent, TestAgent, type WsAgent } from '../helpers/test-agent.ts';
