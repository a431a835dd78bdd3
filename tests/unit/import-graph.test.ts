// The server's modules import downwards: no module reaches itself through its
// imports, type-only imports included (a type import of a higher module is the
// same dependency, kept until someone calls through it). The app context
// (server/context.ts) names its parts' types from modules below every area that
// takes the context; a cycle through it once joined 25 files of auth, agents,
// commands, transport, http and server.
import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dir, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

/** Static imports and re-exports of relative modules (`import ... from './x.ts'`, `export ... from`). */
const STATIC = /^(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'/gms;

function graph(): Map<string, string[]> {
  const files = sources(SRC);
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const text = readFileSync(file, 'utf8');
      const targets = [...text.matchAll(STATIC)].map((m) => resolve(dirname(file), m[1]!)).filter((t) => known.has(t));
      return [file, [...new Set(targets)]];
    }),
  );
}

/** One cycle of each strongly connected component with more than one module (Tarjan). */
function cycles(edges: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) out.push(component.map((f) => relative(SRC, f)).sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

test('no module of src/ imports itself through other modules', () => {
  const edges = graph();
  expect(edges.size).toBeGreaterThan(200);
  expect(cycles(edges)).toEqual([]);
});

test('the check sees a cycle, type-only imports and re-exports included', () => {
  const a = join(SRC, 'a.ts');
  const b = join(SRC, 'b.ts');
  const c = join(SRC, 'c.ts');
  expect(cycles(new Map([[a, [b]], [b, [c]], [c, [a]]]))).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  const imports = (text: string) => [...text.matchAll(STATIC)].map((m) => m[1]);
  expect(imports("import type { X } from './x.ts';\nexport { y } from '../y.ts';\nimport {\n  z,\n} from './z.ts';\nimport 'node:fs';")).toEqual(['./x.ts', '../y.ts', './z.ts']);
});
