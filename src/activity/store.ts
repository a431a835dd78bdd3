// The activity feed's query: audit rows newest first by (occurred_at, id),
// scoped to projects, with keyset cursors.
import { and, asc, desc, eq, inArray, isNotNull, sql, type SQL } from 'drizzle-orm';
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

/** The smallest string greater than every string starting with `prefix`
 * (its last character bumped by one code point); null if there is none. */
export function successor(prefix: string): string | null {
  const chars = [...prefix];
  while (chars.length > 0) {
    const last = chars.pop()!.codePointAt(0)!;
    let next = last + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) return chars.join('') + String.fromCodePoint(next);
  }
  return null;
}

/** The distinct actions in [lower, upper), found by one index seek each (a
 * "loose index scan" that works the same on both engines). */
async function actionsInRange(ex: Executor, lower: string, upper: string, max: number): Promise<string[]> {
  const rows = await ex.all<{ v: string | null }>(sql`
    WITH RECURSIVE acts(v) AS (
      SELECT (SELECT MIN(action) FROM audit_log WHERE action >= ${lower})
      UNION ALL
      SELECT (SELECT MIN(action) FROM audit_log WHERE action > acts.v) FROM acts WHERE acts.v IS NOT NULL AND acts.v < ${upper}
    )
    SELECT v FROM acts WHERE v IS NOT NULL AND v < ${upper} LIMIT ${max + 1}`);
  return rows.map((r) => r.v!);
}

/** Past this many distinct matching actions, one range query is cheaper. */
const MAX_SEPARATE_ACTIONS = 64;

export async function feedRows(ex: Executor, q: FeedQuery) {
  const a = ex.t.auditLog;
  const p = ex.t.projects;
  const base: (SQL | undefined)[] = [];
  if (q.projectIds) base.push(q.projectIds.length > 0 ? and(isNotNull(a.project_id), inArray(a.project_id, q.projectIds)) : sql`1 = 0`);
  // Row-value comparisons, so both engines walk the (occurred_at, id) index.
  if (q.since) base.push(sql`(${a.occurred_at}, ${a.id}) > (${q.since.occurred_at}, ${q.since.id})`);
  if (q.before) base.push(sql`(${a.occurred_at}, ${a.id}) < (${q.before.occurred_at}, ${q.before.id})`);
  // Polling forward takes the oldest new rows first, so nothing is skipped
  // when more than a page arrived; the page is then shown newest first.
  const forward = q.since !== undefined && q.before === undefined;
  const page = (extra: (SQL | undefined)[]) =>
    ex.q
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
      .where(and(...base, ...extra))
      .orderBy(...(forward ? [asc(a.occurred_at), asc(a.id)] : [desc(a.occurred_at), desc(a.id)]))
      .limit(q.limit);

  let rows: Awaited<ReturnType<typeof page>>;
  const upper = q.actionPrefix ? successor(q.actionPrefix) : null;
  if (!q.actionPrefix) {
    rows = await page([]);
  } else {
    // A literal prefix (no LIKE, so % and _ match themselves) is the range
    // [prefix, successor). Newest-first over a range of actions cannot use
    // one index, so each matching action gets its own (action, occurred_at,
    // id) index walk and the pages are merged.
    const actions = upper === null ? null : await actionsInRange(ex, q.actionPrefix, upper, MAX_SEPARATE_ACTIONS);
    if (actions === null || actions.length > MAX_SEPARATE_ACTIONS) {
      rows = await page([
        sql`${a.action} >= ${q.actionPrefix}`,
        upper === null ? sql`substr(${a.action}, 1, ${q.actionPrefix.length}) = ${q.actionPrefix}` : sql`${a.action} < ${upper}`,
      ]);
    } else {
      const key = (r: { occurred_at: string; id: string }) => `${r.occurred_at}|${r.id}`;
      const merged = (await Promise.all(actions.map((action) => page([eq(a.action, action)])))).flat();
      merged.sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0) * (forward ? 1 : -1));
      rows = merged.slice(0, q.limit);
    }
  }
  return forward ? rows.reverse() : rows;
}
