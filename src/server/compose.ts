// Composition root: turns loaded settings into an AppContext and an app.
// Every area's routes are listed here, in one place.
import { activityRoutes } from '../activity/routes.ts';
import { agentRoutes } from '../agents/routes.ts';
import { commandRoutes } from '../commands/routes.ts';
import { operatorRoutes } from '../commands/operator-routes.ts';
import { bulkRoutes } from '../bulk/routes.ts';
import { taskRoutes } from '../tasks/routes.ts';
import { statsRoutes } from '../stats/routes.ts';
import { scheduleRoutes } from '../schedules/routes.ts';
import { adminRoutes } from '../admin/routes.ts';
import { auditRoutes } from '../audit/routes.ts';
import { AuditService } from '../audit/service.ts';
import { authRoutes } from '../auth/routes.ts';
import { ssoRoutes } from '../auth/sso/routes.ts';
import type { LoadedConfig } from '../config/load.ts';
import { openDatabase, type Db, type OpenOptions } from '../db/connect.ts';
import { buildApp } from '../http/app.ts';
import { dashboardResponse } from '../http/dashboard.ts';
import { HostPolicy } from '../http/hosts.ts';
import { healthRoutes } from '../health/routes.ts';
import { addressList } from '../lib/net.ts';
import { Metrics } from '../metrics/registry.ts';
import { Notifications } from '../notifications/dispatch.ts';
import { notificationRoutes } from '../notifications/routes.ts';
import { notificationReactions } from '../notifications/triggers.ts';
import { userNotificationRoutes } from '../notifications/user-routes.ts';
import { metricsRoutes } from '../metrics/routes.ts';
import { projectRoutes } from '../projects/routes.ts';
import { savedViewRoutes } from '../saved-views/routes.ts';
import { lookupRoutes } from '../lookup/routes.ts';
import { setupRoutes } from '../setup/routes.ts';
import { userRoutes } from '../users/routes.ts';
import { attachLive } from '../live/index.ts';
import { liveRoutes } from '../live/routes.ts';
import { agentTransportRoutes } from '../transport/routes.ts';
import { AgentTransport } from '../transport/runtime.ts';
import { Lifecycle, type AppContext } from './context.ts';
import { JobBoard } from './job-board.ts';

export function openConfiguredDatabase(loaded: LoadedConfig, overrides: OpenOptions = {}): Db {
  return openDatabase(loaded.database, {
    busyTimeoutMs: loaded.config.SVC_SQLITE_BUSY_TIMEOUT_MS,
    poolSize: loaded.config.SVC_DATABASE_POOL_SIZE,
    connectTimeoutSeconds: loaded.config.SVC_DATABASE_CONNECT_TIMEOUT_SECONDS,
    ...overrides,
  });
}

export function createContext(loaded: LoadedConfig, db: Db): AppContext {
  const { config } = loaded;
  const metrics = new Metrics();
  const audit = AuditService.fromConfig(config);
  const notifications = new Notifications({ db, audit, config, metrics });
  const ctx: AppContext = {
    loaded,
    config,
    sources: loaded.sources,
    paths: loaded.paths,
    database: loaded.database,
    db,
    metrics,
    audit,
    hosts: HostPolicy.fromConfig(loaded.paths.allowedHosts, config.SVC_ALLOWED_HOSTS, config.SVC_PUBLIC_URL),
    trustedProxies: config.SVC_TRUSTED_PROXIES.length > 0 ? addressList(config.SVC_TRUSTED_PROXIES) : null,
    lifecycle: new Lifecycle(),
    server: null,
    peerAddress: (request) => ctx.server?.requestIP(request)?.address ?? null,
    worker: { index: 0, count: 1 },
    agentTransport: new AgentTransport(config),
    notifications,
    reactions: notificationReactions(notifications, db),
    jobs: new JobBoard(),
  };
  // Registered first, so it runs last of the hooks (newest first): once the HTTP server and background
  // work have stopped causing fires, and before the database closes (serve.ts, testService close it after
  // every hook). Bounded: see Notifications.stop.
  ctx.lifecycle.onShutdown('notifications', () => notifications.stop());
  ctx.lifecycle.onShutdown('frame-decoders', () => ctx.agentTransport.decoders.close());
  attachLive(ctx); // the live dashboard stream: its reactions beside notifications', audit rows observed
  return ctx;
}

export function buildServiceApp(ctx: AppContext) {
  return buildApp(ctx, [healthRoutes, metricsRoutes, setupRoutes, authRoutes, ssoRoutes, userRoutes, projectRoutes, activityRoutes, adminRoutes, auditRoutes, agentRoutes, commandRoutes, operatorRoutes, bulkRoutes, taskRoutes, statsRoutes, scheduleRoutes, notificationRoutes, userNotificationRoutes, savedViewRoutes, lookupRoutes, agentTransportRoutes, liveRoutes], {
    fallback: (_request, path) => dashboardResponse(path),
  });
}
