// The saved_views table (migration 0016). Stores reach it through viewsTable(ex),
// which picks the dialect's variant.
import type { Executor } from '../db/connect.ts';
import { col, defineTable } from '../db/define.ts';

/** A user's named query of one dashboard page in one project; unique per (user, project, page, name). */
export const savedViews = defineTable('saved_views', {
  id: col.text('id').primaryKey(),
  user_id: col.text('user_id').notNull(),
  project_id: col.text('project_id').notNull(),
  /** The dashboard page the query belongs to (SAVED_VIEW_PAGES). */
  page: col.text('page').notNull(),
  name: col.text('name').notNull(),
  /** The page's query string, without the leading `?`. */
  query: col.text('query').notNull(),
  created_at: col.ts('created_at').notNull(),
  updated_at: col.ts('updated_at').notNull(),
});

export type SavedViewRow = typeof savedViews.sqlite.$inferSelect;

export const viewsTable = (ex: Executor) => (ex.dialect === 'sqlite' ? savedViews.sqlite : savedViews.pg);
