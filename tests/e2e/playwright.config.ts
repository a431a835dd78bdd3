// Playwright against the compiled dist/svc in Debian's Chromium (no browser download). One worker: the suite
// walks one installation from first boot onwards, so its tests run in order.
//   npx playwright test -c tests/e2e/playwright.config.ts
// SVC_E2E_JUNIT=<file> adds a JUnit report and, beside it, a JSON one (scripts/test; scripts/sum-results.ts names
// each test that failed, and each that passed only when run again); SVC_E2E_CHROMIUM overrides the browser path.
// Run by the test command, a file whose test failed runs once more from its start (a fresh svc): a failure that
// comes back fails the suite; one that does not is listed as flaky in the results, to be fixed, not forgotten.
import { defineConfig } from '@playwright/test';

const junit = process.env.SVC_E2E_JUNIT;

export default defineConfig({
  testDir: '.',
  testMatch: '*.e2e.ts',
  workers: 1,
  fullyParallel: false,
  retries: junit ? 1 : 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  outputDir: '../../test-results/e2e-artifacts',
  reporter: junit ? [['list'], ['junit', { outputFile: junit }], ['json', { outputFile: junit.replace(/\.xml$/, '.json') }]] : [['list']],
  use: {
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: process.env.SVC_E2E_CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    actionTimeout: 10_000,
    navigationTimeout: 15_000,
  },
});
