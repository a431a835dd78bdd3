// SVC_DATABASE_URL: which engine, and where. Errors never repeat the URL,
// which may hold a password.
import { isAbsolute, resolve } from 'node:path';

export type DatabaseTarget =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'postgres'; url: string; host: string; database: string };

export class DatabaseUrlError extends Error {}

export function parseDatabaseUrl(raw: string, defaultSqlitePath: string, home: string): DatabaseTarget {
  const text = raw.trim();
  if (text === '') return { dialect: 'sqlite', path: defaultSqlitePath };
  if (text.startsWith('sqlite:')) {
    let path = text.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '' || path.includes('\0') || path.startsWith(':memory')) {
      throw new DatabaseUrlError('a sqlite URL needs a file path, e.g. sqlite:///var/lib/svc/svc.db');
    }
    return { dialect: 'sqlite', path: isAbsolute(path) ? path : resolve(home, path) };
  }
  if (/^postgres(ql)?:\/\//i.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new DatabaseUrlError('malformed PostgreSQL URL (expected postgres://user:password@host:port/database)');
    }
    const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
    if (url.hostname === '' && !url.searchParams.get('host')) {
      throw new DatabaseUrlError('malformed PostgreSQL URL: no host');
    }
    if (database === '' || database.includes('/')) {
      throw new DatabaseUrlError('malformed PostgreSQL URL: no database name');
    }
    if (url.port !== '' && !(Number(url.port) >= 1 && Number(url.port) <= 65535)) {
      throw new DatabaseUrlError('malformed PostgreSQL URL: bad port');
    }
    return { dialect: 'postgres', url: text, host: url.hostname || url.searchParams.get('host')!, database };
  }
  throw new DatabaseUrlError('must be empty, a sqlite:<path>, or a postgres:// / postgresql:// URL');
}

/** The URL with its password replaced, for status output. */
export function redactDatabaseUrl(target: DatabaseTarget): string {
  if (target.dialect === 'sqlite') return `sqlite://${target.path}`;
  try {
    const u = new URL(target.url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://***';
  }
}
