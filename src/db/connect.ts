// Opens the configured database and hands out one interface for both
// dialects: `q` (a drizzle instance typed as SQLite, whose query-builder
// surface is shared with PostgreSQL), `t` (the tables for this dialect),
// `tx()` for write transactions and `all()/run()` for raw SQL.
//
// SQLite: one writer connection used only inside tx() behind an in-process
// lock (bun:sqlite calls are synchronous, so interleaved async flows would
// otherwise join each other's transactions) and opened with BEGIN IMMEDIATE so
// other processes queue on the busy timeout; plus one query-only reader
// connection for everything outside a transaction, which sees committed data
// only. PostgreSQL: a postgres-js pool; tx() is a pooled transaction.
import { AsyncLocalStorage } from 'node:async_hooks';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Database } from 'bun:sqlite';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzleSqlite, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite';
import { drizzle as drizzlePg } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { Mutex } from '../lib/mutex.ts';
import { tablesFor, type Tables } from './schema.ts';
import { logger } from '../lib/log.ts';
import { workerEntry } from '../lib/workers.ts';
import type { CheckpointerNote, CheckpointerOrder, CheckpointerStart } from './checkpointer.ts';
import type { DatabaseTarget } from './url.ts';
import type { Dialect } from './define.ts';

const log = logger('db');

export type { Dialect };
export type Q = BunSQLiteDatabase;

/** What stores run queries on: the database itself or an open transaction. */
export interface Executor {
  readonly dialect: Dialect;
  readonly q: Q;
  readonly t: Tables;
  all<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
  run(query: SQL): Promise<void>;
  /** A fixed statement with `?` placeholders (no literal question marks in
   * the text) and its parameters. For the hottest paths: SQLite runs it as a
   * cached prepared statement without building a drizzle SQL object. */
  query<T = Record<string, unknown>>(text: string, params: unknown[]): Promise<T[]>;
}

export interface Tx extends Executor {
  /** Runs after the transaction commits (never on rollback). */
  afterCommit(fn: () => void): void;
}

/** Where SQLite's WAL checkpoints run: the worker thread, inline after commits
 * (a process without the thread), inline because the thread failed, or
 * nowhere (PostgreSQL). */
export type CheckpointMode = 'thread' | 'inline' | 'fallback' | 'none';

export interface Db extends Executor {
  readonly target: DatabaseTarget;
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  checkpoints(): CheckpointMode;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** SQLite: create the file when missing (false for read-only CLI commands). */
  create?: boolean;
  busyTimeoutMs?: number;
  poolSize?: number;
  connectTimeoutSeconds?: number;
  /** SQLite, for `svc serve`: WAL checkpoints run in a worker thread instead of
   * inline after commits (src/db/checkpointer.ts). */
  backgroundCheckpoints?: boolean;
  /** With backgroundCheckpoints: how much the WAL may hold before writers are
   * made to start it over (64 MiB; tests lower it). */
  walRestartAboveBytes?: number;
}

export class DatabaseMissingError extends Error {}

const current = new AsyncLocalStorage<Tx>();

type Raw = (query: SQL) => Promise<unknown[]>;
type Statement = (text: string, params: unknown[]) => Promise<unknown[]>;

function executor(dialect: Dialect, q: Q, t: Tables, raw: Raw, statement: Statement): Executor {
  return {
    dialect,
    q,
    t,
    all: async <T>(query: SQL) => (await raw(query)) as T[],
    run: async (query: SQL) => {
      await raw(query);
    },
    query: async <T>(text: string, params: unknown[]) => (await statement(text, params)) as T[],
  };
}

async function runTx<T>(base: Executor, fn: (tx: Tx) => Promise<T>, begin: () => Promise<void>, commit: () => Promise<void>, rollback: () => Promise<void>): Promise<T> {
  const hooks: (() => void)[] = [];
  const tx: Tx = { ...base, afterCommit: (f) => hooks.push(f) };
  await begin();
  let result: T;
  try {
    result = await current.run(tx, () => fn(tx));
  } catch (e) {
    await rollback();
    throw e;
  }
  await commit();
  for (const hook of hooks) hook();
  return result;
}

function openSqlite(target: Extract<DatabaseTarget, { dialect: 'sqlite' }>, options: OpenOptions): Db {
  const create = options.create ?? true;
  if (!create && !existsSync(target.path)) throw new DatabaseMissingError(`no database at ${target.path} (svc serve creates it)`);
  mkdirSync(dirname(target.path), { recursive: true, mode: 0o700 });
  const busy = options.busyTimeoutMs ?? 5000;
  const open = (): Database => {
    const conn = new Database(target.path, { create, strict: true });
    conn.exec(`PRAGMA busy_timeout = ${busy}`);
    conn.exec('PRAGMA journal_mode = WAL');
    conn.exec('PRAGMA synchronous = NORMAL');
    conn.exec('PRAGMA foreign_keys = ON');
    return conn;
  };
  const existed = existsSync(target.path);
  const writerConn = open();
  // The writer's page cache: 64 MiB instead of SQLite's 2. Ingest inserts at
  // random places in the event-id, task-id and task-key indexes; once those
  // outgrow the cache every insert reads its page back from the file and
  // dirty pages spill to the WAL mid-transaction (written again at commit).
  // Filled only as pages are used. Readers keep the default.
  writerConn.exec(`PRAGMA cache_size = -${WRITER_CACHE_KIB}`);
  // The database holds credential hashes: keep it private to its owner.
  // SQLite gives the -wal and -shm files the same mode.
  if (!existed) chmodSync(target.path, 0o600);
  const readerConn = open();
  readerConn.exec('PRAGMA query_only = ON');
  // Write transactions, one at a time (the checkpoint thread also takes it to pause writes).
  const lock = new Mutex();
  const checkpointer = options.backgroundCheckpoints ? startCheckpointer(target.path, writerConn, lock, options.walRestartAboveBytes ?? RESTART_ABOVE_BYTES) : null;
  const t = tablesFor('sqlite');
  const writerQ = drizzleSqlite(writerConn);
  const readerQ = drizzleSqlite(readerConn);
  // Raw SQL runs through prepared statements cached per connection: the hot
  // paths (audit appends, frame ingest) repeat the same few statements.
  const compiler = (writerQ as unknown as { dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } } }).dialect;
  const sqliteOn = (conn: Database): [Raw, Statement] => {
    const cache = new Map<string, ReturnType<Database['prepare']>>();
    const statement: Statement = async (text, params) => {
      let prepared = cache.get(text);
      if (!prepared) {
        if (cache.size >= 256) cache.delete(cache.keys().next().value!);
        cache.set(text, (prepared = conn.prepare(text)));
      }
      // bun:sqlite would bind missing parameters as NULL.
      if (prepared.paramsCount !== params.length) throw new Error(`statement has ${prepared.paramsCount} placeholders for ${params.length} parameters`);
      return prepared.all(...(params as never[])) as unknown[];
    };
    const raw: Raw = (query) => {
      const { sql: text, params } = compiler.sqlToQuery(query);
      return statement(text, params);
    };
    return [raw, statement];
  };
  const reader = executor('sqlite', readerQ, t, ...sqliteOn(readerConn));
  const writer = executor('sqlite', writerQ, t, ...sqliteOn(writerConn));
  return {
    ...reader,
    target,
    tx: (fn) => {
      const open = current.getStore();
      if (open) return fn(open); // nested call: join the open transaction
      return lock.run(() =>
        runTx(
          writer,
          fn,
          async () => void writerConn.exec('BEGIN IMMEDIATE'),
          async () => void writerConn.exec('COMMIT'),
          async () => {
            if (writerConn.inTransaction) writerConn.exec('ROLLBACK');
          },
        ),
      );
    },
    ping: async () => {
      readerConn.prepare('SELECT 1').get();
    },
    checkpoints: () => checkpointer?.mode() ?? 'inline',
    close: async () => {
      await checkpointer?.stop();
      // close(true) finalizes the cached statements and releases the file now;
      // close() would keep the connections (and their locks) until those are
      // garbage collected.
      readerConn.close(true);
      writerConn.close(true);
    },
  };
}

const CHECKPOINT_INTERVAL_MS = 500;
const RESTART_ABOVE_BYTES = 64 * 1024 * 1024;
const WRITER_CACHE_KIB = 64 * 1024;
const STOP_WAIT_MS = 2000;
const RESUME_WAIT_MS = 2000;

/** Moves the WAL checkpoints of `writer`'s database to a worker thread. Should
 * the thread fail, the writer checkpoints inline again (SQLite's default). */
function startCheckpointer(path: string, writer: Database, writes: Mutex, restartAboveBytes: number): { stop(): Promise<void>; mode(): CheckpointMode } {
  const worker = new Worker(workerEntry('db/checkpointer'));
  const order = (o: CheckpointerOrder) => worker.postMessage(o);
  writer.exec('PRAGMA wal_autocheckpoint = 0');
  // Writes paused for a RESTART checkpoint resume when the thread says so, or
  // after RESUME_WAIT_MS whatever happened to it (writes never hang on it).
  let resume: (() => void) | null = null;
  const resumeWrites = () => {
    resume?.();
    resume = null;
  };
  let stopped: (() => void) | null = null;
  // Stopped or failed: a pause still queued behind a transaction lets writes go at once.
  let gone = false;
  worker.onmessage = (event: MessageEvent<CheckpointerNote>) => {
    if (event.data === 'pause-writes') {
      void writes.run(
        () =>
          new Promise<void>((resolve) => {
            if (gone) return resolve();
            const timer = setTimeout(resumeWrites, RESUME_WAIT_MS);
            resume = () => {
              clearTimeout(timer);
              resolve();
            };
            order('writes-paused');
          }),
      );
    } else if (event.data === 'resume-writes') resumeWrites();
    else if (event.data === 'stopped') stopped?.();
  };
  let failed = false;
  worker.onerror = (event) => {
    failed = true;
    log.error({ err: event.message }, 'the WAL checkpoint thread failed; checkpointing inline again');
    writer.exec('PRAGMA wal_autocheckpoint = 1000');
    worker.terminate();
    gone = true;
    resumeWrites();
  };
  const start: CheckpointerStart = { path, intervalMs: CHECKPOINT_INTERVAL_MS, restartAboveBytes };
  order(start);
  return {
    mode: () => (failed ? 'fallback' : gone ? 'inline' : 'thread'),
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          worker.terminate();
          gone = true;
          resumeWrites();
          resolve();
        };
        const timer = setTimeout(done, STOP_WAIT_MS);
        stopped = done;
        order('stop');
      }),
  };
}

function openPostgres(target: Extract<DatabaseTarget, { dialect: 'postgres' }>, options: OpenOptions): Db {
  const client = postgres(target.url, {
    max: options.poolSize ?? 10,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    idle_timeout: 60,
    onnotice: () => {},
    // Counts and sums come back as BigInt; rows are normalised to numbers.
    types: { bigint: postgres.BigInt },
  });
  const pg = drizzlePg(client);
  const t = tablesFor('postgres');
  type Runner = { execute(query: SQL): Promise<unknown> };
  const rawOn = (runner: Runner) => async (query: SQL) =>
    [...((await runner.execute(query)) as Record<string, unknown>[])].map(normaliseRow);
  const base = executor('postgres', pg as unknown as Q, t, rawOn(pg), statementOn(client));
  return {
    ...base,
    target,
    tx: (fn) => {
      const open = current.getStore();
      if (open) return fn(open);
      const hooks: (() => void)[] = [];
      // drizzle commits when the callback resolves and rolls back when it throws.
      return pg
        .transaction(async (dtx) => {
          const tx: Tx = { ...executor('postgres', dtx as unknown as Q, t, rawOn(dtx), statementOn(clientOf(dtx))), afterCommit: (f) => hooks.push(f) };
          return current.run(tx, () => fn(tx));
        })
        .then((result) => {
          for (const hook of hooks) hook();
          return result;
        });
    },
    ping: async () => {
      await client`SELECT 1`;
    },
    checkpoints: () => 'none',
    close: async () => {
      await client.end({ timeout: 5 });
    },
  };
}

/** The postgres-js client under a drizzle transaction (drizzle keeps it on the transaction's session). */
type Unsafe = Pick<postgres.Sql, 'unsafe'>;
const clientOf = (dtx: unknown): Unsafe => (dtx as { session: { client: Unsafe } }).session.client;

/** `?` placeholders numbered as PostgreSQL wants them, with their count; cached per text. */
const numbered = new Map<string, { text: string; count: number }>();
function numberPlaceholders(text: string): { text: string; count: number } {
  let found = numbered.get(text);
  if (!found) {
    let count = 0;
    found = { text: text.replace(/\?/g, () => `$${++count}`), count };
    if (numbered.size >= 512) numbered.delete(numbered.keys().next().value!);
    numbered.set(text, found);
  }
  return found;
}

/** query() on PostgreSQL: straight to postgres-js as a named prepared statement
 * (parsed once per connection), skipping drizzle's SQL building, which cost more
 * CPU than the round trip on the audit append path. */
const statementOn =
  (client: Unsafe): Statement =>
  async (text, params) => {
    const { text: sqlText, count } = numberPlaceholders(text);
    if (count !== params.length) throw new Error(`statement has ${count} placeholders for ${params.length} parameters`);
    return [...(await client.unsafe(sqlText, params as postgres.ParameterOrJSON<never>[], { prepare: true }))].map(normaliseRow);
  };

/** BigInt results (COUNT, SUM) become numbers; they stay far below 2^53. */
function normaliseRow(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) if (typeof v === 'bigint') row[k] = Number(v);
  return row;
}

export function openDatabase(target: DatabaseTarget, options: OpenOptions = {}): Db {
  return target.dialect === 'sqlite' ? openSqlite(target, options) : openPostgres(target, options);
}

export { sql };
