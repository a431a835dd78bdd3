// One stretch of the active chain, checked on its own: every row's MAC and
// signed actor, and every row's link to the row before it inside the stretch.
// A row's MAC depends only on the row and its stored predecessor MAC, so
// stretches can be checked apart (in worker threads: verify-worker.ts) and
// stitched back together by verify.ts, which checks the link into each
// stretch's first row.
import type { Executor } from '../db/connect.ts';
import { rowProblem } from './chain.ts';
import { names, type KnownHead } from './envelope.ts';
import type { Keyring } from './keyring.ts';
import { chainRows, type RowKey } from './store.ts';

export interface RangeRequest {
  generation: string;
  /** Rows after this key (from the start when null) ... */
  after: RowKey | null;
  /** ... up to and including this one (to the end when null). */
  through: RowKey | null;
  /** Notes whether a row of the stretch is the known head (VERIFIED_ANCESTOR). */
  knownHead: KnownHead | null;
  /** Findings kept at most; the caller keeps fewer still. */
  maxFindings: number;
  pageSize?: number;
}

export interface Finding {
  message: string;
  rowId: string;
}

export interface RangeReport {
  count: number;
  perKey: Record<string, number>;
  findings: Finding[];
  first: { id: string; occurred_at: string; prev_row_hmac: string | null } | null;
  last: { id: string; occurred_at: string; row_hmac: string; hmac_key_id: string } | null;
  ancestor: boolean;
}

const PAGE = 5000;

export async function verifyRange(ex: Executor, keyring: Keyring, req: RangeRequest, afterPage?: (rowsSoFar: number) => Promise<void> | void): Promise<RangeReport> {
  const pageSize = req.pageSize ?? PAGE;
  const report: RangeReport = { count: 0, perKey: {}, findings: [], first: null, last: null, ancestor: false };
  const find = (rowId: string, occurredAt: string, problem: string) => {
    if (report.findings.length < req.maxFindings) report.findings.push({ message: `row ${rowId} (${occurredAt}): ${problem}`, rowId });
  };
  const perKey = new Map<string, number>();
  let after = req.after;
  let prev: string | null | undefined;
  for (;;) {
    const page = await chainRows(ex, req.generation, after, req.through, pageSize);
    for (const row of page) {
      report.count++;
      perKey.set(row.hmac_key_id, (perKey.get(row.hmac_key_id) ?? 0) + 1);
      const problem = rowProblem(row, keyring);
      if (problem) find(row.id, row.occurred_at, problem);
      if (prev === undefined) report.first = { id: row.id, occurred_at: row.occurred_at, prev_row_hmac: row.prev_row_hmac };
      else if (row.prev_row_hmac !== prev) find(row.id, row.occurred_at, LINK_BROKEN);
      if (req.knownHead && names(req.knownHead, row, req.generation)) report.ancestor = true;
      prev = row.row_hmac;
    }
    const last = page[page.length - 1];
    if (last) {
      report.last = { id: last.id, occurred_at: last.occurred_at, row_hmac: last.row_hmac, hmac_key_id: last.hmac_key_id };
      after = last;
    }
    await afterPage?.(report.count);
    if (page.length < pageSize) return { ...report, perKey: Object.fromEntries(perKey) };
  }
}

export const LINK_BROKEN = 'does not follow the row before it (a row was removed, inserted or reordered)';
