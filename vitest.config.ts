import { defineConfig } from 'vitest/config'

/**
 * Tests run against the TypeScript sources: every `exports`/`imports` entry of a package names
 * its source under the `@agentmsg/source` condition (see tsup.config.ts), so adding it here is
 * all the aliasing there is. Node tests run in Vite's server environment, where `node` picks
 * the Node variant of the `#…` platform imports; the browser variants are exercised by the
 * Playwright suite against `dist/`. The lists repeat Vite's defaults (`defaultServerConditions`,
 * `defaultClientConditions`), which setting the option replaces.
 */
const SOURCE = '@agentmsg/source'

export default defineConfig({
  resolve: { conditions: [SOURCE, 'module', 'browser', 'development|production'] },
  ssr: { resolve: { conditions: [SOURCE, 'module', 'node', 'development|production'] } },
  test: {
    include: [
      'packages/*/test/**/*.test.ts',
      'test/tooling/**/*.test.ts',
      'test/docs/**/*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // A temporary AGENTMSG_HOME (the development CA lives there): tests never touch the real home.
    globalSetup: ['test/setup/agentmsg-home.ts'],
  },
})
