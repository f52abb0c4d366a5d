/**
 * Browser harness: bundle an entry file for the browser with esbuild and run it in a page served
 * entirely by `page.route`, with no network server (ky `test/browser.ts`, jose `tap/.browser.ts`).
 *
 * - The entry is bundled with `platform: 'browser'` and the `browser` condition, so
 *   `@agentmsg/*` resolve through node_modules to `packages/*\/dist` (the built packages, never
 *   `src`), and `#…` platform imports pick their browser files.
 * - The page lives at `https://agentmsg.test/`: an https origin is a secure context, so
 *   `crypto.subtle` exists. Every other origin is refused and recorded as a failure.
 * - Published vectors are served read-only from `test/vectors` at
 *   `/vectors/<file>`, so entries `fetch()` them instead of inlining half a megabyte of data.
 * - An entry publishes its results with `publishResults()` (`entries/_page.ts`); `runEntry`
 *   waits for them, and fails on any page error, console error or refused request.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Page, Route } from '@playwright/test'
import { type BuildOptions, build, type Metafile } from 'esbuild'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const vectorsDir = path.resolve(repoRoot, 'test/vectors')
export const ORIGIN = 'https://agentmsg.test'

const entriesDir = path.join(repoRoot, 'test/browser/entries')
const bundles = new Map<string, Promise<string>>()

/**
 * Bundle `test/browser/entries/<name>.ts` for the browser (cached per worker). Fails if the
 * bundle pulled in any package source file: the browser suite must exercise `dist/`.
 */
export function bundleEntry(name: string): Promise<string> {
  let pending = bundles.get(name)
  if (!pending) {
    pending = bundle(name)
    bundles.set(name, pending)
  }
  return pending
}

function bundle(name: string): Promise<string> {
  return bundleForBrowser({ entryPoints: [path.join(entriesDir, `${name}.ts`)] }, `entry ${name}`)
}

/**
 * Bundle for the browser as a consumer's bundler does — through package.json conditions alone
 * (`browser`, never `@agentmsg/source`; tsconfig.json is never read), so the built packages are
 * tested — and fail if the bundle pulled in a package source file. `input`: `entryPoints` or
 * `stdin`.
 */
export async function bundleForBrowser(
  input: Pick<BuildOptions, 'entryPoints' | 'stdin'>,
  label: string,
): Promise<string> {
  const result = await build({
    ...input,
    absWorkingDir: repoRoot,
    bundle: true,
    platform: 'browser',
    format: 'esm',
    conditions: ['browser'],
    target: 'es2022',
    tsconfigRaw: {},
    write: false,
    metafile: true,
    sourcemap: 'inline',
    logLevel: 'silent',
  })
  assertBuiltPackagesOnly(label, result.metafile)
  const out = result.outputFiles[0]
  if (!out) throw new Error(`esbuild produced no output for ${label}`)
  return out.text
}

// Type-only imports of `src` are erased; a runtime one would silently test sources instead of
// the published build, so it is an error. The private test kit (`@agentmsg/conformance`) has
// no build: its sources are what the entries run.
function assertBuiltPackagesOnly(label: string, metafile: Metafile): void {
  const fromSrc = Object.keys(metafile.inputs).filter((p) =>
    /^packages\/(?!conformance\/)[^/]+\/src\//.test(p),
  )
  if (fromSrc.length > 0) {
    throw new Error(`${label} bundles package sources instead of dist/:\n  ${fromSrc.join('\n  ')}`)
  }
}

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>agentmsg browser harness</title>
<link rel="icon" href="data:,">
<script type="module" src="/bundle.js"></script>
</head><body></body></html>`

export interface RunOptions {
  /** How long to wait for the entry's results. @default 90_000 */
  timeout?: number
}

/**
 * Serve the bundled entry `name` on `page`, load it, and resolve with what it published.
 * Rejects on the first page error, console error or request to another origin.
 */
export async function runEntry<T>(page: Page, name: string, opts: RunOptions = {}): Promise<T> {
  const script = await bundleEntry(name)
  const problems: string[] = []
  let fail: (reason: Error) => void = () => {}
  const failed = new Promise<never>((_, reject) => {
    fail = reject
  })
  failed.catch(() => {}) // observed through Promise.race below
  const report = (problem: string) => {
    problems.push(problem)
    fail(new Error(`browser entry ${name}: ${problem}`))
  }

  page.on('pageerror', (err) => report(`page error: ${err.stack ?? err.message}`))
  page.on('crash', () => report('page crashed'))
  page.on('console', (msg) => {
    if (msg.type() === 'error') report(`console error: ${msg.text()}`)
  })

  // Routes registered later take precedence: the catch-all refuses anything not ours.
  await page.route('**/*', (route) => {
    report(`unexpected request to ${route.request().url()}`)
    return route.abort('blockedbyclient')
  })
  await page.route(`${ORIGIN}/**`, (route) => serve(route, script, report))

  await page.goto(`${ORIGIN}/`)
  const timeout = opts.timeout ?? 90_000
  const results = await Promise.race([
    page
      .waitForFunction(() => '__agentmsgResults' in globalThis, undefined, { timeout })
      .then(() =>
        page.evaluate(
          () => (globalThis as { __agentmsgResults?: Promise<unknown> }).__agentmsgResults,
        ),
      ),
    failed,
  ])
  if (problems.length > 0) {
    throw new Error(`browser entry ${name} reported problems:\n${problems.join('\n')}`)
  }
  return results as T
}

async function serve(route: Route, script: string, report: (p: string) => void): Promise<void> {
  const { pathname } = new URL(route.request().url())
  if (pathname === '/') {
    return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: HTML })
  }
  if (pathname === '/bundle.js') {
    return route.fulfill({
      status: 200,
      contentType: 'text/javascript; charset=utf-8',
      body: script,
    })
  }
  const vector = /^\/vectors\/([A-Za-z0-9._-]+)$/.exec(pathname)?.[1]
  if (vector && !vector.startsWith('.')) {
    try {
      const body = await readFile(path.join(vectorsDir, vector))
      const contentType = vector.endsWith('.json')
        ? 'application/json'
        : 'text/plain; charset=utf-8'
      return route.fulfill({ status: 200, contentType, body })
    } catch (err) {
      report(`cannot read vector file ${vector} from ${vectorsDir}: ${String(err)}`)
      return route.fulfill({ status: 404, body: 'not found' })
    }
  }
  report(`no such harness resource: ${pathname}`)
  return route.fulfill({ status: 404, body: 'not found' })
}
