// The composition root's product: everything a request handler or a
// background job may need, created once per process by server/compose.ts.
import type { Server } from 'bun';
import type { AuditService } from '../audit/service.ts';
import type { Config, LoadedConfig, Source } from '../config/load.ts';
import type { HomePaths } from '../config/home.ts';
import type { SettingName } from '../config/settings.ts';
import type { Db } from '../db/connect.ts';
import type { DatabaseTarget } from '../db/url.ts';
import type { HostPolicy } from '../http/hosts.ts';
import { logger } from '../lib/log.ts';
import type { AddressList } from '../lib/net.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { Notifications } from '../notifications/dispatch.ts';
import type { Reactions } from '../platform/reactions.ts';
import type { JobBoard } from './job-board.ts';
import type { AgentTransport } from '../transport/runtime.ts';

const log = logger('lifecycle');

/** Startup state and shutdown hooks of this process. */
export class Lifecycle {
  ready = false;
  private hooks: { name: string; fn: () => Promise<void> | void }[] = [];
  private stopping: Promise<void> | null = null;

  onShutdown(name: string, fn: () => Promise<void> | void): void {
    this.hooks.push({ name, fn });
  }

  /** Runs hooks newest first; each failure is logged and the rest still run. */
  shutdown(): Promise<void> {
    if (!this.stopping) {
      this.ready = false;
      this.stopping = (async () => {
        for (const hook of this.hooks.slice().reverse()) {
          try {
            await hook.fn();
          } catch (e) {
            log.error({ err: (e as Error).message, hook: hook.name }, 'shutdown hook failed');
          }
        }
      })();
    }
    return this.stopping;
  }
}

export interface AppContext {
  loaded: LoadedConfig;
  config: Config;
  sources: Record<SettingName, Source>;
  paths: HomePaths;
  database: DatabaseTarget;
  db: Db;
  metrics: Metrics;
  audit: AuditService;
  hosts: HostPolicy;
  trustedProxies: AddressList | null;
  lifecycle: Lifecycle;
  /** Set once the HTTP server listens. */
  server: Server<unknown> | null;
  /** The socket peer address of a request (tests substitute their own). */
  peerAddress(request: Request): string | null;
  /** This process's index among the `--workers` processes (0 for the first);
   * sent as X-SVC-Worker when there is more than one. */
  worker: { index: number; count: number };
  /** Agent transports' per-process state: sessions, sockets, buckets, signals. */
  agentTransport: AgentTransport;
  /** The notification dispatcher of this process. */
  notifications: Notifications;
  /** Where areas report committed changes others react to (notifications' triggers). */
  reactions: Reactions;
  /** This process's background jobs and their last outcome. */
  jobs: JobBoard;
}
