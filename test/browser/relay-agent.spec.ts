/**
 * A relay-only agent in real Chromium talks to a Node agent through a real relay.
 *
 * - The relay (`serveRelay`, SQLite in a temporary directory) listens on 127.0.0.1 with a
 *   development certificate made here. This spec launches its own Chromium that trusts only that
 *   certificate's key (`--ignore-certificate-errors-spki-list`), instead of turning certificate
 *   checks off.
 * - The page is served FROM THE RELAY'S ORIGIN: `page.route` answers `/__test/**` only and every
 *   other relay request reaches the real relay, so page and relay are same-origin (no CORS, no
 *   private-network-access preflights between a public and a loopback origin). Requests to any
 *   other origin are refused and fail the test.
 * - The page (`entries/relay-agent.ts`, bundled from `packages/*\/dist` with browser conditions)
 *   makes a did:key with WebCrypto and opens it as an `Agent` (`createAgent` with only
 *   `relayTransport`), first streaming its mailbox over SSE, then, reopened on the same storage,
 *   over WebSocket; its receive pipeline verifies every message and it answers each with
 *   `reply()`, through the relay. The transport's `fetch` and `WebSocket` are wrapped, so the
 *   page reports which transport carried each message, its cursor, and the acknowledgements.
 * - The Node agent (this process) publishes to the page's mailbox with the relay client,
 *   streams its own mailbox for the replies through core's `receive` pipeline, and checks their
 *   content and did:key signatures (level 3), then verifies them once more on its own.
 */
import { rm } from 'node:fs/promises'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type Message,
  type Signer,
  signMessage,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { ReplayGuard, receive, verifyMessage } from '@agentmsg/core/receive'
import type { RelayServer } from '@agentmsg/relay'
import { createRelayClient, type RelayClient } from '@agentmsg/transport-relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import type { AgentInfo, Mode, PhaseResult } from './entries/relay-agent.js'
import { bundleEntry } from './harness.js'
import {
  launchTrusting,
  nodeRelayTransport,
  openTestPage,
  pageFailures,
  routeTestPage,
  startTestRelay,
  TEST_PATH,
  testPageHtml,
} from './relay-page.js'

const HTML = testPageHtml('agentmsg relay agent')

/** Messages the Node agent sends per phase (more than one: order and acks are checked too). */
const PER_PHASE = 2

interface Reply {
  /** As the pipeline handed it over: the body opened. */
  message: Message
  /** As the relay delivered it: the body sealed, the signatures over it. */
  wire: unknown
  sealed: boolean | 'not-for-me'
  verified: Awaited<ReturnType<typeof verifyMessage>>
}

test.describe('relay-only agent in Chromium ↔ Node agent through a real relay', () => {
  test.describe.configure({ mode: 'serial' })

  let dataDir: string
  let relay: RelayServer
  let browser: Browser
  let page: Page
  let pageAgent: AgentInfo
  let nodeDid: string
  let nodeSigner: Signer
  let nodeSeed: Uint8Array
  let nodeClient: RelayClient
  /** The page's mailbox subscription, as its agent stored it in the first phase. */
  let pageSubscription: unknown
  const relayErrors: string[] = []

  /** Page calls fail at once on the first page error, console error or bad request. */
  const { problems, report, inPage } = pageFailures('relay-agent')

  test.beforeAll(async () => {
    const started = await startTestRelay('agentmsg-browser-relay-', relayErrors)
    ;({ dataDir, relay } = started)
    const { cert, origin } = started

    // Node agent: relay-only as well, trusting the dev certificate as its CA.
    const keys = await generateKeyPair()
    nodeDid = didKeyFromPublicKey(keys.publicKey)
    nodeSigner = ed25519Signer(keys)
    nodeSeed = keys.secretKey
    const ca = cert.ca
    nodeClient = createRelayClient({
      relayUrl: relay.url,
      agent: nodeDid,
      signer: nodeSigner,
      ...nodeRelayTransport(ca),
    })
    await nodeClient.subscribe()

    const script = await bundleEntry('relay-agent')
    browser = await launchTrusting(cert.cert)
    // The local-network-access grant lets the page's WebSocket reach 127.0.0.1 (`openTestPage`).
    ;({ page } = await openTestPage(browser, origin, report))
    await routeTestPage(page, origin, HTML, script, report)

    await inPage(page.goto(`${origin}${TEST_PATH}/`).then(() => undefined))
    await inPage(page.waitForFunction(() => '__relayAgent' in globalThis).then(() => undefined))
    pageAgent = await inPage(page.evaluate((url) => globalThis.__relayAgent.init(url), relay.url))
  })

  test.afterAll(async () => {
    await page?.close().catch(() => {})
    await browser?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test('the page is a secure same-origin context with a WebCrypto did:key agent', () => {
    expect(problems).toEqual([])
    expect(pageAgent.isSecureContext).toBe(true)
    expect(pageAgent.origin).toBe(new URL(relay.url).origin)
    expect(pageAgent.provider).toBe('webcrypto')
    expect(pageAgent.did).toMatch(/^did:key:z6Mk/)
    expect(pageAgent.keyId.startsWith(`${pageAgent.did}#`)).toBe(true)
    expect(pageAgent.did).not.toBe(nodeDid)
  })

  for (const mode of ['sse', 'ws'] as const) {
    test(`${mode}: the page receives and verifies, replies through the relay, Node verifies the reply`, async () => {
      const replies: Reply[] = []
      const nodeErrors: string[] = []
      // Node reads its own mailbox over the same transport as the page, for symmetry; the
      // relay hands entries over unchecked, so each goes through core's receive pipeline.
      const replay = new ReplayGuard()
      const nodeStream = nodeClient.stream(
        async ({ value }) => {
          const result = await receive(
            { body: value },
            {
              resolver: createKeyResolver(),
              replay,
              now: Date.now,
              addressee: { agent: nodeDid },
              // The page's agent seals its replies through the relay (PROFILE §8).
              opener: {
                agent: nodeDid,
                ed25519Seed: (keyId) => (keyId === nodeSigner.keyId ? nodeSeed : undefined),
              },
            },
          )
          if (result.status === 'accepted') {
            replies.push({
              message: result.message,
              wire: value,
              sealed: result.sealed,
              verified: result.verified,
            })
          } else {
            nodeErrors.push(`${result.status}: ${'error' in result ? String(result.error) : ''}`)
          }
        },
        { mode, onError: (e) => nodeErrors.push(String(e)) },
      )
      try {
        // The page's stream is connected first, so the messages arrive live on it.
        await inPage(
          page.evaluate(({ m, n }) => globalThis.__relayAgent.start(m, n), {
            m: mode as Mode,
            n: PER_PHASE,
          }),
        )

        const sent: Message[] = []
        for (let i = 1; i <= PER_PHASE; i++) {
          const m = await signMessage(
            createMessage({
              from: nodeDid,
              to: pageAgent.did,
              conversationId: `browser-${mode}-${i}`,
              sequence: 0,
              phase: 'request',
              contentType: 'text/plain',
              text: `hello over ${mode} #${i}`,
              // A relay-only agent is reached through the relays it names.
              relays: [relay.url],
            }),
            nodeSigner,
          )
          expect(await nodeClient.publish(m)).toEqual({ messageId: m.message_id })
          sent.push(m)
        }

        const result: PhaseResult = await inPage(
          page.evaluate(() => globalThis.__relayAgent.finish()),
        )

        // In the page: every message verified at level 3 (did:key) and arrived in order.
        expect(result.rejected).toEqual([])
        expect(result.streamErrors).toEqual([])
        expect(result.received.map((r) => r.messageId)).toEqual(sent.map((m) => m.message_id))
        for (const [i, r] of result.received.entries()) {
          expect(r.mode).toBe(mode)
          expect(r.from).toBe(nodeDid)
          expect(r.to).toBe(pageAgent.did)
          expect(r.text).toBe(`hello over ${mode} #${i + 1}`)
          expect(r.conversationId).toBe(`browser-${mode}-${i + 1}`)
          expect(r.sequence).toBe(0)
          expect(r.transport).toBe('relay')
          expect(r.level).toBe(3)
          expect(r.source).toBe('did-key')
          expect(r.again).toEqual({
            level: 3,
            source: 'did-key',
            keyId: nodeSigner.keyId,
            alg: 'ed25519',
          })
          expect(r.cursor).toEqual(expect.any(String))
          expect(r.replyRoute).toBe('relay')
          expect(r.replyRelayUrl).toBe(relay.url)
        }
        // …and over the intended transport only.
        const ids = sent.map((m) => m.message_id)
        if (mode === 'sse') {
          expect(result.wire.sseConnections).toBeGreaterThanOrEqual(1)
          expect(result.wire.sseStatuses.every((s) => s === 200)).toBe(true)
          expect(result.wire.wsConnections).toBe(0)
          expect(result.wire.seenOnSse).toEqual(expect.arrayContaining(ids))
          expect(result.wire.seenOnWs).toEqual([])
        } else {
          expect(result.wire.wsConnections).toBeGreaterThanOrEqual(1)
          expect(result.wire.wsFrameTypes[0]).toBe('challenge')
          expect(result.wire.wsFrameTypes).toContain('message')
          expect(result.wire.sseConnections).toBe(0)
          expect(result.wire.seenOnWs).toEqual(expect.arrayContaining(ids))
          expect(result.wire.seenOnSse).toEqual([])
        }
        // The replies were published through the relay; the received messages were acked,
        // each once, in order, and the stream's resume point is the last one's cursor.
        expect(result.wire.requests.filter((r) => r === 'POST /relay/publish')).toHaveLength(
          PER_PHASE,
        )
        expect(result.wire.acks).toEqual(ids)
        expect(result.leftInMailbox).toBe(0)
        expect(result.storedCursor).toBe(result.received.at(-1)?.cursor)
        // The mailbox was opened once, by the first phase; the reopened agent kept it.
        const subscribes = result.wire.requests.filter((r) => r === 'POST /relay/subscribe')
        expect(result.subscriptionId).toEqual(expect.any(String))
        if (mode === 'sse') {
          expect(subscribes).toHaveLength(1)
          pageSubscription = result.subscriptionId
        } else {
          expect(subscribes).toEqual([])
          expect(result.subscriptionId).toBe(pageSubscription)
        }

        // Node side: the replies arrive, say what the page said, and verify at level 3.
        await expect.poll(() => replies.length, { timeout: 15_000 }).toBe(PER_PHASE)
        const byConversation = new Map(replies.map((r) => [r.message.conversation_id, r]))
        for (const [i, r] of result.received.entries()) {
          const reply = byConversation.get(`browser-${mode}-${i + 1}`)
          expect(reply, `reply to #${i + 1}`).toBeDefined()
          const { message, wire, sealed, verified } = reply!
          // Through an untrusted relay the page's agent sealed the body for Node.
          expect(sealed).toBe(true)
          expect((wire as Message).body.parts).toEqual([
            expect.objectContaining({
              type: 'sealed',
              recipient: nodeDid,
              key_id: nodeSigner.keyId,
            }),
          ])
          expect(message.message_id).toBe(r.replyId)
          expect(message.from.agent).toBe(pageAgent.did)
          expect(message.to.agent).toBe(nodeDid)
          expect(message.from.relays).toEqual([relay.url])
          expect(message.phase).toBe('response')
          expect(message.sequence).toBe(1)
          expect(message.body.parts).toEqual([
            { type: 'text', text: `reply over ${mode}: hello over ${mode} #${i + 1}` },
          ])
          expect(verified.level).toBe(3)
          expect(verified.source).toBe('did-key')
          expect(verified.keyId).toBe(pageAgent.keyId)
          // Verified again here, independently of the client, with a fresh resolver: the
          // message as delivered (its signatures cover the sealed body).
          const again = await verifyMessage(wire, createKeyResolver())
          expect(again.level).toBe(3)
          expect(again.source).toBe('did-key')
          expect(again.keyId).toBe(pageAgent.keyId)
        }
        expect(nodeErrors).toEqual([])
        expect(problems).toEqual([])
        expect(relayErrors).toEqual([])
      } finally {
        await nodeStream.close()
      }
    })
  }
})
