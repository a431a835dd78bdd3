// The scheduler process's side of the scheduler endpoint: JSON over HTTPS with
// its client certificate (mutual TLS), keep-alive connections through Bun's fetch.
import { readFileSync } from 'node:fs';
import { VERSION } from '../version.ts';
import { INSTANCE_HEADER, VERSION_HEADER } from './wire.ts';

export interface ClientSettings {
  url: string;
  certFile: string;
  keyFile: string;
  /** Empty: the system's trust store. */
  caFile: string;
  instance: string;
  timeoutMs?: number;
}

export class BrainError extends Error {
  constructor(
    message: string,
    /** 0 when the service was not reached. */
    readonly status: number,
    readonly code: string,
    readonly body: unknown = null,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  status: number;
  body: T;
}

export class BrainClient {
  private readonly tls: { cert: string; key: string; ca?: string };
  readonly base: string;

  constructor(readonly settings: ClientSettings) {
    let url: URL;
    try {
      url = new URL(settings.url);
    } catch {
      throw new BrainError(`--brain-grpc-url ${JSON.stringify(settings.url)} is not a URL`, 0, 'bad_url');
    }
    if (url.protocol !== 'https:') throw new BrainError(`--brain-grpc-url must be https:// (mutual TLS), not ${url.protocol}`, 0, 'bad_url');
    this.base = `${url.protocol}//${url.host}`;
    const read = (file: string, what: string) => {
      if (file === '') throw new BrainError(`${what} is not set`, 0, 'no_certificate');
      try {
        return readFileSync(file, 'utf8');
      } catch (e) {
        throw new BrainError(`${what}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, 0, 'no_certificate');
      }
    };
    this.tls = {
      cert: read(settings.certFile, 'the client certificate (--tls-cert, SVC_SCHEDULER_TLS_CERT)'),
      key: read(settings.keyFile, 'its key (--tls-key, SVC_SCHEDULER_TLS_KEY)'),
      ...(settings.caFile !== '' ? { ca: read(settings.caFile, 'the CA certificate (--tls-ca, SVC_SCHEDULER_TLS_CA)') } : {}),
    };
  }

  /** One request; any answer (2xx or not) resolves, a transport failure throws BrainError with status 0. */
  async request<T = any>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
    let res: Response;
    try {
      res = await fetch(`${this.base}/scheduler/v1${path}`, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          [INSTANCE_HEADER]: this.settings.instance,
          [VERSION_HEADER]: VERSION,
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.settings.timeoutMs ?? 15_000),
        tls: this.tls,
      } as RequestInit);
    } catch (e) {
      const err = e as Error & { code?: string };
      throw new BrainError(`${this.base}: ${err.name === 'TimeoutError' ? 'no answer in time' : err.message}${err.code ? ` (${err.code})` : ''}`, 0, err.code ?? 'unreachable');
    }
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed as T };
  }

  /** Like request(), but a non-2xx answer throws BrainError naming the service's error code. */
  async call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const a = await this.request<T>(method, path, body);
    if (a.status >= 200 && a.status < 300) return a.body;
    const b = a.body as { error?: string; message?: string; details?: { fields?: { path: string; message: string }[] } } | null;
    const fields = b?.details?.fields?.map((f) => `${f.path.replace(/^\//, '')}: ${f.message}`).join('; ');
    throw new BrainError(`${b?.message ?? `HTTP ${a.status}`}${fields ? ` (${fields})` : ''}`, a.status, b?.error ?? `http_${a.status}`, a.body);
  }
}
