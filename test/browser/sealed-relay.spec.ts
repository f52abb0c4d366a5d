/**
 * Sealed bodies (PROFILE §8) between a relay-only agent in real Chromium and a Node agent,
 * through a real relay on its SQLite store, with no sealing option anywhere: relays are
 * untrusted by default (SPEC §5.7.2), so each side seals for the other, each opens what it
 * receives, and nothing the relay writes to disk holds the text.
 *
 * - Relay, certificate, Chromium launch and page serving as in `relay-agent.spec.ts`
 *   (`relay-page.ts`): the page is served from the relay's origin, other origins are refused.
 * - The page (`entries/sealed-relay.ts`) is `createAgent({ storage: indexedDbStorage(), relays })`
 *   from the built packages; it reports `sealed` and the text of what its listener is handed.
 * - The Node agent is `createAgent` with memory storage and a fetch that trusts the dev CA.
 * - The relay's data directory (`relay.sqlite`, its `-wal` and `-shm`) is read byte for byte
 *   while the relay runs and again after it closed: each message's id is there (the scan reads
 *   where messages are kept), its text never is.
 */
import { randomBytes } from 'node:crypto'
import { readdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import type { RelayServer } from '@agentmsg/relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import type { SealedSeen, SealedStart } from './entries/sealed-relay.js'
import { bundleEntry } from './harness.js'
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

const HTML = testPageHtml('agentmsg sealed relay')

/** A text no file could hold by chance: an ASCII marker (searched for as bytes) and non-ASCII. */
function secretText(): { marker: string; text: string } {
  const marker = `marker-${randomBytes(16).toString('hex')}`
  return { marker, text: `${marker} — grüße, 秘密 🔐` }
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await filesUnder(full)))
    else if (entry.isFile()) out.push(full)
  }
  return out
}

/** Files under `dir` (relative names) whose bytes contain `needle` as UTF-8. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const wanted = Buffer.from(needle, 'utf8')
  const found: string[] = []
  for (const file of await filesUnder(dir)) {
    if ((await readFile(file)).includes(wanted)) found.push(path.relative(dir, file))
  }
  return found.sort()
}

test.describe('sealed by default: Chromium agent ↔ Node agent through a real relay (SQLite)', () => {
  test.describe.configure({ mode: 'serial' })

  let dataDir: string
  let relay: RelayServer
  let relayClosed = false
  let browser: Browser
  let page: Page
  let pageAgent: SealedStart
  let node: Agent
  const atNode: ReceivedMessage[] = []
  const nodeErrors: string[] = []
  const relayErrors: string[] = []
  /** Each test's message: its id and the marker of its text. */
  const sent: Array<{ messageId: string; marker: string }> = []

  /** Page calls fail at once on the first page error, console error or bad request. */
  const { problems, report, inPage } = pageFailures('sealed-relay')

  test.beforeAll(async () => {
    const started = await startTestRelay('agentmsg-browser-sealed-', relayErrors)
    ;({ dataDir, relay } = started)
    const { cert, origin } = started

    node = await startNodeAgent(relay.url, cert.ca, atNode, nodeErrors)

    const script = await bundleEntry('sealed-relay')
    browser = await launchTrusting(cert.cert)
    ;({ page } = await openTestPage(browser, origin, report))
    await routeTestPage(page, origin, HTML, script, report)
    await inPage(page.goto(`${origin}${TEST_PATH}/`).then(() => undefined))
    await inPage(page.waitForFunction(() => '__sealedRelay' in globalThis).then(() => undefined))
    pageAgent = await inPage(
      page.evaluate(({ url, db }) => globalThis.__sealedRelay.start(url, db), {
        url: relay.url,
        db: `agentmsg-sealed-${randomBytes(4).toString('hex')}`,
      }),
    )
  })

  test.afterAll(async () => {
    await page?.evaluate(() => globalThis.__sealedRelay.close()).catch(() => {})
    await browser?.close().catch(() => {})
    await node?.close().catch(() => {})
    if (!relayClosed) await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  /** While the relay runs: its database and WAL hold the message's id, not its text. */
  async function expectOnlyCiphertextOnDisk(messageId: string, marker: string) {
    const store = await filesUnder(dataDir)
    const names = store.map((f) => path.relative(dataDir, f))
    expect(names).toEqual(expect.arrayContaining(['relay.sqlite', 'relay.sqlite-wal']))
    expect(await filesContaining(dataDir, messageId)).not.toEqual([])
    expect(await filesContaining(dataDir, marker)).toEqual([])
  }

  test('the page is a secure same-origin context with a did:key agent', () => {
    expect(problems).toEqual([])
    expect(pageAgent.isSecureContext).toBe(true)
    expect(pageAgent.origin).toBe(new URL(relay.url).origin)
    expect(pageAgent.id).toMatch(/^did:key:z6Mk/)
  })

  test('Node → page: sealed by default, opened in Chromium, never plaintext on the relay’s disk', async () => {
    const { marker, text } = secretText()
    const result = await node.send(pageAgent.id, text, { relays: [relay.url] })
    expect(result).toMatchObject({ route: 'relay', relayUrl: relay.url, sealed: true })
    sent.push({ messageId: result.messageId, marker })

    const seen: SealedSeen[] = await inPage(
      page.evaluate(() => globalThis.__sealedRelay.waitForMessages(1)),
    )
    expect(seen).toHaveLength(1)
    expect(seen[0]).toEqual({
      messageId: result.messageId,
      from: node.id,
      text,
      sealed: true,
      transport: 'relay',
      level: 3,
      parts: [{ type: 'text', text }],
    })
    await expectOnlyCiphertextOnDisk(result.messageId, marker)
    expect(await inPage(page.evaluate(() => globalThis.__sealedRelay.errors()))).toEqual([])
  })

  test('page → Node: sealed by default in Chromium, opened in Node, never plaintext on disk', async () => {
    const { marker, text } = secretText()
    const result = await inPage(
      page.evaluate(({ to, t }) => globalThis.__sealedRelay.send(to, t), { to: node.id, t: text }),
    )
    expect(result).toMatchObject({ route: 'relay', relayUrl: relay.url, sealed: true })
    sent.push({ messageId: result.messageId, marker })

    await expect.poll(() => atNode.length, { timeout: 15_000 }).toBe(1)
    const got = atNode[0]!
    expect(got).toMatchObject({ sealed: true, text, from: pageAgent.id, transport: 'relay' })
    expect(got.level).toBe(3)
    expect(got.message.message_id).toBe(result.messageId)
    expect(got.message.body.parts).toEqual([{ type: 'text', text }])
    await expectOnlyCiphertextOnDisk(result.messageId, marker)
    expect(nodeErrors).toEqual([])
  })

  test('after the relay closed, its data directory holds both ids and neither text', async () => {
    expect(sent).toHaveLength(2)
    await inPage(page.evaluate(() => globalThis.__sealedRelay.close()))
    await node.close()
    await relay.close()
    relayClosed = true
    for (const { messageId, marker } of sent) {
      expect(await filesContaining(dataDir, messageId)).toContain('relay.sqlite')
      expect(await filesContaining(dataDir, marker)).toEqual([])
    }
    expect(relayErrors).toEqual([])
    expect(problems).toEqual([])
  })
})
