// A dashboard tab's live stream as a test sees it: a real WebSocket to
// /api/v1/live with the session cookie (and an Origin), the messages it got,
// and waits for the next one matching a test. Plus the raw handshake, to read
// the HTTP status of a refused upgrade.
import { connect } from 'node:net';

export interface LiveMessage {
  type: string;
  [key: string]: any;
}

export class LiveTab {
  readonly ws: WebSocket;
  readonly messages: LiveMessage[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  closeInfo: { code: number; reason: string } | null = null;
  private waiters: { test: (m: LiveMessage) => boolean; resolve: (m: LiveMessage) => void; from: number }[] = [];

  constructor(baseUrl: string, headers: Record<string, string>) {
    this.ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/api/v1/live`, { headers } as never);
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve());
      this.ws.addEventListener('error', () => reject(new Error('live websocket error')));
    });
    this.closed = new Promise((resolve) => {
      this.ws.addEventListener('close', (e) => {
        this.closeInfo = { code: e.code, reason: e.reason };
        resolve(this.closeInfo);
      });
    });
    this.ws.addEventListener('message', (e) => {
      const m = JSON.parse(String(e.data)) as LiveMessage;
      m.receivedAt = performance.now();
      this.messages.push(m);
      for (const w of [...this.waiters]) {
        if (w.test(m)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    });
  }

  static async open(baseUrl: string, cookie: string, origin: string | null = baseUrl): Promise<LiveTab> {
    const tab = new LiveTab(baseUrl, { cookie, ...(origin ? { origin } : {}) });
    await tab.opened;
    await tab.next((m) => m.type === 'ready');
    return tab;
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** The first message (already received from index `from` on, or still to come) matching `test`. */
  next(test: (m: LiveMessage) => boolean, ms = 5000, from = 0): Promise<LiveMessage> {
    const seen = this.messages.slice(from).find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no matching live message within ${ms} ms; got ${JSON.stringify(this.messages.slice(-5))}`));
      }, ms);
      const done = (m: LiveMessage) => {
        clearTimeout(timer);
        resolve(m);
      };
      this.waiters.push({ test, resolve: done, from });
    });
  }

  async subscribe(project: string, types?: string[]): Promise<LiveMessage> {
    const from = this.messages.length;
    this.send({ type: 'subscribe', project, ...(types ? { types } : {}) });
    return this.next((m) => (m.type === 'subscribed' || m.type === 'error') && m.project === project, 5000, from);
  }

  /** Notices received so far (optionally of one type). */
  notices(type?: string): LiveMessage[] {
    return this.messages.filter((m) => ['task', 'command', 'agent', 'activity'].includes(m.type) && (!type || m.type === type));
  }

  /** Resolves with the notice of `type` whose ids include `id`. */
  noticeOf(type: string, id: string, ms = 5000): Promise<LiveMessage> {
    return this.next((m) => m.type === type && (m.ids as string[]).includes(id), ms);
  }

  close(): void {
    this.ws.close();
  }
}

/** Sends a WebSocket handshake by hand and returns the HTTP status line's code (101 when accepted). */
export function handshakeStatus(baseUrl: string, headers: Record<string, string>): Promise<number> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      const lines = [
        'GET /api/v1/live HTTP/1.1',
        `Host: ${url.host}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64')}`,
        'Sec-WebSocket-Version: 13',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m) {
        socket.destroy();
        resolve(Number(m[1]));
      }
    });
    socket.on('error', reject);
  });
}

/** The Cookie header of a test Browser's jar. */
export const cookieOf = (cookies: Map<string, string>): string => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
