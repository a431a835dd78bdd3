// Playwright against the compiled dist/svc in Debian's Chromium (no browser download). One worker: the suite
// walks one installation from first boot onwards, so its tests run in order.
//   npx playwright test -c tests/e2e/playwright.config.ts
// SVC_E2E_JUNIT=<file> adds a JUnit report (scripts/test); SVC_E2E_CHROMIUM overrides the browser path.
import { defineConfig } from '@playwright/test';

const junit = process.env.SVC_E2E_JUNIT;

export default defineConfig({
  testDir: '.',
  testMatch: '*.e2e.ts',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  outputDir: '../../test-results/e2e-artifacts',
  reporter: junit ? [['list'], ['junit', { outputFile: junit }]] : [['list']],
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
