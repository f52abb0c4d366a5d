// Prints one closing line for the whole `npm test` run ("N passed, N failed"), summing the
// vitest and Playwright JSON reports of this run, so CI logs end with a count a person (or a
// machine) can read without knowing either runner's format.
import { readFileSync } from 'node:fs'

const read = (f) => JSON.parse(readFileSync(new URL(`../.tmp/${f}`, import.meta.url), 'utf8'))
const v = read('vitest.json')
const p = read('playwright.json')
const passed = v.numPassedTests + (p.stats?.expected ?? 0)
const failed = v.numFailedTests + (p.stats?.unexpected ?? 0) + (p.stats?.flaky ?? 0)
const skipped = v.numPendingTests + v.numTodoTests + (p.stats?.skipped ?? 0)
console.log(`\nvitest: ${v.numPassedTests} passed in ${v.numTotalTestSuites} suites; playwright: ${p.stats?.expected ?? 0} passed`)
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
if (failed > 0 || passed === 0) process.exitCode = 1
