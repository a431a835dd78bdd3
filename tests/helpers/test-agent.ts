// A TypeScript stand-in for a z4j agent, built on svc's own signer and
// verifier: long-poll sessions (probe, upload, poll) and WebSocket connections
// (hello, signed frames both ways), plus hand-made frames for bad input
// (wrong HMAC, replayed nonce, stale ts, seq going back, other bindings...).
import { nowMicros } from '../../src/lib/clock.ts';
import { randomToken } from '../../src/lib/crypto.ts';
import { frameHmac, type FrameBinding, type SignedFrameType } from '../../src/transport/frames.ts';
import { toJsonValue, type JsonInput, type JsonInputObject } from '../../src/transport/json-convert.ts';
import { compactJson, type JsonObject } from '../../src/transport/json.ts';
import { FrameSigner } from '../../src/transport/signer.ts';
import { formatFrameTimestamp } from '../../src/transport/timestamp.ts';
import { FrameVerifier, type VerifiedSignedFrame } from '../../src/transport/verifier.ts';

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface PollOptions {
  wait?: number;
  max_frames?: number;
  contracts?: string;
  features?: string;
  headers?: Record<string, string>;
  /** Query string as sent (overrides wait / max_frames). */
  query?: string;
}

const SERVER_FRAMES = { accept: ['command', 'event_batch_ack', 'error'] as const };

/** Base64url with or without padding, as an agent decodes Z4J_HMAC_SECRET. */
export const decodeHmacSecret = (text: string): Buffer => Buffer.from(text.replace(/=+$/, ''), 'base64url');

let eventCounter = 0;

/** An event record as z4j agents send it; `fields` override any key. */
export function taskEvent(fields: Record<string, JsonInput> = {}): Record<string, JsonInput> {
  eventCounter++;
  return {
    id: crypto.randomUUID(),
    kind: 'task.succeeded',
    engine: 'celery',
    task_id: `task-${eventCounter}-${crypto.randomUUID().slice(0, 8)}`,
    occurred_at: new Date(nowMicros() / 1000).toISOString().replace('Z', '+00:00'),
    data: { task_name: 'app.tasks.add', queue: 'default', worker: 'w1@host', result: 3, runtime_ms: 12 },
    ...fields,
  };
}

export class TestAgent {
  readonly baseUrl: string;
  readonly token: string;
  readonly agentId: string;
  readonly projectId: string;
  readonly secret: Buffer;
  readonly hmacSecretText: string;
  nonce = '';
  signer!: FrameSigner;
  verifier!: FrameVerifier;
  private frameCounter = 0;

  constructor(o: { baseUrl: string; token: string; hmacSecret: string; agentId: string; projectId: string }) {
    this.baseUrl = o.baseUrl;
    this.token = o.token;
    this.agentId = o.agentId;
    this.projectId = o.projectId;
    this.hmacSecretText = o.hmacSecret;
    this.secret = decodeHmacSecret(o.hmacSecret);
    this.newSession();
  }

  get binding(): FrameBinding {
    return { agentId: this.agentId, projectId: this.projectId, sessionId: this.nonce };
  }

  /** A fresh nonce: new signer and verifier, seq back to 1 (what an agent does on connect). */
  newSession(nonce = randomToken(16)): this {
    this.nonce = nonce;
    this.signer = new FrameSigner(this.secret, this.binding);
    this.verifier = new FrameVerifier(this.secret, this.binding, SERVER_FRAMES);
    return this;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, 'x-z4j-session-nonce': this.nonce, ...extra };
  }

  private async fetchJson(method: string, path: string, init: { headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<HttpResult> {
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers: init.headers, body: init.body, signal: init.signal });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body };
  }

  /** The connect probe: GET /commands?wait=0&max_frames=0. */
  probe(opts: { features?: string; headers?: Record<string, string> } = {}): Promise<HttpResult> {
    return this.poll({ wait: 0, max_frames: 0, ...opts });
  }

  poll(opts: PollOptions = {}, signal?: AbortSignal): Promise<HttpResult> {
    const query = opts.query ?? `wait=${opts.wait ?? 0}&max_frames=${opts.max_frames ?? 50}`;
    const extra: Record<string, string> = { ...opts.headers };
    if (opts.contracts !== undefined) extra['x-z4j-retry-contracts'] = opts.contracts;
    if (opts.features !== undefined) extra['x-z4j-runtime-features'] = opts.features;
    return this.fetchJson('GET', `/api/v1/agent/commands?${query}`, { headers: this.headers(extra), ...(signal ? { signal } : {}) });
  }

  upload(frames: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
    return this.fetchJson('POST', '/api/v1/agent/events', {
      headers: this.headers({ 'content-type': 'application/json', ...headers }),
      body: JSON.stringify({ frames }),
    });
  }

  uploadRaw(body: string, headers: Record<string, string> = {}): Promise<HttpResult> {
    return this.fetchJson('POST', '/api/v1/agent/events', { headers: this.headers({ 'content-type': 'application/json', ...headers }), body });
  }

  nextId(prefix: string): string {
    return `${prefix}${(++this.frameCounter).toString(16).padStart(12, '0')}`;
  }

  sign(type: SignedFrameType, payload: JsonInputObject, id = this.nextId(type === 'event_batch' ? 'ev_' : 'fr_')): string {
    return this.signer.sign(type, id, payload);
  }

  eventBatch(events: Record<string, JsonInput>[], id?: string): string {
    return this.sign('event_batch', { events }, id);
  }

  heartbeat(payload: JsonInputObject = {}): string {
    return this.sign('heartbeat', { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {}, ...payload }, this.nextId('hb_'));
  }

  agentStatus(payload: JsonInputObject = {}, id = this.nextId('as_')): string {
    return this.sign('agent_status', { agent_version: '1.13.0', protocol_version: '2', buffer_depth: 0, ...payload }, id);
  }

  ack(commandId: string): string {
    return this.sign('command_ack', { delivery_claim_token: null }, commandId);
  }

  result(commandId: string, status: 'success' | 'failed', result: JsonInputObject | null = {}, error: string | null = null): string {
    return this.sign('command_result', { status, result, error, delivery_claim_token: null }, commandId);
  }

  /** A frame built by hand with any field altered; hmac computed over it unless given. */
  craft(fields: Record<string, JsonInput | undefined>, opts: { binding?: FrameBinding; secret?: Uint8Array; hmac?: string } = {}): string {
    const base: Record<string, JsonInput | undefined> = {
      v: 2,
      id: this.nextId('hb_'),
      ts: formatFrameTimestamp(nowMicros()),
      nonce: randomToken(16),
      seq: 1,
      type: 'heartbeat',
      payload: { buffer_size: 0, last_flush_at: null, dropped_events: 0, adapter_health: {} },
      ...fields,
    };
    const frame = toJsonValue(base as JsonInputObject) as JsonObject;
    frame.hmac = opts.hmac ?? frameHmac(opts.secret ?? this.secret, frame, opts.binding ?? this.binding);
    return compactJson(frame);
  }

  /** Verifies command frames from a poll with this session's verifier. */
  verifyAll(frames: string[]): VerifiedSignedFrame[] {
    return frames.map((f) => {
      const v = this.verifier.verify(f);
      if (v.kind !== 'signed') throw new Error('expected a signed frame');
      return v;
    });
  }

  wsUrl(): string {
    return `${this.baseUrl.replace(/^http/, 'ws')}/ws/agent`;
  }

  /** Opens /ws/agent; with `hello` set, sends it and waits for the hello_ack. */
  async connect(opts: { hello?: Record<string, JsonInput | undefined> | false; headers?: Record<string, string>; token?: string } = {}): Promise<WsAgent> {
    const client = new WsAgent(this, new WebSocket(this.wsUrl(), { headers: { authorization: `Bearer ${opts.token ?? this.token}`, ...opts.headers } } as never));
    await client.opened;
    if (opts.hello !== false) await client.hello(opts.hello ?? {});
    return client;
  }
}

/** One WebSocket connection of a TestAgent. */
export class WsAgent {
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly inbox: string[] = [];
  private waiting: ((m: string) => void) | null = null;
  closeInfo: { code: number; reason: string } | null = null;
  sessionId = '';
  signer!: FrameSigner;
  verifier!: FrameVerifier;
  helloAck: any = null;

  constructor(
    readonly agent: TestAgent,
    readonly ws: WebSocket,
  ) {
    this.opened = new Promise((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error('websocket error')));
    });
    this.closed = new Promise((resolve) => {
      ws.addEventListener('close', (e) => {
        this.closeInfo = { code: e.code, reason: e.reason };
        resolve(this.closeInfo);
        const w = this.waiting;
        this.waiting = null;
        w?.('');
      });
    });
    ws.addEventListener('message', (e) => {
      const text = typeof e.data === 'string' ? e.data : Buffer.from(e.data as ArrayBuffer).toString('utf8');
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = null;
        w(text);
      } else this.inbox.push(text);
    });
  }

  /** The next message (text), or '' when the socket closed first. */
  next(ms = 5000): Promise<string> {
    const queued = this.inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.closeInfo) return Promise.resolve('');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Error('no message from the server'));
      }, ms);
      this.waiting = (m) => {
        clearTimeout(timer);
        resolve(m);
      };
    });
  }

  /** The next message as a verified signed frame. */
  async nextSigned(ms = 5000): Promise<VerifiedSignedFrame> {
    const text = await this.next(ms);
    if (text === '') throw new Error(`socket closed (${this.closeInfo?.code})`);
    const v = this.verifier.verify(text);
    if (v.kind !== 'signed') throw new Error('expected a signed frame');
    return v;
  }

  sendText(text: string): void {
    this.ws.send(text);
  }

  async hello(overrides: Record<string, JsonInput | undefined> = {}): Promise<any> {
    const payload = {
      protocol_version: '2',
      agent_version: '1.13.0',
      framework: 'bare',
      engines: ['celery'],
      schedulers: [],
      capabilities: { celery: ['bulk_retry', 'cancel_task', 'retry_by_reference_v1', 'retry_task'] },
      host: { name: 'test-host' },
      worker_id: `bare-${process.pid}-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`,
      worker_role: 'task',
      worker_pid: process.pid,
      worker_started_at: formatFrameTimestamp(nowMicros()),
      ...overrides,
    };
    this.ws.send(JSON.stringify({ v: 2, id: `hello_${randomToken(8)}`, ts: null, type: 'hello', payload }));
    const text = await this.next();
    if (text === '') return null;
    this.helloAck = JSON.parse(text);
    const p = this.helloAck.payload;
    this.sessionId = p.session_id;
    const binding = { agentId: p.agent_id, projectId: p.project_id, sessionId: p.session_id };
    this.signer = new FrameSigner(this.agent.secret, binding);
    this.verifier = new FrameVerifier(this.agent.secret, binding, SERVER_FRAMES);
    return this.helloAck;
  }

  sign(type: SignedFrameType, payload: JsonInputObject, id: string): string {
    return this.signer.sign(type, id, payload);
  }

  send(type: SignedFrameType, payload: JsonInputObject, id = this.agent.nextId(type === 'event_batch' ? 'ev_' : 'fr_')): string {
    this.ws.send(this.sign(type, payload, id));
    return id;
  }

  close(): void {
    this.ws.close();
  }
}

/** What a schedule.external.activate command binds (its parameters). */
export interface ScheduleStream {
  scheduler: string;
  stream_id: string;
  epoch_uuid: string;
  epoch_number: number;
  adapter_instance_id: string;
  source_scope: string;
}

/** One schedule as a z4j scheduler adapter projects it (the external protocol's normalized row). */
export function scheduleRow(scheduler: string, fields: Record<string, JsonInput> = {}): Record<string, JsonInput> {
  const name = (fields.name as string | undefined) ?? `job-${crypto.randomUUID().slice(0, 6)}`;
  return {
    source_key: name,
    engine: scheduler.split('-')[0]!,
    scheduler,
    name,
    task_name: 'app.tasks.tick',
    kind: 'interval',
    expression: '60',
    timezone: 'UTC',
    queue: null,
    priority: 'normal',
    args: [],
    kwargs: {},
    is_enabled: true,
    last_run_at: null,
    next_run_at: null,
    total_runs: 0,
    external_id: name,
    catch_up: 'skip',
    source: `${scheduler}:test`,
    source_hash: null,
    ...fields,
  };
}

/** The schedule.snapshot events of one stable external snapshot (rows frames, then the terminal frame),
 * one event per frame as the z4j agents send them; `perFrame` rows go in each rows frame. */
export function externalSnapshotEvents(stream: ScheduleStream, sequence: number, rows: Record<string, JsonInput>[], perFrame = 50): Record<string, JsonInput>[] {
  const snapshotId = crypto.randomUUID();
  const chunks: Record<string, JsonInput>[][] = [];
  for (let i = 0; i < rows.length; i += perFrame) chunks.push(rows.slice(i, i + perFrame));
  const frame = (kind: 'rows' | 'terminal', index: number, schedules: Record<string, JsonInput>[]) => ({
    id: crypto.randomUUID(),
    kind: 'schedule.snapshot',
    engine: stream.scheduler,
    task_id: '',
    occurred_at: new Date(nowMicros() / 1000).toISOString().replace('Z', '+00:00'),
    data: {
      external_snapshot_frame: {
        protocol_version: 1,
        stream_id: stream.stream_id,
        epoch_uuid: stream.epoch_uuid,
        epoch_number: stream.epoch_number,
        sequence,
        owner: stream.scheduler,
        source_scope: stream.source_scope,
        adapter_instance_id: stream.adapter_instance_id,
        snapshot_id: snapshotId,
        frame_kind: kind,
        frame_index: index,
        frame_count: chunks.length,
        row_count: rows.length,
        snapshot_digest: '0'.repeat(64),
        stable_source: true,
        schedules,
      },
      frame_digest: '0'.repeat(64),
      reason: 'activation',
    },
  });
  return [...chunks.map((c, i) => frame('rows', i, c)), frame('terminal', chunks.length, [])];
}
