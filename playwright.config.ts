import { defineConfig } from '@playwright/test'

/**
 * Browser suite: specs under `test/browser` bundle the BUILT packages (`packages/*\/dist`) with
 * esbuild for the browser and run them in Debian's Chromium. Pages are served by `page.route`
 * (see `test/browser/harness.ts`), so there is no web server to start. The specs' Node side
 * (relay servers, certificates) imports the built packages too: Playwright resolves `@agentmsg/*`
 * the way Node does, without the `@agentmsg/source` condition that tsc and vitest add.
 *
 * Playwright cannot download its own browsers on these machines, so the system Chromium is
 * used. The flags keep it from reaching out to Google's services, which a closed network
 * refuses (many at a time) and which slow every start. Playwright already gives every launch a
 * fresh temporary `--user-data-dir`.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export default defineConfig({
  testDir: 'test/browser',
  testMatch: '**/*.spec.ts',
  outputDir: 'test-results',
  // A temporary AGENTMSG_HOME (the development CA lives there): tests never touch the real home.
  globalSetup: './test/setup/agentmsg-home.ts',
  // A focused test would hide every other result; refuse it everywhere, not only on CI.
  forbidOnly: true,
  retries: 0,
  workers: process.env.CI ? 1 : 2,
  fullyParallel: false,
  // Bundling plus 10,000 JCS lines and ~300 signature checks per provider; generous on a
  // 2-core machine, still far below a hang.
  timeout: 120_000,
  expect: { timeout: 10_000 },
  reporter: [['list'], ['json', { outputFile: '.tmp/playwright.json' }]],
  use: {
    headless: true,
    trace: 'off',
    screenshot: 'off',
    video: 'off',
    actionTimeout: 15_000,
    navigationTimeout: 30_000,
  },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
          args: CHROMIUM_ARGS,
        },
      },
    },
  ],
})
