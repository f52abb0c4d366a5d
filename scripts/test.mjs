#!/usr/bin/env node
/**
 * `npm test`: every stage in order, stopping at the first that fails, then one summary line
 * (scripts/test-summary.mjs) whether the run passed or not, so a CI log always ends with a
 * count and the name of the stage that stopped it.
 *
 *   lint       biome ci: formatting, import order and lint rules (biome.jsonc); read-only
 *   build      tsup + the bundle-size/publint guard (scripts/check-build.mjs)
 *   typecheck  the Node and the browser tsconfig
 *   vitest     unit and integration tests, against the sources
 *   playwright the browser suite, against the built dist/
 */
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { printSummary, REPORTS } from './test-summary.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
// The local binaries, also when this file is run directly rather than through `npm test`.
const env = {
  ...process.env,
  PATH: `${path.join(root, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}`,
}

const STAGES = [
  ['lint', 'npm', ['run', 'lint']],
  ['build', 'npm', ['run', 'build']],
  ['typecheck', 'npm', ['run', 'typecheck']],
  [
    'vitest',
    'vitest',
    ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${REPORTS.vitest}`],
  ],
  ['playwright', 'playwright', ['test']],
]

// A report left by an earlier run must not be counted as this run's.
for (const file of Object.values(REPORTS))
  rmSync(new URL(`../${file}`, import.meta.url), { force: true })

let failed
for (const [stage, command, args] of STAGES) {
  console.log(`\n> ${stage}: ${command} ${args.join(' ')}`)
  const { status, signal, error } = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' })
  if (status !== 0) {
    failed = {
      stage,
      reason: error?.message ?? (signal ? `killed by ${signal}` : `exit ${status}`),
    }
    break
  }
}
process.exitCode = printSummary(failed) ? 0 : 1
