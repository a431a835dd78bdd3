// GET /api/v1/activity: recent audit rows. Administrators see every row,
// service-wide ones included; everyone else sees only rows of the projects
// they are members of (none without memberships), and never source_ip.
import { Type, type Static } from '@sinclair/typebox';
import { AnyObject, Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import type { Principal } from '../auth/principal.ts';
import { validationFailed } from '../http/errors.ts';
import { findProjectBySlug, memberProjectIds } from '../projects/service.ts';
import { feedRows, type Cursor } from './store.ts';

const CURSOR_RE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function parseCursor(text: string | undefined, name: string): Cursor | undefined {
  if (text === undefined || text === '') return undefined;
  const m = CURSOR_RE.exec(text);
  if (!m) throw validationFailed([{ path: `/${name}`, message: 'must be <occurred_at>|<id> as returned by this endpoint' }]);
  return { occurred_at: m[1]!, id: m[2]! };
}

const cursorOf = (r: { occurred_at: string; id: string }) => `${r.occurred_at}|${r.id}`;

export interface FeedParams {
  limit?: number;
  since_cursor?: string;
  before_cursor?: string;
  project_slug?: string;
  action_prefix?: string;
}

export const ActivityItem = Answer(
  {
    id: Uuid,
    project_id: Nullable(Uuid),
    project_slug: Nullable(Type.String()),
    user_id: Nullable(Type.String()),
    action: Type.String(),
    target_type: Nullable(Type.String()),
    target_id: Nullable(Type.String()),
    result: Type.String(),
    outcome: Type.String(),
    metadata: AnyObject,
    source_ip: Nullable(Type.String()),
    occurred_at: Timestamp,
  },
  'ActivityItem',
);
export const ActivityPage = Answer(
  { items: Type.Array(ActivityItem), next_before_cursor: Nullable(Type.String()), newest_cursor: Nullable(Type.String()) },
  'ActivityPage',
);

export async function activityFeed(ctx: AppContext, who: Principal, params: FeedParams): Promise<Static<typeof ActivityPage>> {
  const since = parseCursor(params.since_cursor, 'since_cursor');
  const before = parseCursor(params.before_cursor, 'before_cursor');
  const limit = params.limit ?? 50;
  let projectIds: string[] | null = who.user.is_admin ? null : await memberProjectIds(ctx.db, who.user.id);
  if (params.project_slug !== undefined) {
    const project = await findProjectBySlug(ctx.db, params.project_slug);
    // Unknown or not accessible: an empty list, never a 403 that confirms the project exists.
    projectIds = project && (projectIds === null || projectIds.includes(project.id)) ? [project.id] : [];
  }
  const rows = await feedRows(ctx.db, { limit, since, before, projectIds, actionPrefix: params.action_prefix });
  const items = rows.map((row) => ({ ...row, source_ip: who.user.is_admin ? row.source_ip : null }));
  return {
    items,
    next_before_cursor: items.length === limit ? cursorOf(items[items.length - 1]!) : null,
    newest_cursor: items.length > 0 ? cursorOf(items[0]!) : (params.since_cursor || null),
  };
}
