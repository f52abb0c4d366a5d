// Prints one closing line for the whole `npm test` run ("N passed, N failed"), summing the
// vitest, runtime-matrix and Playwright JSON reports of this run, so CI logs end with a count a
// person (or a machine) can read without knowing any runner's format. A stage that stopped the
// run is named, and so is a runner that did not get to run, and why.
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Report files, relative to the repository root (Playwright's is set in playwright.config.ts,
 * the runtime matrix's in test/runtimes/run.mjs, which reads it from here).
 */
export const REPORTS = {
  vitest: '.tmp/vitest.json',
  runtimes: '.tmp/report-runtimes.json',
  playwright: '.tmp/playwright.json',
}

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const read = (root, file) => {
  const full = path.join(root, file)
  return existsSync(full) ? JSON.parse(readFileSync(full, 'utf8')) : undefined
}

/**
 * Prints the summary; `failed` is the stage that stopped the run (`{ stage, reason }`), if any,
 * `notRun` the stages left out (`[{ stage, reason }]`). Returns whether the run passed: nothing
 * stopped it, nothing was left out, no test failed, and some test ran.
 */
export function printSummary(
  failed,
  { root = ROOT, notRun = [], log = console.log, env = process.env } = {},
) {
  const v = read(root, REPORTS.vitest)
  const postgres = postgresNote(v, env)
  if (postgres.line) log(postgres.line)
  const p = read(root, REPORTS.playwright)?.stats
  const r = read(root, REPORTS.runtimes)
  const passed = (v?.numPassedTests ?? 0) + (r?.stats.passed ?? 0) + (p?.expected ?? 0)
  const failures =
    (v?.numFailedTests ?? 0) + (r?.stats.failed ?? 0) + (p?.unexpected ?? 0) + (p?.flaky ?? 0)
  const skipped = (v ? v.numPendingTests + v.numTodoTests : 0) + (p?.skipped ?? 0)
  const why = (stage) => notRun.find((n) => n.stage === stage)?.reason
  const vitest = v
    ? `${v.numPassedTests} passed in ${v.numTotalTestSuites} suites`
    : `not run${why('vitest') ? ` (${why('vitest')})` : ''}`
  const playwright = p
    ? `${p.expected} passed`
    : `not run${why('playwright') ? ` (${why('playwright')})` : ''}`
  log(`\nvitest: ${vitest}; playwright: ${playwright}`)
  // Each runtime of the matrix with its own count (a runtime that could not start counts as one
  // failure in the total).
  if (r) log(`runtimes: ${r.runtimes.map(runtimeCount).join('; ')}`)
  if (failed) log(`stopped at ${failed.stage} (${failed.reason})`)
  for (const n of notRun) log(`did not run: ${n.stage} (${n.reason})`)
  log(`${passed} passed, ${failures} failed${skipped ? `, ${skipped} skipped` : ''}`)
  return !failed && notRun.length === 0 && failures === 0 && passed > 0 && postgres.ok
}

/** `deno 2.9.6: 11 passed, 0 failed`, or `workerd: cannot start`. */
function runtimeCount(r) {
  return r.error
    ? `${r.name}: cannot start`
    : `${r.name} ${r.version}: ${r.passed} passed, ${r.failed} failed`
}

/**
 * The PostgreSQL tests (issue 13: files named *postgres*, and the relay's HTTP-level tests
 * again on PostgreSQL) need AGENTMSG_TEST_POSTGRES_URL. Without it they are not run, said in
 * one line, and the run can still pass; with it (`.ci/run` always sets it) they must have run.
 */
function postgresNote(v, env) {
  if (!v) return { ok: true }
  if (env.AGENTMSG_TEST_POSTGRES_URL === undefined) {
    return {
      ok: true,
      line: 'not run here: the PostgreSQL tests (relay store, relay nodes, relay HTTP tests on PostgreSQL): AGENTMSG_TEST_POSTGRES_URL is not set (.ci/run sets it)',
    }
  }
  const ran = (v.testResults ?? [])
    .filter((file) => /postgres/.test(path.basename(file.name)))
    .flatMap((file) => file.assertionResults ?? [])
    .filter((test) => test.status === 'passed').length
  return ran > 0
    ? { ok: true, line: `PostgreSQL: ${ran} tests of the PostgreSQL store and relay nodes passed` }
    : {
        ok: false,
        line: 'PostgreSQL: AGENTMSG_TEST_POSTGRES_URL is set but no PostgreSQL test passed: the run fails',
      }
}
