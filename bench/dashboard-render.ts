// Time to render the dashboard's agents page with 500 agents and its tasks page with 10,000 tasks, in Debian's
// Chromium against the compiled binary.
//   bun bench/dashboard-render.ts [runs=11] [agents=500] [tasks=10000]
// A fresh $SVC_HOME: the agents are minted through the service layer into project `bench` before dist/svc
// starts; the administrator is created through the API (POST /setup/complete with the link's token); one of
// the agents uploads the task events over long-poll, one task.* event per task, in frames of 500 events.
// Each run opens a new tab on the page and records, inside the page, performance.now() (milliseconds since
// navigation start) when the table's first page of rows is in the DOM (a MutationObserver, so no polling
// delay: `dom`), and when the frame showing them has been laid out and painted (`painted`); resource timing
// says when the script, `/auth/me` and the page's own request left and were answered. The queues page
// (three rows) is measured the same way as the floor: the shell, the session and the request every page
// pays. Then the clicks: a sidebar link from the project's overview to each page (a navigation inside the
// dashboard), "Load more" on the tasks page and "Show all" on the agents page, each until painted. One
// warm-up run per page first (it fills the HTTP cache with the hashed assets, as any later visit finds it),
// a pause after each run (the closed tab's teardown would compete with the next), medians of the rest.
import { chromium, type BrowserContext } from '@playwright/test';
import e2eConfig from '../tests/e2e/playwright.config.ts';
import { eventually } from '../tests/helpers/binary.ts';
import { taskEvent, TestAgent } from '../tests/helpers/test-agent.ts';
import { TASK_PAGE } from '../web/src/pages/project/requests.ts';
import { percentile, seedAgents, freshBench, startServer } from './lib/setup.ts';

const [runs = 11, agentCount = 500, taskCount = 10_000] = process.argv.slice(2).map(Number);
const EVENTS_PER_FRAME = 500;
const SETTLE_MS = 500;
const AGENTS_SHOWN = 50; // what the agents page shows before "Show more" (web/src/pages/project/agents.tsx)
// The e2e suite's browser and flags.
const { launchOptions } = e2eConfig.use!;

const bench = await freshBench();
const seeded = await seedAgents(bench.env, agentCount);
const server = await startServer(bench.env);
// The setup link may follow the "serving" line.
await eventually(() => /\/setup\?token=\S+/.test(server.stderr()), 10_000, 'the setup link');
const token = /\/setup\?token=(\S+)/.exec(server.stderr())![1];

// The tasks: names, queues and outcomes varied as a real project's are.
const agent = new TestAgent({ ...seeded.agents[0]!, baseUrl: server.url });
if ((await agent.probe()).status !== 200) throw new Error('probe failed');
const KINDS = ['task.succeeded', 'task.succeeded', 'task.succeeded', 'task.succeeded', 'task.failed', 'task.started'];
const events = Array.from({ length: taskCount }, (_, n) =>
  taskEvent({
    task_id: `bench-${n}`,
    kind: KINDS[n % KINDS.length]!,
    data: {
      task_name: `app.tasks.job_${n % 10}`,
      queue: ['default', 'emails', 'reports'][n % 3]!,
      worker: `w${n % 4}@host`,
      result: n,
      runtime_ms: n % 900,
    },
  }),
);
for (let i = 0; i < events.length; i += EVENTS_PER_FRAME * 20) {
  const frames = [];
  for (let j = i; j < Math.min(i + EVENTS_PER_FRAME * 20, events.length); j += EVENTS_PER_FRAME) {
    frames.push(agent.eventBatch(events.slice(j, j + EVENTS_PER_FRAME)));
  }
  const r = await agent.upload(frames);
  if (r.status !== 200 || r.body.accepted !== frames.length) throw new Error(`upload: ${r.status} ${JSON.stringify(r.body)}`);
}

const browser = await chromium.launch({ executablePath: launchOptions!.executablePath, args: launchOptions!.args });
const context: BrowserContext = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
const setup = await context.request.post('/api/v1/setup/complete', {
  data: { token, email: 'bench@example.com', password: 'Bench-Render-Figures-2026', display_name: 'Bench' },
});
if (setup.status() !== 201) throw new Error(`setup: ${setup.status()} ${await setup.text()}`);
const listed = await (await context.request.get('/api/v1/projects/bench/tasks', { params: { limit: 1 } })).json();
if (listed.items.length !== 1) throw new Error('no tasks listed');

/** Records when `main tbody` first holds `rows` rows: performance.now() then, and once the frame that shows
 * them has been laid out and painted (a message posted from that frame's animation callback runs after it).
 * It says so on the console: waiting with page.waitForFunction would have Playwright inject and run its own
 * script (about 15 ms of main-thread time) in the page while the dashboard is still booting. */
const PAINTED = 'bench: rows painted';
await context.addInitScript((PAINTED) => {
  const w = window as unknown as { benchRows: number; benchAt?: { dom: number; painted?: number } };
  new MutationObserver((_, observer) => {
    if (!w.benchRows || document.querySelectorAll('main tbody tr').length < w.benchRows) return;
    const at: { dom: number; painted?: number } = { dom: performance.now() };
    w.benchAt = at;
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        at.painted = performance.now();
        console.debug(PAINTED);
      };
      channel.port2.postMessage(null);
    });
    observer.disconnect();
  }).observe(document, { childList: true, subtree: true });
}, PAINTED);

interface Run {
  dom: number;
  painted: number;
  script: number;
  layout: number;
  /** When the browser began fetching the page and had all of its HTML (ms since navigation start). */
  fetchStart: number;
  responseEnd: number;
  /** Resource timing (ms since navigation start): when the script, `/auth/me` and the page's own request left
   * and when their answers were in. */
  scriptAsked: number;
  scriptIn: number;
  meAsked: number;
  meIn: number;
  pageAsked: number;
  pageIn: number;
}

async function measure(path: string, rows: number, api: string): Promise<Run> {
  const page = await context.newPage();
  await page.addInitScript((n) => ((window as unknown as { benchRows: number }).benchRows = n), rows);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const painted = page.waitForEvent('console', { predicate: (m) => m.text() === PAINTED, timeout: 30_000 });
  await page.goto(path);
  await painted;
  const at = await page.evaluate((pageApi) => {
    const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
    const resources = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
    const first = (test: (path: string) => boolean) => resources.find((r) => test(new URL(r.name).pathname));
    const script = first((p) => p.endsWith('.js'));
    const who = first((p) => p === '/api/v1/auth/me');
    const own = first((p) => p === pageApi);
    return {
      ...(window as unknown as { benchAt: Run }).benchAt,
      fetchStart: nav.fetchStart,
      responseEnd: nav.responseEnd,
      scriptAsked: script?.startTime ?? NaN,
      scriptIn: script?.responseEnd ?? NaN,
      meAsked: who?.startTime ?? NaN,
      meIn: who?.responseEnd ?? NaN,
      pageAsked: own?.startTime ?? NaN,
      pageIn: own?.responseEnd ?? NaN,
    };
  }, api);
  // Where the page's main thread spent its time so far (seconds): running script, and in style and layout.
  const m = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
  at.script = m.ScriptDuration! * 1000;
  at.layout = (m.LayoutDuration! + m.RecalcStyleDuration!) * 1000;
  await page.close();
  // Let the closed tab's renderer exit before the next run: its teardown would compete with the next page.
  await Bun.sleep(SETTLE_MS);
  return at;
}

/** A click, from the click until the frame showing `want` table rows in <main> has been painted: "Load more"
 * on the tasks page, "Show all" on the agents page, or a sidebar link (a navigation inside the dashboard, as
 * most visits to a page are). `ready` is what the page shows before the click. */
async function click(path: string, ready: string, label: string, want: number): Promise<number> {
  const page = await context.newPage();
  await page.goto(path);
  await page.locator(ready).first().waitFor();
  const ms = await page.evaluate(
    async ([text, rows]) => {
      const target = [...document.querySelectorAll<HTMLElement>('button, nav a')].find((b) => b.textContent === text)!;
      const start = performance.now();
      return new Promise<number>((resolve) => {
        new MutationObserver((_, o) => {
          if (document.querySelectorAll('main tbody tr').length < rows) return;
          o.disconnect();
          requestAnimationFrame(() => {
            const channel = new MessageChannel();
            channel.port1.onmessage = () => resolve(performance.now() - start);
            channel.port2.postMessage(null);
          });
        }).observe(document.querySelector('main')!, { childList: true, subtree: true });
        target.click();
      });
    },
    [label, want] as const,
  );
  await page.close();
  await Bun.sleep(SETTLE_MS);
  return ms;
}

const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
const summary = (list: Run[]) => ({
  dom_ms_median: +median(list.map((r) => r.dom)).toFixed(1),
  dom_ms_min: +Math.min(...list.map((r) => r.dom)).toFixed(1),
  dom_ms_max: +Math.max(...list.map((r) => r.dom)).toFixed(1),
  painted_ms_median: +median(list.map((r) => r.painted)).toFixed(1),
  script_ms_median: +median(list.map((r) => r.script)).toFixed(1),
  style_layout_ms_median: +median(list.map((r) => r.layout)).toFixed(1),
  // The browser's own share before the first request leaves (a new tab's renderer starting), and the
  // page's time from the request leaving to the rows being painted.
  fetch_start_ms_median: +median(list.map((r) => r.fetchStart)).toFixed(1),
  html_loaded_ms_median: +median(list.map((r) => r.responseEnd)).toFixed(1),
  painted_after_fetch_start_ms_median: +median(list.map((r) => r.painted - r.fetchStart)).toFixed(1),
  // Where the load goes: the script and the requests every page pays, each asked for and answered.
  script_asked_ms_median: +median(list.map((r) => r.scriptAsked)).toFixed(1),
  script_in_ms_median: +median(list.map((r) => r.scriptIn)).toFixed(1),
  me_asked_ms_median: +median(list.map((r) => r.meAsked)).toFixed(1),
  me_in_ms_median: +median(list.map((r) => r.meIn)).toFixed(1),
  page_request_asked_ms_median: +median(list.map((r) => r.pageAsked)).toFixed(1),
  page_request_in_ms_median: +median(list.map((r) => r.pageIn)).toFixed(1),
});

const pages = [
  // The floor: the same shell and requests with a table of three rows (the queues the tasks name).
  { name: 'queues', path: '/projects/bench/queues', rows: 3 },
  { name: 'agents', path: '/projects/bench/agents', rows: Math.min(AGENTS_SHOWN, agentCount) },
  { name: 'tasks', path: '/projects/bench/tasks', rows: Math.min(TASK_PAGE, taskCount) },
].map((p) => ({ ...p, api: `/api/v1${p.path}` }));
const results: Record<string, unknown> = {};
for (const p of pages) {
  const cold = await measure(p.path, p.rows, p.api);
  const warm: Run[] = [];
  for (let i = 0; i < runs; i++) warm.push(await measure(p.path, p.rows, p.api));
  results[p.name] = { rows_rendered: p.rows, cold_first_run_dom_ms: +cold.dom.toFixed(1), ...summary(warm) };
}
const clicks: Record<string, number[]> = {
  agents_from_sidebar: [],
  tasks_from_sidebar: [],
  tasks_load_more: [],
  agents_show_all: [],
};
const overview = '[data-testid="agents-summary"]';
const row = (n: number) => `main tbody tr:nth-child(${n})`;
for (let i = 0; i < runs; i++) {
  clicks.agents_from_sidebar!.push(await click('/projects/bench', overview, 'Agents', Math.min(AGENTS_SHOWN, agentCount)));
  clicks.tasks_from_sidebar!.push(await click('/projects/bench', overview, 'Tasks', Math.min(TASK_PAGE, taskCount)));
  clicks.tasks_load_more!.push(await click('/projects/bench/tasks', row(TASK_PAGE), 'Load more', TASK_PAGE * 2));
  clicks.agents_show_all!.push(await click('/projects/bench/agents', row(AGENTS_SHOWN), 'Show all', agentCount));
}

await browser.close();
await server.stop();
await bench.dropDatabase();
console.log(
  JSON.stringify({
    bench: 'dashboard-render',
    agent_count: agentCount,
    task_count: taskCount,
    runs,
    ...results,
    clicks_painted_ms_median: Object.fromEntries(Object.entries(clicks).map(([k, v]) => [k, +median(v).toFixed(1)])),
  }),
);
