// Every table, by dialect. Each area defines its tables in its own
// `tables.ts`; this registry hands stores the right variant through
// `Executor.t`.
import type { Dialect } from './define.ts';
import * as agents from '../agents/tables.ts';
import * as audit from '../audit/tables.ts';
import * as auth from '../auth/tables.ts';
import * as commands from '../commands/tables.ts';
import * as ingest from '../ingest/tables.ts';
import * as notifications from '../notifications/tables.ts';
import * as platform from '../platform/tables.ts';
import * as projects from '../projects/tables.ts';
import * as setup from '../setup/tables.ts';
import * as tasks from '../tasks/tables.ts';
import * as users from '../users/tables.ts';

const dual = {
  ...platform,
  ...audit,
  ...users,
  ...auth,
  ...setup,
  ...projects,
  ...agents,
  ...ingest,
  ...tasks,
  ...commands,
  ...notifications,
};

export type Tables = { [K in keyof typeof dual]: (typeof dual)[K]['sqlite'] };

const cache = new Map<Dialect, Tables>();

export function tablesFor(dialect: Dialect): Tables {
  let tables = cache.get(dialect);
  if (!tables) {
    tables = Object.fromEntries(Object.entries(dual).map(([k, v]) => [k, v[dialect === 'sqlite' ? 'sqlite' : 'pg']])) as Tables;
    cache.set(dialect, tables);
  }
  return tables;
}
