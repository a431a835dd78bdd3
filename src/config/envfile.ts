// The KEY=VALUE file format of $SVC_HOME/config.env and the secret file.
// Deliberately small: comments, blank lines, optional `export `, optional
// single or double quotes around the whole value. No interpolation.

export interface EnvFileEntry {
  key: string;
  value: string;
  line: number;
}

export class EnvFileError extends Error {}

export function parseEnvFile(text: string, path: string): EnvFileEntry[] {
  const entries: EnvFileEntry[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) throw new EnvFileError(`${path}:${i + 1}: expected KEY=VALUE`);
    let value = m[2]!;
    const q = value[0];
    if ((q === '"' || q === "'") && value.length >= 2 && value.endsWith(q)) value = value.slice(1, -1);
    entries.push({ key: m[1]!, value, line: i + 1 });
  });
  return entries;
}

/** Quotes a value only when it needs it, so files stay readable. */
export function formatEnvLine(key: string, value: string): string {
  return /^[A-Za-z0-9_./:@,+-]*$/.test(value) ? `${key}=${value}` : `${key}="${value.replace(/"/g, '')}"`;
}
