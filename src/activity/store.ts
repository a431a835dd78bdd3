// The activity feed's query: audit rows newest first by (occurred_at, id),
// scoped to projects, with keyset cursors.
import { and, desc, asc, eq, gt, inArray, isNotNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../db/connect.ts';

export interface Cursor {
  occurred_at: string;
  id: string;
}

export interface FeedQuery {
  limit: number;
  since?: Cursor;
  before?: Cursor;
  /** null: every row (administrators); a list: only rows of these projects. */
  projectIds: string[] | null;
  actionPrefix?: string;
}

export async function feedRows(ex: Executor, q: FeedQuery) {
  const a = ex.t.auditLog;
  const p = ex.t.projects;
  const conds: (SQL | undefined)[] = [];
  if (q.projectIds) conds.push(q.projectIds.length > 0 ? and(isNotNull(a.project_id), inArray(a.project_id, q.projectIds)) : sql`1 = 0`);
  if (q.actionPrefix) {
    // A literal prefix (no LIKE, so % and _ match themselves); the >= bound lets the index start there.
    conds.push(sql`${a.action} >= ${q.actionPrefix}`, sql`substr(${a.action}, 1, ${q.actionPrefix.length}) = ${q.actionPrefix}`);
  }
  const after = (c: Cursor) => or(gt(a.occurred_at, c.occurred_at), and(eq(a.occurred_at, c.occurred_at), gt(a.id, c.id)));
  const beforeC = (c: Cursor) => or(lt(a.occurred_at, c.occurred_at), and(eq(a.occurred_at, c.occurred_at), lt(a.id, c.id)));
  if (q.since) conds.push(after(q.since));
  if (q.before) conds.push(beforeC(q.before));
  // Polling forward takes the oldest new rows first, so nothing is skipped
  // when more than a page arrived; the page is then shown newest first.
  const forward = q.since !== undefined && q.before === undefined;
  const rows = await ex.q
    .select({
      id: a.id,
      project_id: a.project_id,
      project_slug: p.slug,
      user_id: a.user_id,
      action: a.action,
      target_type: a.target_type,
      target_id: a.target_id,
      result: a.result,
      outcome: a.outcome,
      metadata: a.metadata,
      source_ip: a.source_ip,
      occurred_at: a.occurred_at,
    })
    .from(a)
    .leftJoin(p, eq(p.id, a.project_id))
    .where(and(...conds))
    .orderBy(...(forward ? [asc(a.occurred_at), asc(a.id)] : [desc(a.occurred_at), desc(a.id)]))
    .limit(q.limit);
  return forward ? rows.reverse() : rows;
}
