#!/usr/bin/env node
/**
 * `npm test`: every stage in order, stopping at the first that fails, then one summary line
 * (scripts/test-summary.mjs) whether the run passed or not, so a CI log always ends with a
 * count and the name of the stage that stopped it. Without Chromium the browser stage is left
 * out with one line saying how to install it, the others still run, and the run does not pass.
 *
 *   lint       biome ci: formatting, import order and lint rules (biome.jsonc); read-only
 *   build      tsup + the bundle-size/publint guard (scripts/check-build.mjs)
 *   typecheck  the Node and the browser tsconfig
 *   vitest     unit and integration tests, against the sources
 *   runtimes   the built isomorphic packages in Deno, Bun and workerd (test/runtimes/run.mjs)
 *   playwright the browser suite, against the built dist/, in Chromium (CHROMIUM_PATH or
 *              /usr/bin/chromium, as playwright.config.ts)
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromiumPath, runStages } from './test-stages.mjs'
import { REPORTS } from './test-summary.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
// The local binaries, also when this file is run directly rather than through `npm test`.
const env = {
  ...process.env,
  PATH: `${path.join(root, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}`,
}

const stages = [
  { name: 'lint', command: 'npm', args: ['run', 'lint'] },
  { name: 'build', command: 'npm', args: ['run', 'build'] },
  { name: 'typecheck', command: 'npm', args: ['run', 'typecheck'] },
  {
    name: 'vitest',
    command: 'vitest',
    args: ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${REPORTS.vitest}`],
  },
  // The built packages in Deno, Bun and workerd (test/runtimes/run.mjs): one count per runtime.
  { name: 'runtimes', command: process.execPath, args: ['test/runtimes/run.mjs'] },
  { name: 'playwright', command: 'playwright', args: ['test'], browser: true },
]

const passed = runStages({ stages, root, env, chromium: chromiumPath(env) })
process.exitCode = passed ? 0 : 1
