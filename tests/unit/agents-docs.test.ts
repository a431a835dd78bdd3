// docs/agents.md shows how each engine's worker starts its z4j agent with lines
// of the interop suite's app modules (tests/interop/app), which run against
// dist/svc in every CI run. This keeps the two the same: every line of a
// snippet is a line of the module it names, and every pin of a `pip install`
// line is a pin of the suite's requirements.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '../..');
const doc = readFileSync(join(ROOT, 'docs/agents.md'), 'utf8');
const section = doc.slice(doc.indexOf('## Quick start per engine'), doc.indexOf('\n## ', doc.indexOf('## Quick start per engine') + 1));

/** Each fenced block with its language and the last `tests/interop/...` path named before it. */
function blocks(): { lang: string; lines: string[]; source: string | null }[] {
  const out: { lang: string; lines: string[]; source: string | null }[] = [];
  const re = /```(\w+)\n([\s\S]*?)```/g;
  for (let m = re.exec(section); m; m = re.exec(section)) {
    const before = section.slice(0, m.index);
    const named = [...before.matchAll(/`(tests\/interop\/app\/[\w/.]+\.py)`/g)].at(-1);
    out.push({ lang: m[1]!, lines: m[2]!.split('\n').map((l) => l.trim()).filter(Boolean), source: named?.[1] ?? null });
  }
  return out;
}

describe('docs/agents.md quick starts are the interop suite\'s own lines', () => {
  test('the section has a snippet for every engine and scheduler adapter the suite runs', () => {
    const apps = readdirSync(join(ROOT, 'tests/interop/app')).filter((d) => d !== 'bare' && d !== '__pycache__');
    const named = new Set(blocks().flatMap((b) => (b.source ? [b.source.split('/')[3]] : [])));
    expect([...named].sort()).toEqual(apps.sort());
  });

  for (const block of blocks().filter((b) => b.lang === 'python')) {
    test(`the snippet from ${block.source} matches it`, () => {
      expect(block.source).not.toBeNull();
      const lines = new Set(readFileSync(join(ROOT, block.source!), 'utf8').split('\n').map((l) => l.trim()));
      expect(block.lines.filter((l) => !lines.has(l))).toEqual([]);
    });
  }

  test('every pinned package of a pip install line is pinned so in the suite', () => {
    const pins = new Set(
      readdirSync(join(ROOT, 'tests/interop/requirements')).flatMap((f) =>
        readFileSync(join(ROOT, 'tests/interop/requirements', f), 'utf8').split('\n').map((l) => l.trim()),
      ),
    );
    const installed = blocks()
      .filter((b) => b.lang === 'sh')
      .flatMap((b) => b.lines.filter((l) => l.startsWith('pip install')).flatMap((l) => l.split(/\s+/).slice(2)));
    expect(installed.length).toBeGreaterThan(10);
    expect(installed.filter((p) => !pins.has(p))).toEqual([]);
  });
});
