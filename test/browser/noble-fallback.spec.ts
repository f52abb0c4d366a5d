/**
 * The pure-JavaScript Ed25519 fallback in real Chromium (issue 12): a page whose WebCrypto has
 * no Ed25519 still runs a relay-only agent, because `#crypto-default` (browser) probes WebCrypto
 * and then imports the `@noble/ed25519` provider lazily.
 *
 * - An init script makes `crypto.subtle` refuse every Ed25519 algorithm (`importKey`,
 *   `generateKey`, `sign`, `verify`) before any page script runs: a browser without Secure
 *   Curves, as Chrome was before 137.
 * - The page is bundled the way an application bundles it: esbuild with code splitting, the
 *   built packages through the `browser` condition (`sideEffects: false`, so esbuild drops the
 *   bare `import './chunk-….js'` lines of core's dist and warns about them). Its chunks are
 *   served one by one, and the spec checks that the page fetched the chunk holding
 *   `@noble/ed25519`: the fallback is a real lazy chunk, and it loads.
 * - In the page: RFC 8032 §7.1 and Wycheproof through the default provider, which then names
 *   itself `noble`; a signMessage → verifyMessage round trip. Then a did:key agent
 *   (`createAgent`, IndexedDB) exchanges messages with a Node agent through a real relay
 *   (SQLite), as in `sealed-relay.spec.ts`: relay auth, signing and verifying all on noble.
 */
import { readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import type { RelayServer } from '@agentmsg/relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import { build } from 'esbuild'
import type { FallbackProbe, FallbackSeen } from './entries/noble-fallback.js'
import { repoRoot, vectorsDir } from './harness.js'
import {
  launchTrusting,
  openTestPage,
  pageFailures,
  routeTestPage,
  startNodeAgent,
  startTestRelay,
  TEST_PATH,
  testPageHtml,
} from './relay-page.js'

const HTML = testPageHtml('agentmsg noble fallback')

/** Runs in the page before any of its scripts: WebCrypto without Ed25519. */
function disableWebCryptoEd25519(): void {
  const isEd25519 = (alg: unknown) => {
    const name = typeof alg === 'string' ? alg : (alg as { name?: unknown } | null)?.name
    return typeof name === 'string' && name.toLowerCase() === 'ed25519'
  }
  const proto = SubtleCrypto.prototype as unknown as Record<string, (...a: unknown[]) => unknown>
  // The argument that names the algorithm, per method.
  const algorithmArg: Record<string, number> = { importKey: 2, generateKey: 0, sign: 0, verify: 0 }
  for (const [method, at] of Object.entries(algorithmArg)) {
    const original = proto[method]!
    Object.defineProperty(proto, method, {
      configurable: true,
      writable: true,
      value(this: SubtleCrypto, ...args: unknown[]) {
        if (isEd25519(args[at])) {
          return Promise.reject(
            new DOMException('Ed25519 disabled by the test', 'NotSupportedError'),
          )
        }
        return original.apply(this, args)
      },
    })
  }
}

interface SplitBundle {
  /** Output file name (`bundle.js`, `chunk-….js`) → text. */
  files: Map<string, string>
  /** The chunks that hold `@noble/ed25519`. */
  nobleChunks: string[]
  /** The chunks the page loads up front (the entry and its static imports). */
  upFront: string[]
}

/** The entry bundled as an application's bundler does it, split into chunks. */
async function bundleSplit(): Promise<SplitBundle> {
  const outdir = path.join(repoRoot, '.tmp', 'noble-fallback-bundle')
  const result = await build({
    entryPoints: { bundle: path.join(repoRoot, 'test/browser/entries/noble-fallback.ts') },
    absWorkingDir: repoRoot,
    bundle: true,
    splitting: true,
    platform: 'browser',
    format: 'esm',
    conditions: ['browser'],
    target: 'es2022',
    tsconfigRaw: {},
    outdir,
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const fromSrc = Object.keys(result.metafile.inputs).filter((p) =>
    /^packages\/(?!conformance\/)[^/]+\/src\//.test(p),
  )
  if (fromSrc.length > 0) throw new Error(`bundle reached package sources: ${fromSrc.join(', ')}`)
  const files = new Map(result.outputFiles.map((f) => [path.basename(f.path), f.text]))
  const outputs = result.metafile.outputs
  const name = (out: string) => path.basename(out)
  const nobleChunks = Object.entries(outputs)
    .filter(([, o]) =>
      Object.keys(o.inputs).some((i) => i.includes('node_modules/@noble/ed25519/')),
    )
    .map(([out]) => name(out))
  const upFront = new Set<string>()
  const walk = (out: string) => {
    if (upFront.has(name(out))) return
    upFront.add(name(out))
    for (const imp of outputs[out]!.imports) if (imp.kind === 'import-statement') walk(imp.path)
  }
  walk(Object.keys(outputs).find((k) => name(k) === 'bundle.js')!)
  return { files, nobleChunks, upFront: [...upFront] }
}

test.describe('WebCrypto without Ed25519: the noble fallback in Chromium, through a real relay', () => {
  test.describe.configure({ mode: 'serial' })

  let dataDir: string
  let relay: RelayServer
  let browser: Browser
  let page: Page
  let bundle: SplitBundle
  let pageId: string
  let node: Agent
  const atNode: ReceivedMessage[] = []
  const nodeErrors: string[] = []
  const relayErrors: string[] = []
  /** Chunks the page fetched, in order. */
  const fetched: string[] = []

  /** Page calls fail at once on the first page error, console error or bad request. */
  const { problems, report, inPage } = pageFailures('noble-fallback')

  test.beforeAll(async () => {
    bundle = await bundleSplit()
    const started = await startTestRelay('agentmsg-browser-noble-', relayErrors)
    ;({ dataDir, relay } = started)
    const { cert, origin } = started

    node = await startNodeAgent(relay.url, cert.ca, atNode, nodeErrors)

    browser = await launchTrusting(cert.cert)
    ;({ page } = await openTestPage(browser, origin, report))
    await page.addInitScript(disableWebCryptoEd25519)
    // The page's chunks are served one by one; note which it fetched.
    await routeTestPage(
      page,
      origin,
      HTML,
      (name) => {
        const file = bundle.files.get(name)
        if (file !== undefined) fetched.push(name)
        return file
      },
      report,
    )
    await inPage(page.goto(`${origin}${TEST_PATH}/`).then(() => undefined))
    await inPage(page.waitForFunction(() => '__nobleFallback' in globalThis).then(() => undefined))
  })

  test.afterAll(async () => {
    await page?.evaluate(() => globalThis.__nobleFallback.close()).catch(() => {})
    await browser?.close().catch(() => {})
    await node?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test('noble is a lazy chunk, fetched once WebCrypto is found without Ed25519', async () => {
    expect(bundle.nobleChunks.length).toBeGreaterThan(0)
    for (const chunk of bundle.nobleChunks) expect(bundle.upFront).not.toContain(chunk)
    const vectors = {
      rfc8032: JSON.parse(
        await readFile(path.join(vectorsDir, 'ed25519-rfc8032-7.1.json'), 'utf8'),
      ),
      wycheproof: JSON.parse(
        await readFile(path.join(vectorsDir, 'wycheproof-ed25519_test.json'), 'utf8'),
      ),
    }
    const probe: FallbackProbe = await inPage(
      page.evaluate((v) => globalThis.__nobleFallback.probe(v), vectors),
    )
    expect(probe.importKeyRefused).toBe(true)
    expect(probe.webCryptoSupportsEd25519).toBe(false)
    expect(probe.providerName).toEqual({ beforeUse: 'auto', afterUse: 'noble' })
    expect(probe.vectors.map((r) => r.file)).toEqual([
      'ed25519-rfc8032-7.1.json',
      'wycheproof-ed25519_test.json',
    ])
    for (const r of probe.vectors) {
      expect(r.failures, r.file).toEqual([])
      expect(r.total, r.file).toBeGreaterThan(0)
    }
    expect(probe.roundTrip).toEqual({ level: 3, alteredRefused: true })
    for (const chunk of bundle.nobleChunks) expect(fetched).toContain(chunk)
  })

  test('a relay-only agent starts on noble', async () => {
    const started = await inPage(
      page.evaluate(({ url, db }) => globalThis.__nobleFallback.start(url, db), {
        url: relay.url,
        db: `agentmsg-noble-${Date.now()}`,
      }),
    )
    expect(started.id).toMatch(/^did:key:z6Mk/)
    expect(started.providerName).toBe('noble')
    pageId = started.id
  })

  test('Node → page: the page verifies the Node agent’s signature on noble (level 3)', async () => {
    const result = await node.send(pageId, 'to the page without WebCrypto Ed25519', {
      relays: [relay.url],
    })
    expect(result).toMatchObject({ route: 'relay', relayUrl: relay.url })
    const seen: FallbackSeen[] = await inPage(
      page.evaluate(() => globalThis.__nobleFallback.waitForMessages(1)),
    )
    expect(seen).toEqual([
      {
        messageId: result.messageId,
        from: node.id,
        text: 'to the page without WebCrypto Ed25519',
        sealed: true,
        level: 3,
      },
    ])
  })

  test('page → Node: signed on noble, verified by the Node agent (level 3)', async () => {
    const result = await inPage(
      page.evaluate(({ to, t }) => globalThis.__nobleFallback.send(to, t), {
        to: node.id,
        t: 'from the page, signed by noble',
      }),
    )
    expect(result).toMatchObject({ route: 'relay', relayUrl: relay.url })
    await expect.poll(() => atNode.length, { timeout: 15_000 }).toBe(1)
    expect(atNode[0]).toMatchObject({
      from: pageId,
      text: 'from the page, signed by noble',
      level: 3,
      transport: 'relay',
    })
    expect(atNode[0]!.message.message_id).toBe(result.messageId)
    expect(await inPage(page.evaluate(() => globalThis.__nobleFallback.errors()))).toEqual([])
    expect(nodeErrors).toEqual([])
    expect(relayErrors).toEqual([])
    expect(problems).toEqual([])
  })
})
