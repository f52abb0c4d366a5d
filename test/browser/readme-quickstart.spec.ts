/**
 * The README examples that need a browser, run as written in real Chromium: every ```ts block
 * that test/docs/readme-blocks.ts classes as a browser block (it imports
 * `@agentmsg/storage-indexeddb`), found the same way as the Node test finds the others, so none
 * escapes. Each block is bundled as it stands (esbuild, `browser` condition, the built `dist/`
 * of the packages, as a consumer's bundler would) and loaded in a page served from a real
 * relay's origin (SQLite in a temporary directory, a development certificate this Chromium
 * trusts): the root README's browser quick start says it runs on such a page and takes
 * `location.origin` as its relay.
 *
 * The quick start is then held to what it promises: a Node agent sends to the id it printed,
 * through the relay; the page prints the message (level 3, not yet a known contact) and answers
 * "got it"; after a reload it prints the same id (IndexedDB) and still answers.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { type RelayServer, serveRelay } from '@agentmsg/relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import { allBlocks, type ReadmeBlock, repoRoot } from '../docs/readme-blocks.js'
import { bundleForBrowser } from './harness.js'
import { launchTrusting, routeTestPage, TEST_PATH, testPageHtml } from './relay-page.js'

const DONE = 'readme example: done'
const HTML = testPageHtml('agentmsg README example')
const blocks = allBlocks().filter((b) => b.runtime === 'browser')

/** Bundle a README block as a consumer would: the packages' built `dist/`, never their sources. */
function bundleBlock(block: ReadmeBlock): Promise<string> {
  const sourcefile = `${block.readme}#${block.index}.ts`
  return bundleForBrowser(
    {
      stdin: {
        contents: `${block.code}\nconsole.log(${JSON.stringify(DONE)})\n`,
        resolveDir: repoRoot,
        sourcefile,
        loader: 'ts',
      },
    },
    `README block ${sourcefile}`,
  )
}

test.describe('README browser examples in Chromium, on a page served by a real relay', () => {
  let cert: DevCertificate
  let dataDir: string
  let relay: RelayServer
  let origin: string
  let browser: Browser

  test.beforeAll(async () => {
    cert = await createDevCertificate()
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-readme-browser-'))
    relay = await serveRelay({
      port: 0,
      dataDir,
      tls: { cert: cert.cert, key: cert.key },
      closeTimeoutMs: 1_000,
    })
    origin = new URL(relay.url).origin
    browser = await launchTrusting(cert.cert)
  })

  test.afterAll(async () => {
    await browser?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  /** A page on the relay's origin running `script`; its console lines, problems failing at once. */
  async function openPage(script: string) {
    const context = await browser.newContext()
    await context.grantPermissions(['local-network-access'], { origin })
    const page: Page = await context.newPage()
    const lines: string[] = []
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(`page error: ${err.stack ?? err.message}`))
    page.on('crash', () => problems.push('page crashed'))
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`)
      else lines.push(msg.text())
    })
    await routeTestPage(page, origin, HTML, script, (p) => problems.push(p))
    /** Wait until a console line satisfies `match` (or a problem shows), and return it. */
    const line = async (match: (l: string) => boolean, after = 0): Promise<string> => {
      await expect
        .poll(() => (problems.length > 0 ? 'problem' : lines.slice(after).some(match)), {
          timeout: 30_000,
        })
        .not.toBe(false)
      expect(problems).toEqual([])
      return lines.slice(after).find(match)!
    }
    return { context, page, lines, line }
  }

  test('every browser block of every README is found, and runs to its last line', async () => {
    expect(blocks.map((b) => `${b.readme} (${b.section})`)).toEqual([
      'README.md (Quick start (agent))',
      'packages/storage-indexeddb/README.md ()',
    ])
    for (const block of blocks) {
      const { context, page, line } = await openPage(await bundleBlock(block))
      await page.goto(`${origin}${TEST_PATH}/`)
      await line((l) => l === DONE)
      await context.close()
    }
  })

  test('the agent quick start answers a Node agent through the relay, and keeps its id across a reload', async () => {
    const quickStart = blocks.find((b) => b.readme === 'README.md')!
    const { context, page, lines, line } = await openPage(await bundleBlock(quickStart))
    const node: NodeAgent = await createNodeAgent({
      relays: [relay.url],
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    const replies: string[] = []
    node.on('message', (m) => void replies.push(`${m.level} ${m.text}`))
    try {
      await page.goto(`${origin}${TEST_PATH}/`)
      const id = (await line((l) => l.startsWith('listening as '))).slice('listening as '.length)
      expect(id).toMatch(/^did:key:z6Mk/)
      await line((l) => l === DONE)

      await node.send(id, 'hello', { relays: [relay.url] })
      // What the example's comment promises: verified (level 3), not yet a known contact.
      await line((l) => l === '3 false hello')
      await expect.poll(() => replies, { timeout: 30_000 }).toEqual(['3 got it'])

      // A reload runs the example again: the same identity, from IndexedDB.
      const before = lines.length
      await page.reload()
      const again = await line((l) => l.startsWith('listening as '), before)
      expect(again).toBe(`listening as ${id}`)
      await line((l) => l === DONE, before)
      await node.send(id, 'hello again', { relays: [relay.url] })
      await line((l) => l.endsWith(' hello again'), before)
      await expect.poll(() => replies, { timeout: 30_000 }).toEqual(['3 got it', '3 got it'])
    } finally {
      await node.close()
      await context.close()
    }
  })
})
