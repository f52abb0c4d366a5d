// Browser cold start of a relay-only agent (`npm run bench -- cold-start`): in Chromium, on
// loopback, against a real relay (`serveRelay`, SQLite, TLS from a development CA) that also
// serves the page and its own bundle (esbuild, split and minified as an application builds it,
// each file gzipped as the browser downloads it). Measured in the page from navigation:
//   ready  — IndexedDB open, keys loaded (cold: generated and stored), the relay stream open;
//   first  — the first message handed to the page's listener: a Node agent sends it once the
//            page is ready (sealed for the page by default through a relay, PROFILE §8, so
//            the first message also loads the sealed-box chunks).
// Cold runs each get a fresh browser context (empty IndexedDB); the warm run reloads the last
// one (its keys are in IndexedDB; scripts are downloaded again: the page is served no-store).
// No target was given: every row is context. Bundle sizes are reported beside the timings.
import { createHash, X509Certificate } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { createAgent } from '@agentmsg/client'
import { memoryStorage } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { chromium } from '@playwright/test'
import { build } from 'esbuild'
import { lazyTargets, sizesOf, staticClosure } from '../scripts/bundle-groups.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const PAGE = '/bench/'
const KB = 1024

// The page's script: a relay-only agent as an application makes one. The stream fetch is
// wrapped only to note when the relay's stream answered.
const PAGE_SCRIPT = `import { createAgent } from '@agentmsg/client'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'
const b = (window.bench = { at: {} })
const mark = (k) => { b.at[k] ??= performance.now() }
const relay = new URLSearchParams(location.search).get('relay')
const streamFetch = async (...args) => { const r = await fetch(...args); mark('stream'); return r }
const agent = await createAgent({ storage: await indexedDbStorage({ dbName: 'bench' }), relays: [relay], streamFetch })
mark('created')
agent.on('message', (m) => { mark('message'); b.sealed = m.sealed; b.text = m.text; b.epoch = performance.timeOrigin + performance.now() })
b.id = agent.id
`

/** The page's bundle, split as an application bundles it: file name → bytes, and sizes. */
async function bundlePage() {
  const result = await build({
    stdin: { contents: PAGE_SCRIPT, resolveDir: root, sourcefile: 'bench-page.js' },
    absWorkingDir: root,
    bundle: true,
    platform: 'browser',
    conditions: ['browser'],
    format: 'esm',
    target: 'es2022',
    minify: true,
    splitting: true,
    outdir: path.join(root, '.tmp', 'bench-page'),
    tsconfigRaw: {},
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const outputs = result.metafile.outputs
  const lazy = lazyTargets(outputs)
  const entry = Object.keys(outputs).find((k) => outputs[k].entryPoint && !lazy.has(k))
  const contents = new Map(result.outputFiles.map((f) => [path.relative(root, f.path), f.contents]))
  const gzip = (b) => gzipSync(b, { level: 9 })
  const files = new Map(
    [...contents].map(([name, bytes]) => [path.basename(name), { bytes, gzip: gzip(bytes) }]),
  )
  return {
    entry: path.basename(entry),
    files,
    upFront: sizesOf(contents, staticClosure(outputs, [entry]), gzip),
    all: sizesOf(contents, Object.keys(outputs), gzip),
  }
}

/** The relay's `intercept`: the page and its scripts, gzipped, no-store, same origin. */
function servePage(bundle) {
  const html = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="module" src="${PAGE}${bundle.entry}"></script></head><body></body></html>`
  return (request) => {
    const { pathname } = new URL(request.url)
    if (!pathname.startsWith(PAGE)) return undefined
    const headers = { 'cache-control': 'no-store' }
    if (pathname === PAGE) {
      return new Response(html, { headers: { ...headers, 'content-type': 'text/html' } })
    }
    const file = bundle.files.get(pathname.slice(PAGE.length))
    if (!file) return new Response('not found', { status: 404 })
    return new Response(file.gzip, {
      headers: { ...headers, 'content-type': 'text/javascript', 'content-encoding': 'gzip' },
    })
  }
}

const spkiHash = (pem) =>
  createHash('sha256')
    .update(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64')

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/**
 * One navigation: the page until ready, then one message from `node`. Returns the page's
 * marks (ms from navigation), the send → handed-over time, and the script bytes it downloaded.
 */
async function navigate(page, url, node, relayUrl, reload) {
  if (reload) await page.reload()
  else await page.goto(url)
  await page.waitForFunction(() => window.bench?.at.created && window.bench.at.stream, null, {
    timeout: 60_000,
  })
  const id = await page.evaluate(() => window.bench.id)
  const sentAt = Date.now()
  await node.send(id, 'first message', { relays: [relayUrl] })
  await page.waitForFunction(() => window.bench.at.message, null, { timeout: 60_000 })
  const b = await page.evaluate(() => ({
    ...window.bench,
    scripts: performance
      .getEntriesByType('resource')
      .filter((e) => e.name.endsWith('.js'))
      .map((e) => ({ at: e.responseEnd, bytes: e.encodedBodySize })),
  }))
  const ready = Math.max(b.at.created, b.at.stream)
  const bytesBy = (t) => b.scripts.filter((s) => s.at <= t).reduce((n, s) => n + s.bytes, 0)
  if (b.text !== 'first message') throw new Error(`the page got ${JSON.stringify(b.text)}`)
  return {
    ready,
    first: b.at.message,
    sendToReceive: b.epoch - sentAt,
    sealed: b.sealed,
    // Scripts whose download ended by then (+ the entry, counted in both).
    readyBytes: bytesBy(ready),
    firstBytes: bytesBy(b.at.message),
  }
}

export async function benchBrowserColdStart({
  runs = Number(process.env.BENCH_COLD_RUNS ?? 5),
  executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
} = {}) {
  const bundle = await bundlePage()
  const cert = await createDevCertificate()
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-bench-cold-'))
  const relay = await serveRelay({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    tls: { cert: cert.cert, key: cert.key },
    allowPrivate: ['127.0.0.1'],
    intercept: servePage(bundle),
    closeTimeoutMs: 1_000,
  })
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const node = await createAgent({
    storage: memoryStorage(),
    relays: [relay.url],
    sendOnly: true,
    fetch: createNodeFetch({ ca: cert.ca, addressPolicy, timeoutMs: 10_000 }),
  })
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--ignore-certificate-errors-spki-list=${spkiHash(cert.cert)}`,
    ],
  })
  const origin = new URL(relay.url).origin
  const url = `${origin}${PAGE}?relay=${encodeURIComponent(relay.url)}`
  const cold = []
  let warm
  try {
    for (let i = 0; i < runs; i++) {
      const context = await browser.newContext()
      const page = await context.newPage()
      cold.push(await navigate(page, url, node, relay.url, false))
      // The last context again, keys in IndexedDB: the warm run.
      if (i === runs - 1) warm = await navigate(page, url, node, relay.url, true)
      await context.close()
    }
  } finally {
    await browser.close()
    await node.close()
    await relay.close()
    await rm(dataDir, { recursive: true, force: true })
  }
  const ms = (name, xs) => ({ name, value: median(xs), unit: 'ms', target: 'context' })
  const kb = (name, bytes) => ({ name, value: bytes / KB, unit: 'KB', target: 'context' })
  const c = (k) => cold.map((r) => r[k])
  const sizes = (what, s) => [
    kb(`${what}: each file gzipped as served (${s.files} files)`, s.served),
    kb(`${what}: as one gzip stream`, s.gzip),
  ]
  return [
    ...sizes('page bundle up front', bundle.upFront),
    ...sizes('page bundle, every chunk', bundle.all),
    ms(`cold (fresh context, median of ${runs}): navigation → agent ready`, c('ready')),
    ms(`cold: navigation → first message (${cold[0].sealed ? 'sealed' : 'plain'})`, c('first')),
    ms('cold: first message, Node send → handed to the page', c('sendToReceive')),
    kb('cold: scripts downloaded by ready (gzip, as served)', median(c('readyBytes'))),
    kb('cold: scripts downloaded by the first message', median(c('firstBytes'))),
    ms('warm (keys in IndexedDB, one run): navigation → agent ready', [warm.ready]),
    ms('warm: navigation → first message', [warm.first]),
  ]
}
