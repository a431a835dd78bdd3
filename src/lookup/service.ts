// What the Ctrl-K palette looks up across every project the caller sees: tasks by their id (exactly,
// and from MIN_ID_PREFIX characters on by its start: the task list's own id lookup), agents and
// workers by a part of their name. Each project costs a few index probes, so a user of many projects
// finds any of them; the palette reading each project's lists itself could afford five projects.
import { Type, type Static } from '@sinclair/typebox';
import { and, asc, inArray, isNull, sql } from 'drizzle-orm';
import { storedText } from '../db/bulk.ts';
import type { Executor } from '../db/connect.ts';
import { Answer, Nullable } from '../http/schemas.ts';
import { tasksWithId } from '../tasks/explorer-store.ts';
import { MIN_ID_PREFIX } from '../tasks/search.ts';

export const LookupItem = Answer(
  {
    kind: Type.Union([Type.Literal('task'), Type.Literal('agent'), Type.Literal('worker')]),
    project_slug: Type.String(),
    project_name: Type.String(),
    id: Type.String({ description: 'the row id (an agent or worker page is addressed by it)' }),
    name: Nullable(Type.String()),
    state: Nullable(Type.String()),
    engine: Nullable(Type.String({ description: 'tasks and workers' })),
    task_id: Nullable(Type.String({ description: "tasks: the engine's task id (a task page is addressed by engine and task id)" })),
  },
  'LookupItem',
);
export type LookupItem = Static<typeof LookupItem>;

export const LookupAnswer = Answer(
  {
    items: Type.Array(LookupItem, { description: 'tasks whose id is the text first, then those whose id starts with it, agents, workers' }),
    projects: Type.Integer({ description: 'how many projects were searched: every one the caller sees' }),
  },
  'LookupAnswer',
);
export type LookupAnswer = Static<typeof LookupAnswer>;

export interface Searchable {
  id: string;
  slug: string;
  name: string;
}

/** Tasks of each project, and agents and workers of all of them together. */
const TASKS_EACH = 5;
const NAMED = 20;

/** A LIKE pattern matching names that hold `text` (case folded; % and _ match themselves). */
const holding = (text: string): string => `%${storedText(text).toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function lookup(ex: Executor, projects: Searchable[], text: string): Promise<LookupAnswer> {
  const q = text.trim();
  const items: LookupItem[] = [];
  if (projects.length === 0 || q === '') return { items, projects: projects.length };
  const byId = new Map(projects.map((p) => [p.id, p]));
  const where = (p: Searchable) => ({ project_slug: p.slug, project_name: p.name });
  // A task id has no spaces.
  if (!/\s/.test(q)) {
    const found = await Promise.all(projects.map(async (p) => ({ p, rows: await tasksWithId(ex, p.id, {}, q, q.length >= MIN_ID_PREFIX, TASKS_EACH) })));
    const tasks = found.flatMap(({ p, rows }) =>
      rows.map((t) => ({ kind: 'task' as const, ...where(p), id: t.id, name: t.name, state: t.state, engine: t.engine, task_id: t.task_id })),
    );
    items.push(...tasks.filter((t) => t.task_id === q), ...tasks.filter((t) => t.task_id !== q));
  }
  const ids = [...byId.keys()];
  const pattern = holding(q);
  const a = ex.t.agents;
  const agents = await ex.q
    .select({ id: a.id, project_id: a.project_id, name: a.name, state: a.state })
    .from(a)
    .where(and(inArray(a.project_id, ids), isNull(a.revoked_at), sql`lower(${a.name}) LIKE ${pattern} ESCAPE '\\'`))
    .orderBy(asc(a.name))
    .limit(NAMED);
  for (const r of agents) items.push({ kind: 'agent', ...where(byId.get(r.project_id)!), id: r.id, name: r.name, state: r.state, engine: null, task_id: null });
  const w = ex.t.workers;
  const workers = await ex.q
    .select({ id: w.id, project_id: w.project_id, name: w.name, state: w.state, engine: w.engine })
    .from(w)
    .where(and(inArray(w.project_id, ids), sql`lower(${w.name}) LIKE ${pattern} ESCAPE '\\'`))
    .orderBy(asc(w.name))
    .limit(NAMED);
  for (const r of workers) items.push({ kind: 'worker', ...where(byId.get(r.project_id)!), id: r.id, name: r.name, state: r.state, engine: r.engine, task_id: null });
  return { items, projects: projects.length };
}
