// Sums the JUnit files of every suite into the one line CI reads:
// "N passed, N failed" (skipped tests are neither). Exits 1 when any failed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2]!;
let passed = 0;
let failed = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith('.xml')).sort()) {
  const xml = readFileSync(join(dir, file), 'utf8');
  // The first element carrying totals is the root <testsuites> (bun, Playwright, pytest all write one).
  const root = /<testsuites?\b([^>]*)>/.exec(xml)?.[1] ?? '';
  const attr = (name: string) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(root)?.[1] ?? 0);
  const total = attr('tests');
  const bad = attr('failures') + attr('errors');
  const skipped = attr('skipped');
  const ok = Math.max(0, total - bad - skipped);
  process.stderr.write(`${file.replace(/\.xml$/, '')}: ${ok} passed, ${bad} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  passed += ok;
  failed += bad;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
