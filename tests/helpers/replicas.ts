// Several `dist/svc serve` replicas on one PostgreSQL database, as a team runs
// them behind a load balancer: each with a home of its own (another host),
// the same secrets (the secret file copied between hosts), an administrator
// from SVC_BOOTSTRAP_ADMIN_*, agents minted from the test process straight
// into the database, and the admin's session for API calls.
import { sql } from 'drizzle-orm';
import { mintAgent } from '../../src/agents/service.ts';
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { randomToken } from '../../src/lib/crypto.ts';
import { createContext, openConfiguredDatabase } from '../../src/server/compose.ts';
import type { AppContext } from '../../src/server/context.ts';
import { TEST_ACTOR } from './agents.ts';
import { Api } from './api-client.ts';
import { cleanEnv, eventually, startSvc, type RunningSvc } from './binary.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from './identity.ts';
import { TestAgent } from './test-agent.ts';

export const REPLICA_ADMIN = { email: 'replicas@example.com', password: STRONG_PASSWORD };

/** The environment of one replica: its own home, the cluster's database and secrets. */
export function replicaEnv(databaseUrl: string, secrets: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  return cleanEnv({
    ...FAST_IDENTITY_ENV,
    ...secrets,
    SVC_DATABASE_URL: databaseUrl,
    SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '2',
    SVC_BOOTSTRAP_ADMIN_EMAIL: REPLICA_ADMIN.email,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: REPLICA_ADMIN.password,
    // Agents of the tests come "from many hosts" (X-Forwarded-For): one address may make 600 agent requests a minute.
    SVC_TRUSTED_PROXIES: '127.0.0.1',
    SVC_LOG_LEVEL: 'info',
    ...extra,
  });
}

export const clusterSecrets = (): Record<string, string> => ({
  SVC_SECRET: randomToken(32),
  SVC_AUDIT_CHAIN_SECRET: randomToken(32),
  SVC_METRICS_AUTH_TOKEN: randomToken(32),
});

export class Cluster {
  readonly replicas: RunningSvc[] = [];
  readonly envs: Record<string, string>[] = [];
  private readonly contexts: AppContext[] = [];
  private ctx: AppContext | null = null;
  private forwarded = 0;

  constructor(
    readonly databaseUrl: string,
    readonly secrets = clusterSecrets(),
    readonly extra: Record<string, string> = {},
  ) {}

  /** Starts `n` replicas, all at once (they race for the migrations and the administrator), ready. */
  async start(n: number): Promise<this> {
    const started = await Promise.all(Array.from({ length: n }, () => this.add()));
    void started;
    return this;
  }

  /** One more replica, waited for until ready. */
  async add(): Promise<RunningSvc> {
    const env = replicaEnv(this.databaseUrl, this.secrets, this.extra);
    const svc = await startSvc(env, ['--host', '127.0.0.1']);
    this.replicas.push(svc);
    this.envs.push(env);
    await eventually(async () => (await fetch(`${svc.url}/api/v1/health/ready`).catch(() => null))?.status === 200, 30_000, 'replica ready');
    return svc;
  }

  /** A context of the test process on the cluster's database (for minting and reading). */
  context(): AppContext {
    if (this.ctx) return this.ctx;
    const { loaded } = loadConfigMintingSecrets({ env: this.envs[0]! });
    this.ctx = createContext(loaded, openConfiguredDatabase(loaded));
    this.contexts.push(this.ctx);
    return this.ctx;
  }

  async defaultProjectId(): Promise<string> {
    const [project] = await this.context().db.all<{ id: string }>(sql`SELECT id FROM projects WHERE slug = 'default'`);
    return project!.id;
  }

  /** An agent minted in the default project, talking to `replica`. */
  async agent(replica: RunningSvc, name = `agent-${crypto.randomUUID().slice(0, 8)}`): Promise<TestAgent> {
    const projectId = await this.defaultProjectId();
    const minted = await mintAgent(this.context(), projectId, name, TEST_ACTOR);
    return new TestAgent({ baseUrl: replica.url, token: minted.token, hmacSecret: minted.hmac_secret, agentId: minted.agent.id, projectId });
  }

  /** The administrator signed in on `replica` (sessions live in the database: any replica accepts them). */
  async admin(replica: RunningSvc): Promise<Api> {
    const api = new Api(replica.url);
    await api.login(REPLICA_ADMIN.email, REPLICA_ADMIN.password);
    return api;
  }

  /** A distinct forwarded address per agent request (the per-address bucket is 600 a minute). */
  from(): Record<string, string> {
    const n = ++this.forwarded;
    return { 'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` };
  }

  async stop(): Promise<void> {
    for (const c of this.contexts) await c.db.close().catch(() => {});
    await Promise.all(this.replicas.map((r) => r.stop('SIGKILL')));
  }
}

/** The process id of a lease holder (`host:pid:tag`). */
export const holderPid = (holder: string): number => Number(holder.split(':')[1]);

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return { n: s.length, p50: Number(percentile(s, 50).toFixed(2)), p99: Number(percentile(s, 99).toFixed(2)), max: Number(s[s.length - 1]!.toFixed(2)) };
};
