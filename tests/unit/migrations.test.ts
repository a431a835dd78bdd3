import { expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS } from '../../src/db/migrations.ts';

test('every migration file of both dialects is embedded, in order, with matching numbers', () => {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const files = readdirSync(join(import.meta.dir, '../../migrations', dialect)).filter((f) => f.endsWith('.sql')).sort();
    expect(files.map((f) => f.slice(0, 4))).toEqual(MIGRATIONS.map((m) => m.revision));
    expect(files.map((f) => f.replace(/^\d{4}_|\.sql$/g, ''))).toEqual(MIGRATIONS.map((m) => m.name));
  }
  const revisions = MIGRATIONS.map((m) => m.revision);
  expect(revisions).toEqual([...revisions].sort());
});
