// The audit rows of refused single sign-on attempts. Anyone can cause a refusal (a forged callback
// costs one request), so each address gets at most REFUSAL_ROWS_PER_WINDOW `auth.sso.refused` rows in
// a ten-minute window; the refusals past them, throttled ones included, are counted and written as
// one `auth.sso.refused_suppressed` row for the address and window. Every refusal is in the audit
// log, and one address adds at most 31 rows to it every ten minutes.
import { isoMicros, nowMs } from '../../lib/clock.ts';
import { logger } from '../../lib/log.ts';
import type { AppContext } from '../../server/context.ts';

const log = logger('sso');

export const REFUSAL_ROWS_PER_WINDOW = 30;
export const REFUSAL_WINDOW_MS = 600_000;
/** Addresses with an open window at most; past it the oldest window is closed early (its summary written). */
const MAX_ADDRESSES = 10_000;

interface Window {
  start: number;
  rows: number;
  suppressed: number;
  byReason: Record<string, number>;
}

export interface SuppressedSummary {
  ip: string;
  start: number;
  end: number;
  count: number;
  byReason: Record<string, number>;
}

/** Fixed per-address windows: whether a refusal gets a row of its own, and the summaries of the
 * windows that closed with refusals left out. */
export class RefusalLedger {
  /** In order of window start (a new window is re-inserted), so ended windows come first. */
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly rowsPerWindow = REFUSAL_ROWS_PER_WINDOW,
    private readonly windowMs = REFUSAL_WINDOW_MS,
    private readonly maxAddresses = MAX_ADDRESSES,
  ) {}

  /** Counts a refusal from `ip` at `now`, after closing the windows that ended (this address's
   * among them, so its new refusals open a new window). `leftOut` is 0 when the refusal gets its own
   * row, else how many its window has left out so far. */
  record(ip: string, reason: string, now: number): { leftOut: number; closed: SuppressedSummary[] } {
    const closed = this.close(now);
    let w = this.windows.get(ip);
    if (!w) this.windows.set(ip, (w = { start: now, rows: 0, suppressed: 0, byReason: {} }));
    if (w.rows < this.rowsPerWindow) {
      w.rows++;
      return { leftOut: 0, closed };
    }
    w.byReason[reason] = (w.byReason[reason] ?? 0) + 1;
    return { leftOut: ++w.suppressed, closed };
  }

  /** Closes the windows ended by `now` (and the oldest past the address limit; every window with
   * `all`), answering the summaries of those with refusals left out. */
  close(now: number, all = false): SuppressedSummary[] {
    const out: SuppressedSummary[] = [];
    for (const [ip, w] of this.windows) {
      const ended = now >= w.start + this.windowMs;
      if (!ended && !all && this.windows.size <= this.maxAddresses) break;
      this.windows.delete(ip);
      if (w.suppressed > 0) out.push({ ip, start: w.start, end: ended ? w.start + this.windowMs : now, count: w.suppressed, byReason: w.byReason });
    }
    return out;
  }

  /** When the oldest open window ends (null when none is open). */
  nextEnd(): number | null {
    const first = this.windows.values().next().value;
    return first ? first.start + this.windowMs : null;
  }
}

/** One service's ledger, with a timer that closes windows when they end (not only at the next
 * refusal) and a shutdown hook that summarises the open ones before the database closes. */
class RefusalAudit {
  readonly ledger = new RefusalLedger();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  constructor(private readonly ctx: AppContext) {
    ctx.lifecycle.onShutdown('sso-refusal-audit', async () => {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      await this.write(this.ledger.close(nowMs(), true));
    });
  }

  /** Arms the timer for the oldest open window's end (a second at least: tests may run a clock of their own). */
  arm(): void {
    const end = this.ledger.nextEnd();
    if (this.timer || this.stopped || end === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.write(this.ledger.close(nowMs()))
          .catch((e: Error) => log.error({ err: e.message }, 'could not write the summary of suppressed single sign-on refusals'))
          .finally(() => this.arm());
      },
      Math.max(1000, end - nowMs()),
    );
    this.timer.unref();
  }

  async write(summaries: SuppressedSummary[]): Promise<void> {
    for (const s of summaries) {
      await this.ctx.audit.record(this.ctx.db, {
        action: 'auth.sso.refused_suppressed',
        result: 'denied',
        source_ip: s.ip === 'unknown' ? null : s.ip,
        metadata: { count: s.count, by_reason: s.byReason, window_start: isoMicros(s.start * 1000), window_end: isoMicros(s.end * 1000) },
      });
    }
  }
}

const audits = new WeakMap<AppContext, RefusalAudit>();
export function refusalAudit(ctx: AppContext): RefusalAudit {
  let a = audits.get(ctx);
  if (!a) audits.set(ctx, (a = new RefusalAudit(ctx)));
  return a;
}
