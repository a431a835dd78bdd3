// `svc scheduler ...` (also the executable invoked as `svc-scheduler`): svc's
// own scheduler process and its operator commands, and `svc mint-scheduler-cert`.
// Settings come from SVC_SCHEDULER_* (environment, $SVC_HOME/config.env);
// explicit flags win.
//
//   serve                 run the scheduler (fires svc-scheduler schedules through the service)
//   version               print the version
//   check                 can the service's scheduler endpoint be reached with this certificate?
//   status                running instances on this host (state files in $SVC_HOME/run)
//   info [--json]         a running instance's figures (its status endpoint)
//   doctor                check the settings, certificate, DNS, TCP, TLS and the endpoint
//   restart               running instances reload their certificates and re-read every schedule
//   import --from <tool>  schedules from json | crontab | celery-beat into a project
//   export --to <tool>    svc-scheduler schedules as json | crontab | celery-beat
//   schedules add | list | trigger | disable | enable | edit | history
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { CAC, Command } from 'cac';
import { loadConfig, type Config } from '../config/load.ts';
import { homePaths } from '../config/home.ts';
import { isoMicros, parseIsoMicros } from '../lib/clock.ts';
import { logger, setLogLevel } from '../lib/log.ts';
import { cronProblem, parseSolar } from '../schedules/next-run.ts';
import { BrainClient, BrainError } from '../scheduler/client.ts';
import { fromTool, toTool, TOOLS, type Tool } from '../scheduler/formats.ts';
import { commonNameOf, ensureCa, mintClientCert, PkiError, pkiDir, readCa, writePair } from '../scheduler/pki.ts';
import { SchedulerRunner } from '../scheduler/runner.ts';
import type { WireList, WireSchedule } from '../scheduler/wire.ts';
import { VERSION } from '../version.ts';
import { CliError, err, optionText, out, program, run, USAGE } from './kit.ts';

interface ConnFlags {
  brainGrpcUrl?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  instanceId?: string;
}

interface Resolved {
  url: string;
  cert: string;
  key: string;
  ca: string;
  instance: string;
  config: Config;
  home: string;
}

const text = (v: unknown, names: string[]): string | undefined => optionText(v, names);

/** SVC_SCHEDULER_* with the flags on top. */
function resolveSettings(flags: ConnFlags, defaultInstance: string): Resolved {
  const { config, paths } = loadConfig();
  const pick = (flag: unknown, names: string[], setting: string) => {
    const t = text(flag, names);
    return t !== undefined ? t : setting;
  };
  return {
    url: pick(flags.brainGrpcUrl, ['--brain-grpc-url'], config.SVC_SCHEDULER_BRAIN_GRPC_URL),
    cert: pick(flags.tlsCert, ['--tls-cert'], config.SVC_SCHEDULER_TLS_CERT),
    key: pick(flags.tlsKey, ['--tls-key'], config.SVC_SCHEDULER_TLS_KEY),
    ca: pick(flags.tlsCa, ['--tls-ca'], config.SVC_SCHEDULER_TLS_CA),
    instance: pick(flags.instanceId, ['--instance-id'], config.SVC_SCHEDULER_INSTANCE_ID) || defaultInstance,
    config,
    home: paths.home,
  };
}

function clientOf(r: Resolved): BrainClient {
  if (r.url === '') throw new CliError('no service to talk to: give --brain-grpc-url or set SVC_SCHEDULER_BRAIN_GRPC_URL', USAGE);
  try {
    return new BrainClient({ url: r.url, certFile: r.cert, keyFile: r.key, caFile: r.ca, instance: r.instance });
  } catch (e) {
    if (e instanceof BrainError) throw new CliError(e.message, USAGE);
    throw e;
  }
}

/** Turns a refusal of the service into a CLI error (exit 1; a refused certificate says so). */
function brainFailure(e: unknown): never {
  if (e instanceof BrainError) {
    if (e.code === 'cn_not_allowed') throw new CliError(`refused by the service: ${e.message} (add it to SVC_SCHEDULER_GRPC_ALLOWED_CNS and restart svc)`, 1);
    if (e.status === 0) throw new CliError(`cannot reach the service's scheduler endpoint: ${e.message}`, 1);
    throw new CliError(`${e.message} [${e.code}]`, e.status === 422 ? USAGE : 1);
  }
  throw e;
}

const withConn = (c: Command): Command =>
  c
    .option('--brain-grpc-url <url>', "the service's scheduler endpoint, https://host:7701 (SVC_SCHEDULER_BRAIN_GRPC_URL)")
    .option('--tls-cert <file>', 'client certificate, PEM (SVC_SCHEDULER_TLS_CERT)')
    .option('--tls-key <file>', 'its private key, PEM (SVC_SCHEDULER_TLS_KEY)')
    .option('--tls-ca <file>', "CA of the endpoint's certificate, PEM (SVC_SCHEDULER_TLS_CA)")
    .option('--instance-id <name>', 'name of this instance (SVC_SCHEDULER_INSTANCE_ID; default <host>-<pid>)');

const cliInstance = () => `${hostname()}-cli`;

// --- state files of running instances ------------------------------------------------------

interface StateFile {
  pid: number;
  instance: string;
  info_url: string | null;
  brain_url: string;
  started_at: string;
}

const runDir = (home: string) => join(home, 'run');
const stateFileOf = (home: string, instance: string) => join(runDir(home), `scheduler-${instance.replace(/[^A-Za-z0-9_.@-]/g, '_')}.json`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Running instances on this host (stale state files are removed). */
function runningInstances(home: string): (StateFile & { file: string })[] {
  const dir = runDir(home);
  if (!existsSync(dir)) return [];
  const out: (StateFile & { file: string })[] = [];
  for (const f of readdirSync(dir)) {
    if (!/^scheduler-.*\.json$/.test(f)) continue;
    const file = join(dir, f);
    try {
      const s = JSON.parse(readFileSync(file, 'utf8')) as StateFile;
      if (alive(s.pid)) out.push({ ...s, file });
      else rmSync(file, { force: true });
    } catch {
      /* unreadable: ignore */
    }
  }
  return out.sort((a, b) => a.instance.localeCompare(b.instance));
}

// --- serve -------------------------------------------------------------------------------------

interface ServeFlags extends ConnFlags {
  syncSeconds?: string;
  infoPort?: string;
}

async function serveCommand(flags: ServeFlags): Promise<number> {
  const r = resolveSettings(flags, `${hostname()}-${process.pid}`);
  setLogLevel(r.config.SVC_LOG_LEVEL);
  const log = logger('scheduler', { instance: r.instance });
  const syncText = text(flags.syncSeconds, ['--sync-seconds']);
  const syncSeconds = syncText !== undefined ? Number(syncText) : r.config.SVC_SCHEDULER_SYNC_SECONDS;
  if (!(syncSeconds >= 0.2 && syncSeconds <= 300)) throw new CliError('--sync-seconds must be 0.2..300', USAGE);
  const infoText = text(flags.infoPort, ['--info-port']);
  const infoPort = infoText !== undefined ? Number(infoText) : r.config.SVC_SCHEDULER_INFO_PORT;
  if (!(Number.isInteger(infoPort) && infoPort >= 0 && infoPort <= 65535)) throw new CliError('--info-port must be 0..65535', USAGE);

  let client = clientOf(r);
  // A certificate the service refuses is a configuration error: stop at once. An unreachable
  // service is not: the scheduler starts and keeps trying (it may come up first).
  let cn: string | null = commonNameOf(readFileSync(r.cert, 'utf8'));
  try {
    const ping = await client.call<{ cn: string; version: string }>('GET', '/ping');
    cn = ping.cn;
  } catch (e) {
    if (e instanceof BrainError && e.status !== 0) brainFailure(e);
    log.warn({ err: (e as Error).message }, 'the service is not reachable yet; retrying');
  }
  const runner = new SchedulerRunner({
    client,
    syncMs: syncSeconds * 1000,
    maxInFlight: r.config.SVC_SCHEDULER_MAX_IN_FLIGHT,
    catchUpMax: r.config.SVC_SCHEDULER_CATCH_UP_MAX,
    log,
  });
  const started = Date.now();
  const info = () => ({
    instance: r.instance,
    version: VERSION,
    pid: process.pid,
    host: hostname(),
    brain_url: r.url,
    cn,
    uptime_seconds: Math.round((Date.now() - started) / 1000),
    ...runner.snapshot(),
  });
  let infoServer: ReturnType<typeof Bun.serve> | null = null;
  if (infoPort > 0) {
    try {
      infoServer = Bun.serve({
        hostname: r.config.SVC_SCHEDULER_INFO_HOST,
        port: infoPort,
        fetch(req) {
          const path = new URL(req.url).pathname;
          if (path === '/info') return Response.json(info());
          if (path === '/health') {
            const ok = runner.stats.last_sync_ok === true;
            return Response.json({ ok, last_sync_at: runner.stats.last_sync_at, last_error: ok ? null : runner.stats.last_error }, { status: ok ? 200 : 503 });
          }
          return new Response('not found', { status: 404 });
        },
      });
    } catch (e) {
      throw new CliError(`cannot open the status endpoint on ${r.config.SVC_SCHEDULER_INFO_HOST}:${infoPort}: ${(e as Error).message} (--info-port 0 turns it off)`, 1);
    }
  }
  const infoUrl = infoServer ? `http://${r.config.SVC_SCHEDULER_INFO_HOST.includes(':') ? `[${r.config.SVC_SCHEDULER_INFO_HOST}]` : r.config.SVC_SCHEDULER_INFO_HOST}:${infoServer.port}` : null;
  const stateFile = stateFileOf(r.home, r.instance);
  mkdirSync(runDir(r.home), { recursive: true, mode: 0o700 });
  const state: StateFile = { pid: process.pid, instance: r.instance, info_url: infoUrl, brain_url: r.url, started_at: isoMicros(started * 1000) };
  writeFileSync(stateFile, JSON.stringify(state), { mode: 0o600 });

  await runner.start();
  process.stderr.write(`svc scheduler ${VERSION}: instance ${r.instance} firing through ${r.url} as ${cn ?? '(unknown CN)'}${infoUrl ? `, status at ${infoUrl}/info` : ''}\n`);
  log.info({ brain_url: r.url, cn, info_url: infoUrl, schedules: runner.snapshot().schedules }, 'scheduler started');

  return new Promise<number>((resolveExit) => {
    const stop = async (signal: string) => {
      log.info({ signal }, 'scheduler stopping');
      runner.stop();
      await runner.drain(5000);
      infoServer?.stop(true);
      rmSync(stateFile, { force: true });
      resolveExit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
    // `svc scheduler restart`: certificates and settings read again, every schedule re-read.
    process.on('SIGHUP', () => {
      try {
        const next = resolveSettings(flags, r.instance);
        client = clientOf(next);
        (runner as unknown as { o: { client: BrainClient } }).o.client = client;
        runner.resync();
        void runner.syncOnce();
        log.info({}, 'restarted: certificates and settings reloaded, schedules re-read');
      } catch (e) {
        log.error({ err: (e as Error).message }, 'restart failed; keeping the previous settings');
      }
    });
  });
}

// --- check, status, info, doctor, restart -----------------------------------------------------------

async function checkCommand(flags: ConnFlags): Promise<number> {
  const r = resolveSettings(flags, cliInstance());
  const client = clientOf(r);
  const t0 = Date.now();
  let ping: { cn: string; version: string; server_time: string };
  try {
    ping = await client.call('GET', '/ping');
  } catch (e) {
    brainFailure(e);
  }
  const rtt = Date.now() - t0;
  const serverMs = (parseIsoMicros(ping.server_time) ?? 0) / 1000;
  const offset = Math.round(serverMs - (t0 + rtt / 2));
  out(`ok: ${r.url} answers (svc ${ping.version}); certificate CN ${ping.cn} accepted; round trip ${rtt} ms; clock offset ${offset >= 0 ? '+' : ''}${offset} ms`);
  return 0;
}

async function fetchInfo(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/info`, { signal: AbortSignal.timeout(3000) });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

async function statusCommand(flags: { instanceId?: string }): Promise<number> {
  const { paths } = loadConfig();
  const wanted = text(flags.instanceId, ['--instance-id']);
  const list = runningInstances(paths.home).filter((s) => !wanted || s.instance === wanted);
  if (list.length === 0) {
    out(wanted ? `scheduler ${wanted}: not running` : 'no scheduler running on this host');
    return 1;
  }
  for (const s of list) {
    let line = `scheduler ${s.instance}: running (pid ${s.pid}) since ${s.started_at}, firing through ${s.brain_url}`;
    if (s.info_url) {
      try {
        const i = await fetchInfo(s.info_url);
        line += `; ${i.schedules} schedules, ${i.fires_accepted} fired, ${i.duplicates} already fired elsewhere, ${i.fire_errors} errors; last sync ${i.last_sync_at ?? 'never'}${i.last_sync_ok === false ? ' (failing)' : ''}; next run ${i.next_due_at ?? '-'}`;
      } catch (e) {
        line += `; status endpoint not answering (${(e as Error).message})`;
      }
    }
    out(line);
  }
  return 0;
}

async function infoCommand(flags: { json?: boolean; instanceId?: string }): Promise<number> {
  const { paths } = loadConfig();
  const wanted = text(flags.instanceId, ['--instance-id']);
  const list = runningInstances(paths.home).filter((s) => (!wanted || s.instance === wanted) && s.info_url);
  if (list.length === 0) throw new CliError(wanted ? `scheduler ${wanted} is not running here (or its status endpoint is off)` : 'no scheduler with a status endpoint is running on this host', 1);
  const infos = [];
  for (const s of list) {
    try {
      infos.push(await fetchInfo(s.info_url!));
    } catch (e) {
      infos.push({ instance: s.instance, pid: s.pid, error: `status endpoint not answering: ${(e as Error).message}` });
    }
  }
  if (flags.json) {
    out(JSON.stringify(infos.length === 1 ? infos[0] : infos, null, 2));
    return 0;
  }
  for (const i of infos) {
    for (const [k, v] of Object.entries(i)) out(`${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`);
    out('');
  }
  return 0;
}

async function restartCommand(flags: { instanceId?: string }): Promise<number> {
  const { paths } = loadConfig();
  const wanted = text(flags.instanceId, ['--instance-id']);
  const list = runningInstances(paths.home).filter((s) => !wanted || s.instance === wanted);
  if (list.length === 0) throw new CliError('no scheduler running on this host', 1);
  for (const s of list) {
    process.kill(s.pid, 'SIGHUP');
    out(`scheduler ${s.instance} (pid ${s.pid}): restarting (certificates and settings reloaded, schedules re-read)`);
  }
  return 0;
}

async function doctorCommand(flags: ConnFlags): Promise<number> {
  let failed = 0;
  const ok = (m: string) => out(`ok    ${m}`);
  const bad = (m: string) => {
    failed++;
    out(`FAIL  ${m}`);
  };
  const warn = (m: string) => out(`warn  ${m}`);
  let r: Resolved;
  try {
    r = resolveSettings(flags, cliInstance());
    ok('settings load');
  } catch (e) {
    bad(`settings: ${(e as Error).message}`);
    return 1;
  }
  let url: URL | null = null;
  if (r.url === '') bad('no service URL (--brain-grpc-url / SVC_SCHEDULER_BRAIN_GRPC_URL)');
  else {
    try {
      url = new URL(r.url);
      if (url.protocol !== 'https:') throw new Error('must be https://');
      ok(`service URL ${r.url}`);
    } catch (e) {
      bad(`service URL ${r.url}: ${(e as Error).message}`);
      url = null;
    }
  }
  let certOk = false;
  if (r.cert === '' || r.key === '') bad('client certificate and key (--tls-cert/--tls-key, SVC_SCHEDULER_TLS_CERT/_KEY) are not set');
  else {
    try {
      const x = new X509Certificate(readFileSync(r.cert, 'utf8'));
      if (!x.checkPrivateKey(createPrivateKey(readFileSync(r.key, 'utf8')))) throw new Error('the key does not match the certificate');
      const left = (Date.parse(x.validTo) - Date.now()) / 86_400_000;
      if (left < 0) throw new Error(`expired ${x.validTo}`);
      ok(`client certificate ${r.cert}: CN ${commonNameOf(x.toString())}, valid until ${x.validTo}`);
      if (left < 30) warn(`the client certificate expires in ${Math.floor(left)} days: mint a new one (svc mint-scheduler-cert)`);
      certOk = true;
    } catch (e) {
      bad(`client certificate: ${(e as Error).message}`);
    }
  }
  if (r.ca !== '') {
    try {
      new X509Certificate(readFileSync(r.ca, 'utf8'));
      ok(`CA ${r.ca}`);
    } catch (e) {
      bad(`CA ${r.ca}: ${(e as Error).message}`);
    }
  } else warn('no --tls-ca: the endpoint certificate must chain to the system trust store');
  if (!url) return 1;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  try {
    const a = await lookup(host);
    ok(`DNS ${host} -> ${a.address}`);
  } catch (e) {
    bad(`DNS ${host}: ${(e as Error).message}`);
    return 1;
  }
  const tcp = await new Promise<string | null>((res) => {
    const s = netConnect({ host, port, timeout: 5000 });
    s.once('connect', () => (s.destroy(), res(null)));
    s.once('timeout', () => (s.destroy(), res('timed out')));
    s.once('error', (e) => res(e.message));
  });
  if (tcp) {
    bad(`TCP ${host}:${port}: ${tcp}`);
    return 1;
  }
  ok(`TCP ${host}:${port}`);
  if (certOk) {
    const tlsProblem = await new Promise<string | null>((res) => {
      const s = tlsConnect({
        host,
        port,
        servername: /^[\d.]+$|:/.test(host) ? undefined : host,
        cert: readFileSync(r.cert, 'utf8'),
        key: readFileSync(r.key, 'utf8'),
        ...(r.ca !== '' ? { ca: readFileSync(r.ca, 'utf8') } : {}),
        timeout: 5000,
      });
      s.once('secureConnect', () => {
        const why = s.authorized ? null : `the endpoint's certificate is not trusted (${s.authorizationError})`;
        s.destroy();
        res(why);
      });
      s.once('timeout', () => (s.destroy(), res('handshake timed out')));
      s.once('error', (e) => res(e.message));
    });
    if (tlsProblem) bad(`TLS ${host}:${port}: ${tlsProblem}`);
    else ok(`TLS ${host}:${port} (the endpoint's certificate is trusted)`);
    try {
      const ping = await clientOf(r).call<{ cn: string; version: string }>('GET', '/ping');
      ok(`scheduler endpoint answers (svc ${ping.version}) and accepts CN ${ping.cn}`);
      if (ping.version !== VERSION) warn(`the service runs svc ${ping.version}, this scheduler ${VERSION}`);
    } catch (e) {
      bad(`scheduler endpoint: ${(e as Error).message}`);
    }
  }
  return failed === 0 ? 0 : 1;
}

// --- import, export -----------------------------------------------------------------------------

function readInput(file: string | undefined): string {
  if (file === undefined || file === '-') return readFileSync(0, 'utf8');
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, USAGE);
  }
}

async function importCommand(flags: ConnFlags & { from?: string; project?: string; file?: string; engine?: string; dryRun?: boolean; replace?: boolean }): Promise<number> {
  const tool = text(flags.from, ['--from']);
  if (!tool || !(TOOLS as readonly string[]).includes(tool)) throw new CliError(`--from must be one of ${TOOLS.join(', ')}`, USAGE);
  const project = text(flags.project, ['--project']);
  if (!project) throw new CliError('--project <slug> is required', USAGE);
  let entries;
  try {
    entries = fromTool(tool as Tool, readInput(text(flags.file, ['--file'])), { engine: text(flags.engine, ['--engine']) });
  } catch (e) {
    throw new CliError(`${tool}: ${(e as Error).message}`, USAGE);
  }
  const client = clientOf(resolveSettings(flags, cliInstance()));
  const source = `imported:${tool}`;
  const body = { project, schedules: entries.map((e) => ({ ...e, source })), ...(flags.replace ? { mode: 'replace_for_source', source_filter: source } : {}), dry_run: !!flags.dryRun };
  let result: any;
  try {
    result = await client.call('POST', '/import', body);
  } catch (e) {
    brainFailure(e);
  }
  if (flags.dryRun) {
    const s = result.summary;
    out(`dry run: ${s.inserted} to add, ${s.updated} to update, ${s.unchanged} unchanged, ${s.deleted} to delete, ${s.failed} refused`);
    for (const [k, list] of [['add', result.inserted], ['update', result.updated], ['delete', result.deleted]] as const) for (const x of list) out(`  ${k} ${x.name}`);
  } else out(`imported into ${project}: ${result.inserted} added, ${result.updated} updated, ${result.unchanged} unchanged, ${result.deleted} deleted, ${result.failed} refused`);
  for (const [i, m] of Object.entries(result.errors ?? {})) err(`  entry ${i}: ${m}`);
  return Object.keys(result.errors ?? {}).length > 0 ? 1 : 0;
}

async function listOwned(client: BrainClient, project?: string): Promise<WireSchedule[]> {
  let list: WireList;
  try {
    list = await client.call<WireList>('GET', '/schedules');
  } catch (e) {
    brainFailure(e);
  }
  return (list.schedules ?? []).filter((s) => !project || s.project_slug === project).sort((a, b) => a.project_slug.localeCompare(b.project_slug) || a.name.localeCompare(b.name));
}

async function exportCommand(flags: ConnFlags & { to?: string; project?: string; file?: string }): Promise<number> {
  const tool = text(flags.to, ['--to']);
  if (!tool || !(TOOLS as readonly string[]).includes(tool)) throw new CliError(`--to must be one of ${TOOLS.join(', ')}`, USAGE);
  const client = clientOf(resolveSettings(flags, cliInstance()));
  const rows = await listOwned(client, text(flags.project, ['--project']));
  const rendered = toTool(tool as Tool, rows);
  const file = text(flags.file, ['--file']);
  if (file && file !== '-') {
    writeFileSync(resolve(file), rendered);
    err(`${rows.length} schedules written to ${file}`);
  } else process.stdout.write(rendered);
  return 0;
}

// --- schedules add | list | trigger | disable | enable | edit | history ---------------------------------

interface DefinitionFlags {
  name?: string;
  task?: string;
  engine?: string;
  cron?: string;
  interval?: string;
  at?: string;
  solar?: string;
  tz?: string;
  queue?: string;
  args?: string;
  kwargs?: string;
  catchUp?: string;
  priority?: string;
  disabled?: boolean;
}

function definitionFrom(flags: DefinitionFlags, requireAll: boolean): Record<string, unknown> {
  const d: Record<string, unknown> = {};
  const t = (v: unknown, n: string) => text(v, [n]);
  const timing = [
    ['cron', t(flags.cron, '--cron')],
    ['interval', t(flags.interval, '--interval')],
    ['clocked', t(flags.at, '--at')],
    ['solar', t(flags.solar, '--solar')],
  ].filter(([, v]) => v !== undefined) as [string, string][];
  if (timing.length > 1) throw new CliError('give one of --cron, --interval, --at, --solar', USAGE);
  if (timing.length === 1) {
    const [kind, expression] = timing[0]!;
    if (kind === 'cron' && cronProblem(expression, t(flags.tz, '--tz') ?? 'UTC')) throw new CliError(`--cron: ${cronProblem(expression, t(flags.tz, '--tz') ?? 'UTC')}`, USAGE);
    if (kind === 'solar' && !parseSolar(expression)) throw new CliError('--solar is "<event> <latitude> <longitude>", e.g. "sunrise 52.52 13.405"', USAGE);
    Object.assign(d, { kind, expression });
  } else if (requireAll) throw new CliError('give the timing: --cron <expr>, --interval <seconds>, --at <ISO instant> or --solar "<event> <lat> <lon>"', USAGE);
  const simple: [keyof DefinitionFlags, string, string][] = [
    ['name', '--name', 'name'],
    ['task', '--task', 'task_name'],
    ['engine', '--engine', 'engine'],
    ['tz', '--tz', 'timezone'],
    ['queue', '--queue', 'queue'],
    ['catchUp', '--catch-up', 'catch_up'],
    ['priority', '--priority', 'priority'],
  ];
  for (const [k, flag, field] of simple) {
    const v = t(flags[k], flag);
    if (v !== undefined) d[field] = v;
  }
  for (const [k, flag] of [['args', '--args'], ['kwargs', '--kwargs']] as const) {
    const v = t(flags[k], flag);
    if (v === undefined) continue;
    try {
      d[k] = JSON.parse(v);
    } catch {
      throw new CliError(`${flag} must be JSON (${k === 'args' ? '[1, "a"]' : '{"k": 1}'})`, USAGE);
    }
  }
  if (flags.disabled) d.is_enabled = false;
  if (requireAll) for (const f of ['name', 'task_name', 'engine']) if (d[f] === undefined) throw new CliError(`--${f === 'task_name' ? 'task' : f} is required`, USAGE);
  return d;
}

const withDefinition = (c: Command): Command =>
  c
    .option('--name <name>', 'schedule name (unique per project)')
    .option('--task <task>', 'task name to run, e.g. app.tasks.report')
    .option('--engine <engine>', 'engine running it: celery, rq, dramatiq, huey, arq, taskiq')
    .option('--cron <expr>', 'cron expression (5 or 6 fields), read in --tz')
    .option('--interval <seconds>', 'every this many seconds')
    .option('--at <instant>', 'once, at this ISO 8601 instant with an offset (clocked)')
    .option('--solar <spec>', '"<event> <latitude> <longitude>": sunrise, sunset, solar_noon, dawn_civil, dusk_civil, ...')
    .option('--tz <zone>', 'IANA time zone of a cron expression (default UTC)')
    .option('--queue <queue>', 'queue to submit to')
    .option('--args <json>', 'positional arguments, a JSON list')
    .option('--kwargs <json>', 'keyword arguments, a JSON object')
    .option('--catch-up <policy>', 'runs missed while no scheduler ran: skip, fire_one_missed, fire_all_missed')
    .option('--priority <p>', 'critical, high, normal, low');

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

function schedulesGroup(args: string[]): Promise<number> {
  const cli = program('svc scheduler schedules');
  const client = (flags: ConnFlags) => clientOf(resolveSettings(flags, cliInstance()));
  const call = async <T = any>(flags: ConnFlags, method: string, path: string, body?: unknown): Promise<T> => {
    try {
      return await client(flags).call<T>(method, path, body);
    } catch (e) {
      brainFailure(e);
    }
  };
  const idOf = (id: unknown) => {
    const s = String(id ?? '');
    if (!/^[0-9a-f-]{36}$/i.test(s)) throw new CliError(`${JSON.stringify(s)} is not a schedule id (see \`svc scheduler schedules list\`)`, USAGE);
    return s;
  };
  const shown = (s: any) => `${s.id}  ${s.name}  ${s.kind} ${JSON.stringify(s.expression)} ${s.timezone}  ${s.is_enabled ? 'enabled' : 'disabled'}  next ${s.next_run_at ?? '-'}`;

  withConn(withDefinition(cli.command('add', 'add a schedule that svc fires').option('--project <slug>', 'the project (required)').option('--disabled', 'add it disabled'))).action(
    async (flags: ConnFlags & DefinitionFlags & { project?: string }) => {
      const project = text(flags.project, ['--project']);
      if (!project) throw new CliError('--project <slug> is required', USAGE);
      const s = await call(flags, 'POST', '/schedules', { project, ...definitionFrom(flags, true) });
      out(`added ${shown(s)}`);
      return 0;
    },
  );
  withConn(cli.command('list', "svc's scheduler's schedules").option('--project <slug>', 'only this project').option('--json', 'print JSON')).action(
    async (flags: ConnFlags & { project?: string; json?: boolean }) => {
      const rows = await listOwned(client(flags), text(flags.project, ['--project']));
      if (flags.json) {
        out(JSON.stringify(rows, null, 2));
        return 0;
      }
      if (rows.length === 0) {
        out('no schedules');
        return 0;
      }
      const t = [['ID', 'PROJECT', 'NAME', 'KIND', 'EXPRESSION', 'TZ', 'ENABLED', 'NEXT RUN', 'TASK']];
      for (const s of rows) t.push([s.id, s.project_slug, s.name, s.kind, s.expression, s.timezone, s.is_enabled ? 'yes' : 'no', s.next_run_at ?? '-', s.task_name]);
      out(table(t));
      return 0;
    },
  );
  withConn(cli.command('trigger <id>', 'run it once now (its next run does not move)')).action(async (id: string, flags: ConnFlags) => {
    const r = await call(flags, 'POST', `/schedules/${idOf(id)}/trigger`);
    out(`triggered ${r.schedule.name}: fire ${r.fire?.fire_id} (${r.fire?.status}), command ${r.command_id}`);
    return 0;
  });
  for (const verb of ['disable', 'enable'] as const) {
    withConn(cli.command(`${verb} <id>`, verb === 'disable' ? 'pause it' : 'resume it')).action(async (id: string, flags: ConnFlags) => {
      const r = await call(flags, 'POST', `/schedules/${idOf(id)}/${verb}`);
      out(`${verb}d ${shown(r.schedule)}`);
      return 0;
    });
  }
  withConn(withDefinition(cli.command('edit <id>', 'change its definition (only what is given)').option('--enabled', 'enable it').option('--disabled', 'disable it'))).action(
    async (id: string, flags: ConnFlags & DefinitionFlags & { enabled?: boolean }) => {
      const patch = definitionFrom(flags, false);
      if (flags.enabled) patch.is_enabled = true;
      if (Object.keys(patch).length === 0) throw new CliError('nothing to change: give at least one option (see --help)', USAGE);
      const s = await call(flags, 'PATCH', `/schedules/${idOf(id)}`, patch);
      out(`edited ${shown(s)}`);
      return 0;
    },
  );
  withConn(cli.command('history <id>', 'its fires, newest first').option('--limit <n>', 'how many (default 20, at most 500)').option('--json', 'print JSON')).action(
    async (id: string, flags: ConnFlags & { limit?: string; json?: boolean }) => {
      const limitText = text(flags.limit, ['--limit']) ?? '20';
      if (!/^\d+$/.test(limitText) || Number(limitText) < 1) throw new CliError('--limit must be a positive integer', USAGE);
      const fires = await call<any[]>(flags, 'GET', `/schedules/${idOf(id)}/fires?limit=${Math.min(Number(limitText), 500)}`);
      if (flags.json) {
        out(JSON.stringify(fires, null, 2));
        return 0;
      }
      if (fires.length === 0) {
        out('no fires yet');
        return 0;
      }
      const t = [['SCHEDULED FOR', 'FIRED AT', 'ACTION', 'STATUS', 'LATENCY', 'ERROR']];
      for (const f of fires) t.push([f.scheduled_for, f.fired_at, f.action, f.status, f.latency_ms === null ? '-' : `${f.latency_ms} ms`, f.error_code ? `${f.error_code}${f.error_message ? `: ${f.error_message}` : ''}` : '']);
      out(table(t));
      return 0;
    },
  );
  return run(cli, args);
}

// --- the group -------------------------------------------------------------------------------------

export function schedulerGroup(args: string[], name = 'svc scheduler'): Promise<number> {
  if (args[0] === 'schedules') return schedulesGroup(args.slice(1));
  const cli = program(name);
  withConn(
    cli
      .command('serve', "run the scheduler: fire svc's own schedules on time through the service (mutual TLS)")
      .option('--sync-seconds <s>', 'how often to look for changed schedules (SVC_SCHEDULER_SYNC_SECONDS, default 2)')
      .option('--info-port <port>', 'status endpoint port on SVC_SCHEDULER_INFO_HOST (SVC_SCHEDULER_INFO_PORT, default 7800; 0 off)'),
  ).action(serveCommand);
  cli.command('version', 'print the version').action(() => {
    out(VERSION);
    return 0;
  });
  withConn(cli.command('check', "check that the service's scheduler endpoint answers and accepts this certificate")).action(checkCommand);
  cli.command('status', 'scheduler instances running on this host and what they do').option('--instance-id <name>', 'only this instance').action(statusCommand);
  cli.command('info', "a running instance's figures").option('--json', 'print JSON').option('--instance-id <name>', 'this instance').action(infoCommand);
  withConn(cli.command('doctor', 'check settings, certificate, DNS, TCP, TLS and the endpoint, one line each')).action(doctorCommand);
  cli.command('restart', 'running instances reload certificates and settings and re-read every schedule').option('--instance-id <name>', 'only this instance').action(restartCommand);
  withConn(
    cli
      .command('import', `import schedules from another tool's format (${TOOLS.join(', ')})`)
      .option('--from <tool>', `the format: ${TOOLS.join(', ')}`)
      .option('--project <slug>', 'the project (required)')
      .option('--file <path>', 'read this file (default standard input)')
      .option('--engine <engine>', 'engine of the imported tasks (default celery for celery-beat; required for crontab)')
      .option('--replace', 'also delete schedules imported from this tool before that are not in the file')
      .option('--dry-run', 'show what would change, change nothing'),
  ).action(importCommand);
  withConn(
    cli
      .command('export', `export svc's scheduler's schedules (${TOOLS.join(', ')})`)
      .option('--to <tool>', `the format: ${TOOLS.join(', ')}`)
      .option('--project <slug>', 'only this project')
      .option('--file <path>', 'write this file (default standard output)'),
  ).action(exportCommand);
  cli.command('schedules [...subcommand]', 'add | list | trigger | disable | enable | edit | history');
  return run(cli, args);
}

// --- svc mint-scheduler-cert ---------------------------------------------------------------------------

export function registerMintSchedulerCert(cli: CAC): void {
  cli
    .command('mint-scheduler-cert', 'mint a client certificate for a scheduler instance (its name is the certificate common name)')
    .option('--name <name>', 'the instance name (required); add it to SVC_SCHEDULER_GRPC_ALLOWED_CNS')
    .option('--ca-cert <file>', 'CA certificate to sign with (default $SVC_HOME/scheduler-pki/ca.crt, created when missing)')
    .option('--ca-key <file>', 'its key (default $SVC_HOME/scheduler-pki/ca.key)')
    .option('--out-dir <dir>', 'where to write <name>.crt and <name>.key (default the current directory)')
    .option('--validity-days <n>', 'validity (default 365)')
    .action(async (opts: { name?: string; caCert?: string; caKey?: string; outDir?: string; validityDays?: string }) => {
      const name = text(opts.name, ['--name']);
      if (!name) throw new CliError('--name <name> is required', USAGE);
      const days = Number(text(opts.validityDays, ['--validity-days']) ?? '365');
      if (!(Number.isInteger(days) && days >= 1 && days <= 3650)) throw new CliError('--validity-days must be 1..3650', USAGE);
      let caCert = text(opts.caCert, ['--ca-cert']);
      let caKey = text(opts.caKey, ['--ca-key']);
      if ((caCert === undefined) !== (caKey === undefined)) throw new CliError('give both --ca-cert and --ca-key, or neither (the CA in $SVC_HOME/scheduler-pki)', USAGE);
      let createdCa = false;
      if (caCert === undefined) {
        const home = homePaths().home;
        const made = await ensureCa(pkiDir(home));
        caCert = made.certFile;
        caKey = made.keyFile;
        createdCa = made.created;
      }
      try {
        const ca = readCa(caCert, caKey!);
        const pair = await mintClientCert(name, { cert: ca.cert, key: ca.key }, days);
        const files = writePair(resolve(text(opts.outDir, ['--out-dir']) ?? '.'), name, pair);
        if (createdCa) out(`created the scheduler CA ${caCert} (its key ${caKey}, keep it private)`);
        out(`certificate: ${files.cert}`);
        out(`key: ${files.key}`);
        out(`common name: ${name} (valid ${days} days)`);
        out(`CA: ${caCert}`);
        out(`next: add ${JSON.stringify(name)} to SVC_SCHEDULER_GRPC_ALLOWED_CNS (JSON list or comma-separated) and restart svc; run the scheduler with --tls-cert ${files.cert} --tls-key ${files.key} --tls-ca ${caCert}`);
        return 0;
      } catch (e) {
        if (e instanceof PkiError) throw new CliError(e.message, 1);
        throw e;
      }
    });
}
