// Mirrors each committed audit row to SVC_AUDIT_WEBHOOK_URL: one signed POST
// per row, best effort. The primary write never waits: rows go into a bounded
// in-memory queue drained by one loop; a full queue, a blocked destination or
// a failed POST drops the row and counts it. Nothing is retried and unsent
// rows do not survive a restart: receivers that need completeness check the
// chain (svc audit verify), not the mirror.
import { checkDestination } from '../outbound/destination.ts';
import { guardedFetch, type GuardedInit } from '../outbound/client.ts';
import type { Config } from '../config/load.ts';
import { hmacHex } from '../lib/crypto.ts';
import { logger } from '../lib/log.ts';
import { sortedJson } from '../lib/sorted-json.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { AuditRow } from './canonical.ts';
import type { RowSink, SinkStatus } from './service.ts';

const log = logger('audit_forwarder');
const MODULE = 'audit_forwarder';
const PREFLIGHT_REASONS = new Set(['invalid_url', 'scheme', 'userinfo', 'hostname', 'dns', 'blocked_address']);

/** The row as the receiver sees it: sixteen fields, keys sorted. */
export function forwardedBody(row: AuditRow): string {
  return sortedJson({
    action: row.action,
    api_key_id: row.api_key_id,
    event_id: row.event_id,
    id: row.id,
    metadata: row.metadata,
    occurred_at: row.occurred_at,
    outcome: row.outcome,
    prev_row_hmac: row.prev_row_hmac,
    project_id: row.project_id,
    result: row.result,
    row_hmac: row.row_hmac,
    source_ip: row.source_ip,
    target_id: row.target_id,
    target_type: row.target_type,
    user_agent: row.user_agent,
    user_id: row.user_id,
  });
}

/** `X-SVC-Audit-Signature` value: HMAC-SHA256 over `<timestamp>.<body>`. */
export const auditSignature = (secret: string, timestamp: number, body: string): string =>
  `sha256=${hmacHex(secret, `${timestamp}.${body}`)}`;

export interface ForwarderOptions {
  url: string;
  secret: string;
  timeoutMs: number;
  capacity: number;
  allowHttp: boolean;
  /** Outbound client options for tests and private CAs (trust, DNS stand-in). */
  client?: Pick<GuardedInit, 'ca' | 'resolver'>;
}

export class AuditForwarder implements RowSink {
  private readonly queue: AuditRow[] = [];
  private drops = 0;
  private wake: (() => void) | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly options: ForwarderOptions,
    private readonly metrics: Metrics,
  ) {}

  static fromConfig(config: Config, metrics: Metrics, client?: ForwarderOptions['client']): AuditForwarder | null {
    if (config.SVC_AUDIT_WEBHOOK_URL === '') return null;
    return new AuditForwarder(
      {
        url: config.SVC_AUDIT_WEBHOOK_URL,
        secret: config.SVC_AUDIT_WEBHOOK_HMAC_SECRET,
        timeoutMs: config.SVC_AUDIT_WEBHOOK_TIMEOUT_SECONDS * 1000,
        capacity: config.SVC_AUDIT_WEBHOOK_BUFFER_SIZE,
        allowHttp: config.SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP,
        ...(client ? { client } : {}),
      },
      metrics,
    );
  }

  /** Checks the destination once (a failure is a warning: rows are then
   * dropped at dispatch) and starts the drain loop. */
  async start(): Promise<void> {
    this.metrics.swallowedSites(MODULE, ['queue_full', 'ssrf_or_dns', 'send_one', 'shutdown_lost']);
    const check = await checkDestination(this.options.url, { allowHttp: this.options.allowHttp, resolver: this.options.client?.resolver });
    if (check.ok) log.info({ buffer: this.options.capacity }, 'audit forwarder started');
    else log.warn({ reason: check.reason, detail: check.message }, 'audit webhook URL fails the outbound policy; every row will be dropped');
    this.loop = this.drain();
  }

  enqueue(row: AuditRow): boolean {
    if (this.stopped || this.queue.length >= this.options.capacity) {
      this.drop('queue_full');
      return false;
    }
    this.queue.push(row);
    this.wake?.();
    return true;
  }

  status(): SinkStatus {
    return { queued: this.queue.length, capacity: this.options.capacity, dropped: this.drops, stopped: this.stopped };
  }

  private drop(site: string): void {
    this.metrics.swallowed(MODULE, site);
    this.drops++;
    if (site === 'queue_full' && this.drops % 100 === 1) log.warn({ dropped_total: this.drops }, 'audit forwarder queue full; dropping rows');
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const row = this.queue.shift();
      if (!row) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      await this.send(row);
    }
  }

  private async send(row: AuditRow): Promise<void> {
    const body = forwardedBody(row);
    const timestamp = Math.floor(Date.now() / 1000);
    const result = await guardedFetch(this.options.url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'svc-audit-forwarder',
        'x-svc-audit-signature': auditSignature(this.options.secret, timestamp, body),
        'x-svc-audit-timestamp': String(timestamp),
        'x-svc-audit-schema': '1',
      },
      timeoutMs: this.options.timeoutMs,
      allowHttp: this.options.allowHttp,
      ...this.options.client,
    });
    if (result.ok && result.status >= 200 && result.status < 300) return;
    const site = !result.ok && PREFLIGHT_REASONS.has(result.reason) ? 'ssrf_or_dns' : 'send_one';
    this.drop(site);
    log.debug({ site, status: result.ok ? result.status : undefined, reason: result.ok ? undefined : result.reason }, 'audit row not forwarded');
  }

  /** Stops after the row in flight; rows still queued are counted as lost. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    for (const _ of this.queue.splice(0)) this.drop('shutdown_lost');
  }

  /** Rows waiting (tests and the deep health check). */
  get pending(): number {
    return this.queue.length;
  }
}
