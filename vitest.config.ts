import { defineConfig } from 'vitest/config'

/**
 * Tests run against the TypeScript sources: every `exports`/`imports` entry of a package names
 * its source under the `@agentmsg/source` condition (see tsup.config.ts), so adding it here is
 * all the aliasing there is. Node tests run in Vite's server environment, where `node` picks
 * the Node variant of the `#…` platform imports; the browser variants are exercised by the
 * Playwright suite against `dist/`. The lists repeat Vite's defaults (`defaultServerConditions`,
 * `defaultClientConditions`), which setting the option replaces, but for `module` on the server:
 * vitest hands these conditions to Node itself, and a package whose `module` build only a
 * bundler can load (`@opentelemetry/api` 1.9, extensionless imports) breaks every CommonJS
 * `require` of it there (prom-client's, the OpenTelemetry SDK's).
 */
const SOURCE = '@agentmsg/source'

/**
 * PostgreSQL (issue 13): `.ci/run` always sets AGENTMSG_TEST_POSTGRES_URL after making sure the
 * server is up. With it, the PostgreSQL store tests run and the relay's HTTP-level tests run a
 * second time as the project `relay-on-postgres`, unchanged, against the PostgreSQL store.
 * Without it they are not run, and `npm test` says so in one line (scripts/test-summary.mjs).
 */
const postgres = process.env.AGENTMSG_TEST_POSTGRES_URL !== undefined

/** The relay's HTTP-level tests: every file that serves a relay through test/helpers.ts. */
const RELAY_HTTP_TESTS = [
  'packages/relay/test/server-*.test.ts',
  'packages/relay/test/attack-*.test.ts',
  'packages/relay/test/node-publish.test.ts',
  'packages/relay/test/serve-intercept.test.ts',
]

export default defineConfig({
  resolve: { conditions: [SOURCE, 'module', 'browser', 'development|production'] },
  ssr: { resolve: { conditions: [SOURCE, 'node', 'development|production'] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: [
            'packages/*/test/**/*.test.ts',
            'test/tooling/**/*.test.ts',
            'test/docs/**/*.test.ts',
            'test/examples/**/*.test.ts',
          ],
        },
      },
      ...(postgres
        ? [
            {
              extends: true as const,
              test: {
                name: 'relay-on-postgres',
                include: RELAY_HTTP_TESTS,
                env: { AGENTMSG_RELAY_TEST_STORE: 'postgres' },
              },
            },
          ]
        : []),
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // A temporary AGENTMSG_HOME (the development CA lives there): tests never touch the real home.
    globalSetup: ['test/setup/agentmsg-home.ts'],
  },
})
