// One table definition, two dialects. Areas describe each table once with the
// column helpers below; `defineTable` builds the drizzle table for SQLite and
// for PostgreSQL from that one description. Queries are typed against the
// SQLite variant and run unchanged on either (see db/connect.ts). Indexes,
// foreign keys, triggers and collations live in the SQL migrations, which are
// the source of truth for the physical schema.
import * as p from 'drizzle-orm/pg-core';
import * as s from 'drizzle-orm/sqlite-core';

/** The two databases svc runs on. */
export type Dialect = 'sqlite' | 'postgres';

const PG = Symbol('pg-builder');
const SQLITE = Symbol('sqlite-builder');
const FORWARDED = new Set(['notNull', 'primaryKey', 'default', '$type', '$defaultFn']);

/** Wraps the SQLite builder so every modifier called on it (notNull,
 * primaryKey, ...) is applied to the PostgreSQL builder as well. Drizzle
 * builders mutate themselves and return `this`, so both stay in step. */
function both<T extends object>(sqlite: T, pg: object): T {
  const proxy: T = new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === PG) return pg;
      if (prop === SQLITE) return target;
      const value = Reflect.get(target, prop, receiver);
      if (typeof prop === 'string' && FORWARDED.has(prop) && typeof value === 'function') {
        return (...args: unknown[]) => {
          (value as (...a: unknown[]) => unknown).apply(target, args);
          (pg as Record<string, (...a: unknown[]) => unknown>)[prop]!(...args);
          return proxy;
        };
      }
      return value;
    },
  });
  return proxy;
}

export const col = {
  text: (name: string) => both(s.text(name), p.text(name)),
  int: (name: string) => both(s.integer(name, { mode: 'number' }), p.integer(name)),
  bigint: (name: string) => both(s.integer(name, { mode: 'number' }), p.bigint(name, { mode: 'number' })),
  bool: (name: string) => both(s.integer(name, { mode: 'boolean' }), p.boolean(name)),
  real: (name: string) => both(s.real(name), p.doublePrecision(name)),
  /** ISO 8601 UTC text with microseconds (lib/clock.ts isoMicros). */
  ts: (name: string) => both(s.text(name), p.text(name)),
  json: <T>(name: string) => both(s.text(name, { mode: 'json' }).$type<T>(), p.jsonb(name).$type<T>()),
};

export interface DualTable<T> {
  sqlite: T;
  pg: T;
}

export function defineTable<C extends Record<string, s.SQLiteColumnBuilderBase>>(name: string, columns: C) {
  const sqliteCols: Record<string, unknown> = {};
  const pgCols: Record<string, unknown> = {};
  for (const [key, builder] of Object.entries(columns)) {
    sqliteCols[key] = (builder as unknown as Record<symbol, unknown>)[SQLITE];
    pgCols[key] = (builder as unknown as Record<symbol, unknown>)[PG];
  }
  const sqlite = s.sqliteTable(name, sqliteCols as C);
  // Typed as the SQLite table: the query builder surface used by the stores
  // is the same on both dialects, and connect.ts picks the right object.
  const pg = p.pgTable(name, pgCols as Record<string, p.PgColumnBuilderBase>) as unknown as typeof sqlite;
  return { sqlite, pg } satisfies DualTable<typeof sqlite>;
}
