// Child process for tests/api/telemetry.test.ts: what must be seen in a fresh
// process (which modules were loaded; how the process ends).
//   bun tests/helpers/telemetry-child.ts disabled            empty settings: drives the hooks, prints what got loaded
//   bun tests/helpers/telemetry-child.ts uncaught <dsn>      throws from a timer with error tracking on
//   bun tests/helpers/telemetry-child.ts rejection <dsn>     rejects a promise nobody handles
import { loadConfigMintingSecrets } from '../../src/config/secrets.ts';
import { every } from '../../src/server/schedule.ts';
import { errorTrackingEnabled, reportError, startTelemetry, traceAgentUpload, tracingEnabled } from '../../src/telemetry/index.ts';
import { testService } from './app.ts';
import { tempDir } from './home.ts';

const [mode, dsn] = process.argv.slice(2);

// @opentelemetry/api itself is not counted: prom-client (the /metrics registry) has always loaded it.
const telemetryModules = (): string[] =>
  Object.keys(require.cache).filter(
    (k) => (k.includes('@opentelemetry/') && !k.includes('@opentelemetry/api/')) || k.includes('@sentry') || /telemetry\/(tracing|errortrack)\.ts$/.test(k),
  );

if (mode === 'disabled') {
  const svc = await testService({ env: { SVC_OTEL_EXPORTER_OTLP_ENDPOINT: '', SVC_ERRORTRACK_DSN: '' } });
  await startTelemetry(svc.ctx.config, { processHandlers: true });
  const statuses: number[] = [];
  for (const path of ['/api/v1/health', '/api/v1/health/ready', '/api/v1/nope', '/api/v1/auth/me']) {
    statuses.push((await svc.call('GET', path, { headers: { cookie: 'svc_session=abc', authorization: 'Bearer tok-123456' } })).status);
  }
  statuses.push((await svc.call('POST', '/api/v1/agent/events', { body: { frames: ['x'] } })).status);
  reportError(new Error('would be sent if configured'), { mechanism: 'http', method: 'GET', route: '/x', requestId: 'r' });
  traceAgentUpload(null, { transport: 'ws', agentId: 'a', projectId: 'p', requestId: 'r', frames: 1 })?.end();
  let ran = false;
  every(svc.ctx, 'telemetry-child-failing-job', 60_000, async () => {
    ran = true;
    throw new Error('job failed');
  }, 0);
  while (!ran) await Bun.sleep(5);
  await Bun.sleep(20);
  await svc.close();
  console.log(JSON.stringify({ statuses, loaded: telemetryModules(), tracing: tracingEnabled(), errors: errorTrackingEnabled() }));
  process.exit(0);
} else if (mode === 'uncaught' || mode === 'rejection') {
  const { loaded } = loadConfigMintingSecrets({ env: { SVC_HOME: tempDir(), SVC_ERRORTRACK_DSN: dsn! } });
  await startTelemetry(loaded.config, { processHandlers: true });
  // A careless message: a configured secret, a bearer token and a cookie.
  const message = `exploded with ${loaded.config.SVC_SECRET} Authorization: Bearer child-token-9876 cookie: svc_session=child-cookie-1234`;
  console.log(JSON.stringify({ ready: true, secret: loaded.config.SVC_SECRET, loaded: telemetryModules() }));
  if (mode === 'uncaught') {
    setTimeout(() => {
      throw new TypeError(message);
    }, 10);
  } else {
    void Promise.reject(new RangeError(message));
  }
  // Kept alive; the handler must end the process.
  setTimeout(() => {
    console.log(JSON.stringify({ survived: true }));
    process.exit(3);
  }, 10_000);
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
