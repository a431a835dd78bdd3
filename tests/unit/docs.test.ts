import { expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configurationDoc } from '../../scripts/gen-config-docs.ts';

test('docs/configuration.md matches the setting declarations (run `bun scripts/gen-config-docs.ts`)', () => {
  expect(readFileSync(join(import.meta.dir, '../../docs/configuration.md'), 'utf8')).toBe(configurationDoc());
});
