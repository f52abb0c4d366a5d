// The stages of `npm test` and how they run: each in order, stopping at the first that fails,
// the browser stage left out (and said so in one line) when there is no Chromium to run it in,
// and one summary line at the end whatever happened (./test-summary.mjs). scripts/test.mjs
// runs the real stages; test/tooling/npm-test.test.ts runs this with stand-in stages.
import { spawnSync } from 'node:child_process'
import { accessSync, constants, rmSync } from 'node:fs'
import path from 'node:path'
import { printSummary, REPORTS } from './test-summary.mjs'

/** Where playwright.config.ts looks for Chromium (Playwright cannot download its own here). */
export const chromiumPath = (env = process.env) => env.CHROMIUM_PATH || '/usr/bin/chromium'

/** `undefined` when Chromium is there to run; else the one line that says how to get it. */
export function checkChromium(file) {
  try {
    accessSync(file, constants.X_OK)
    return undefined
  } catch {
    return `Chromium not found at ${file}: install it with \`apt-get install chromium\` (Debian) or set CHROMIUM_PATH to a Chromium binary; the browser stage will not run`
  }
}

/**
 * Run `stages` (`{ name, command, args, browser? }`) in `root`. A `browser` stage is not run
 * when `chromium` (a path) is missing. Prints the summary; returns whether the run passed
 * (every stage ran and passed, and the reports count no failure).
 */
export function runStages({ stages, root, env = process.env, chromium, log = console.log }) {
  // A report left by an earlier run must not be counted as this run's.
  for (const file of Object.values(REPORTS)) rmSync(path.join(root, file), { force: true })
  const missing = chromium === undefined ? undefined : checkChromium(chromium)
  if (missing) log(missing)
  let failed
  const notRun = []
  for (const { name, command, args, browser } of stages) {
    if (browser && missing) {
      notRun.push({ stage: name, reason: `no Chromium at ${chromium}` })
      continue
    }
    log(`\n> ${name}: ${command} ${args.join(' ')}`)
    const { status, signal, error } = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' })
    if (status !== 0) {
      failed = {
        stage: name,
        reason: error?.message ?? (signal ? `killed by ${signal}` : `exit ${status}`),
      }
      break
    }
  }
  return printSummary(failed, { root, notRun, log, env })
}
