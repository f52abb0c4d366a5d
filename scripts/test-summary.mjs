// Prints one closing line for the whole `npm test` run ("N passed, N failed"), summing the
// vitest and Playwright JSON reports of this run, so CI logs end with a count a person (or a
// machine) can read without knowing either runner's format. A stage that stopped the run is
// named, and a runner that did not get to run is reported as such.
import { existsSync, readFileSync } from 'node:fs'

/** Report files, relative to the repository root (Playwright's is set in playwright.config.ts). */
export const REPORTS = { vitest: '.tmp/vitest.json', playwright: '.tmp/playwright.json' }

const read = (file) => {
  const url = new URL(`../${file}`, import.meta.url)
  return existsSync(url) ? JSON.parse(readFileSync(url, 'utf8')) : undefined
}

/**
 * Prints the summary; `failed` is the stage that stopped the run (`{ stage, reason }`), if any.
 * Returns whether the run passed.
 */
export function printSummary(failed) {
  const v = read(REPORTS.vitest)
  const p = read(REPORTS.playwright)?.stats
  const passed = (v?.numPassedTests ?? 0) + (p?.expected ?? 0)
  const failures = (v?.numFailedTests ?? 0) + (p?.unexpected ?? 0) + (p?.flaky ?? 0)
  const skipped = (v ? v.numPendingTests + v.numTodoTests : 0) + (p?.skipped ?? 0)
  const vitest = v ? `${v.numPassedTests} passed in ${v.numTotalTestSuites} suites` : 'not run'
  const playwright = p ? `${p.expected} passed` : 'not run'
  console.log(`\nvitest: ${vitest}; playwright: ${playwright}`)
  if (failed) console.log(`stopped at ${failed.stage} (${failed.reason})`)
  console.log(`${passed} passed, ${failures} failed${skipped ? `, ${skipped} skipped` : ''}`)
  return !failed && failures === 0 && passed > 0
}
