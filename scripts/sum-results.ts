// Sums the JUnit files of every suite into the one line CI reads:
// "N passed, N failed" (skipped tests are neither). Exits 1 when any failed.
// Each failed test is named above the totals, with the first lines of its
// message, so the tail of a CI log says which test failed and why; so is each
// that failed and then passed when run again (Playwright's JSON report beside
// its JUnit one: the e2e suite runs a failed file once more).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2]!;
let passed = 0;
let failed = 0;
const failures: string[] = [];

const unescape = (s: string): string =>
  s.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-f]+));/gi, (_, name: string, dec?: string, hex?: string) =>
    dec ? String.fromCodePoint(Number(dec)) : hex ? String.fromCodePoint(parseInt(hex, 16)) : ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' } as Record<string, string>)[name.toLowerCase()]!,
  );
const attrOf = (attrs: string, name: string): string => unescape(new RegExp(`\\b${name}="([^"]*)"`).exec(attrs)?.[1] ?? '');

/** The failed test cases of one JUnit file: "suite: file › class › test — the first lines of the message". */
function failedCases(suite: string, xml: string): string[] {
  const out: string[] = [];
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = m[2] ?? '';
    const bad = /<(failure|error)\b([^>]*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body);
    if (!bad) continue;
    const message = attrOf(bad[2] ?? '', 'message') || unescape((bad[3] ?? '').replace(/<!\[CDATA\[|\]\]>/g, ''));
    const said = message.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 3).join(' | ');
    const where = [attrOf(m[1]!, 'file'), attrOf(m[1]!, 'classname'), attrOf(m[1]!, 'name')].filter((s, i, all) => s !== '' && all.indexOf(s) === i).join(' › ');
    out.push(`  ${suite}: ${where}${said ? ` — ${said.slice(0, 400)}` : ''}`);
  }
  return out;
}

interface PlaywrightSuite {
  title: string;
  suites?: PlaywrightSuite[];
  specs?: { title: string; file: string; line: number; tests: { status: string }[] }[];
}

/** The tests a Playwright JSON report calls flaky: "suite: file:line › test". */
function flakyCases(suite: string, json: string): string[] {
  const out: string[] = [];
  const walk = (s: PlaywrightSuite) => {
    for (const spec of s.specs ?? []) if (spec.tests.some((t) => t.status === 'flaky')) out.push(`  ${suite}: ${spec.file}:${spec.line} › ${spec.title}`);
    for (const child of s.suites ?? []) walk(child);
  };
  for (const s of (JSON.parse(json) as { suites?: PlaywrightSuite[] }).suites ?? []) walk(s);
  return out;
}

const flaky: string[] = [];
const files = readdirSync(dir);
for (const file of files.filter((f) => f.endsWith('.xml')).sort()) {
  const suite = file.replace(/\.xml$/, '');
  const xml = readFileSync(join(dir, file), 'utf8');
  // The first element carrying totals is the root <testsuites> (bun, Playwright, pytest all write one).
  const root = /<testsuites?\b([^>]*)>/.exec(xml)?.[1] ?? '';
  const attr = (name: string) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(root)?.[1] ?? 0);
  const total = attr('tests');
  const bad = attr('failures') + attr('errors');
  const skipped = attr('skipped');
  const ok = Math.max(0, total - bad - skipped);
  process.stderr.write(`${suite}: ${ok} passed, ${bad} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  passed += ok;
  failed += bad;
  failures.push(...failedCases(suite, xml));
  if (files.includes(`${suite}.json`)) flaky.push(...flakyCases(suite, readFileSync(join(dir, `${suite}.json`), 'utf8')));
}
if (flaky.length > 0) process.stderr.write(`flaky (failed, then passed when run again):\n${flaky.join('\n')}\n`);
if (failures.length > 0) process.stderr.write(`failed:\n${failures.join('\n')}\n`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
