// The audit module's face to the other areas: `append` one row inside the
// caller's transaction. Forwarding to an external receiver happens only
// after the transaction commits and never delays it.
import type { Db, Tx } from '../db/connect.ts';
import type { AuditRow } from './canonical.ts';
import { appendRows, writableState, type AuditEntry } from './chain.ts';
import { Keyring } from './keyring.ts';

export interface RowSink {
  /** Takes a committed row; must return at once (best-effort, never throws). */
  enqueue(row: AuditRow): void;
  /** How the sink is doing (deep health). */
  status(): SinkStatus;
}

export interface SinkStatus {
  queued: number;
  capacity: number;
  /** Rows dropped since start, whatever the reason. */
  dropped: number;
  stopped: boolean;
}

export class AuditService {
  private sink: RowSink | null = null;
  /** Told of every committed row (ctx.reactions.auditAppended: the live stream's activity notices). */
  private readonly observers: ((row: AuditRow) => void)[] = [];

  constructor(readonly keyring: Keyring) {}

  static fromConfig(config: { SVC_AUDIT_CHAIN_SECRET: string; SVC_AUDIT_CHAIN_PREVIOUS_SECRETS: string[] }): AuditService {
    return new AuditService(new Keyring(config.SVC_AUDIT_CHAIN_SECRET, config.SVC_AUDIT_CHAIN_PREVIOUS_SECRETS));
  }

  /** Where committed rows are mirrored (the webhook forwarder). */
  /** The forwarder's status, or null when none is configured. */
  sinkStatus(): SinkStatus | null {
    return this.sink?.status() ?? null;
  }

  setSink(sink: RowSink | null): void {
    this.sink = sink;
  }

  async append(tx: Tx, entry: AuditEntry): Promise<AuditRow> {
    const [row] = await appendRows(tx, this.keyring, [entry]);
    const sink = this.sink;
    if (sink) tx.afterCommit(() => sink.enqueue(row!));
    for (const observe of this.observers) tx.afterCommit(() => observe(row!));
    return row!;
  }

  /** Calls `fn` after each appended row commits (it must return at once and not throw). */
  observe(fn: (row: AuditRow) => void): void {
    this.observers.push(fn);
  }

  /** Fails (AuditChainError) when appends would be refused: run at start-up
   * so a changed key or a tampered state stops the service, not each action. */
  async assertWritable(db: Db): Promise<void> {
    await writableState(db, this.keyring);
  }

  /** Records a row on its own (for events that change nothing else). */
  record(db: Db, entry: AuditEntry): Promise<AuditRow> {
    return db.tx((tx) => this.append(tx, entry));
  }
}

export type { AuditEntry };
