// An in-process service for API and contract tests: real settings in a temp
// $SVC_HOME, a real SQLite file (or a fresh PostgreSQL database when
// SVC_TEST_DIALECT=postgres), migrations applied, requests through
// app.handle() with no port.
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import type { Dialect } from '../../src/db/connect.ts';
import { upgrade } from '../../src/db/migrate.ts';
import { buildApp, type App, type RouteModule } from '../../src/http/app.ts';
import { setLogLevel } from '../../src/lib/log.ts';
import { buildServiceApp, createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { tempDir } from './home.ts';
import { freshDatabase } from './postgres.ts';

export const testDialect = (): Dialect => (process.env.SVC_TEST_DIALECT === 'postgres' ? 'postgres' : 'sqlite');

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as-is (no JSON encoding). */
  raw?: string | ReadableStream;
  headers?: Record<string, string>;
}

export interface TestService {
  ctx: AppContext;
  home: string;
  /** The assembled app (tests that need a real listening server call app.listen). */
  app: App;
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<TestResponse<T>>;
  /** The socket peer address the next requests appear to come from. */
  setPeer(ip: string): void;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  dialect?: Dialect;
  env?: Record<string, string>;
  /** Route modules to serve instead of the full service (app-assembly tests). */
  modules?: RouteModule[];
  ready?: boolean;
  /** Apply migrations before returning (default true). */
  migrate?: boolean;
}

export async function testService(options: TestServiceOptions = {}): Promise<TestService> {
  setLogLevel(process.env.SVC_TEST_LOG_LEVEL ?? 'silent');
  const dialect = options.dialect ?? testDialect();
  const home = tempDir();
  const pg = dialect === 'postgres' ? await freshDatabase() : null;
  const env: Record<string, string> = { SVC_HOME: home, SVC_DATABASE_URL: pg?.url ?? '', ...options.env };
  const { loaded } = loadConfigMintingSecrets({ env });
  const db = openConfiguredDatabase(loaded);
  if (options.migrate ?? true) await upgrade(db);
  const ctx = createContext(loaded, db);
  let peer = '127.0.0.1';
  ctx.peerAddress = () => peer;
  ctx.lifecycle.ready = options.ready ?? true;
  const app = options.modules ? buildApp(ctx, options.modules) : buildServiceApp(ctx);
  return {
    ctx,
    home,
    app,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { host: 'localhost', ...opts.headers };
      let body: string | ReadableStream | undefined = opts.raw;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body, duplex: 'half' } as RequestInit));
      const text = await res.text();
      let parsed: unknown = text;
      if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
      return { status: res.status, headers: res.headers, body: parsed as never, text };
    },
    setPeer(ip) {
      peer = ip;
    },
    async close() {
      await ctx.lifecycle.shutdown();
      await db.close();
      await pg?.drop();
    },
  };
}
