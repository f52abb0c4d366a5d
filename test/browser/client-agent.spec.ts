/**
 * The `Agent` of `@agentmsg/client` in real Chromium, with IndexedDB storage, converses with a
 * Node `Agent` through a real relay, and the conversation survives a page reload.
 *
 * - Relay, certificate, Chromium launch and page serving as in `relay-agent.spec.ts`: the relay
 *   (`serveRelay`, SQLite in a temporary directory) has a development certificate that only this
 *   Chromium trusts (`--ignore-certificate-errors-spki-list`); the page is served from the relay's
 *   origin under `/__test/**` (every other relay request reaches the real relay); other origins
 *   are refused; `local-network-access` is granted to the relay's origin (WebSocket to
 *   127.0.0.1).
 * - The page (`entries/client-agent.ts`) is a relay-only did:key agent made by `createAgent`
 *   with `indexedDbStorage`; it answers every message with `reply()`. It records what it was
 *   handed in `sessionStorage`, which survives the reload.
 * - The Node agent (`startNodeAgent` in `relay-page.ts`: `createAgent`, memory storage,
 *   `createNodeFetch({ ca, addressPolicy })`, a `ws` WebSocket given `{ ca }`) sends, and checks
 *   each answer (level 3, did:key, sequence).
 * - Mid-conversation the page is reloaded. While the new page has no agent (hence no stream),
 *   the Node agent publishes the next message. The re-created agent has the same id, receives
 *   that message exactly once, never again the ones handled before the reload, resumes its
 *   stream from the stored cursor without subscribing again, and keeps numbering the
 *   conversation.
 */
import { rm } from 'node:fs/promises'
import type { ReceivedMessage } from '@agentmsg/client'
import type { DevCertificate } from '@agentmsg/dev-tls'
import type { RelayServer } from '@agentmsg/relay'
import { type Browser, expect, test } from '@playwright/test'
import type { Mode, PageLog, StartInfo } from './entries/client-agent.js'
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

const HTML = testPageHtml('agentmsg client agent')

test.describe('client Agent in Chromium (IndexedDB) ↔ Node Agent, across a page reload', () => {
  let cert: DevCertificate
  let dataDir: string
  let relay: RelayServer
  let origin: string
  let browser: Browser
  let script: string
  const relayErrors: string[] = []

  test.beforeAll(async () => {
    ;({ cert, dataDir, relay, origin } = await startTestRelay(
      'agentmsg-browser-client-',
      relayErrors,
    ))
    script = await bundleEntry('client-agent')
    browser = await launchTrusting(cert.cert)
  })

  test.afterAll(async () => {
    await browser?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  /** A fresh context and page on the relay's origin; problems fail `inPage` calls at once. */
  async function openPage() {
    const { problems, report, inPage } = pageFailures('client-agent')
    /** Relay requests the page made, `METHOD /path?query`, per page load (1-based). */
    const requests: string[][] = [[]]
    /** Message ids acknowledged by `POST /relay/ack`, per page load. */
    const sseAcks: string[][] = [[]]
    let loads = 0

    const { context, page } = await openTestPage(browser, origin, report)
    page.on('request', (req) => {
      const url = new URL(req.url())
      if (url.pathname.startsWith(TEST_PATH)) {
        if (url.pathname === `${TEST_PATH}/`) requests[++loads] = []
        return
      }
      requests[loads]?.push(`${req.method()} ${url.pathname}${url.search}`)
      if (req.method() === 'POST' && url.pathname === '/relay/ack') {
        // Batched acknowledgements (PROFILE §9): one request names many entries.
        const body = JSON.parse(req.postData() ?? '{}') as { acks: Array<{ message_id: string }> }
        sseAcks[loads] ??= []
        sseAcks[loads]!.push(...body.acks.map((a) => a.message_id))
      }
    })
    /** Message ids the page acknowledged, per page load: POST /relay/ack or DELETE (SSE), `ack` frames (WS). */
    const acks = (load: number, mode: Mode): string[] =>
      mode === 'sse'
        ? [
            ...(sseAcks[load] ?? []),
            ...requests[load]!.filter((r) => r.startsWith('DELETE /relay/messages/')).map((r) =>
              decodeURIComponent(r.split(' ')[1]!.split('?')[0]!.split('/').pop()!),
            ),
          ]
        : (wsAcks[load] ?? [])
    const wsAcks: string[][] = [[]]
    /** Per page load: WebSockets opened and the `after` of their `auth` frames. */
    const wsAuths: Array<Array<string | undefined>> = [[]]
    page.on('websocket', (ws) => {
      const load = loads
      wsAcks[load] ??= []
      wsAuths[load] ??= []
      ws.on('framesent', ({ payload }) => {
        if (typeof payload !== 'string') return
        const frame = JSON.parse(payload) as { type?: string; message_id?: string; after?: string }
        if (frame.type === 'ack') wsAcks[load]!.push(String(frame.message_id))
        if (frame.type === 'auth') wsAuths[load]!.push(frame.after)
      })
    })
    await routeTestPage(page, origin, HTML, script, report)
    return { context, page, problems, requests, acks, wsAuths, inPage }
  }

  for (const mode of ['sse', 'ws'] as const) {
    test(`${mode}: conversation with a Node agent continues after page.reload()`, async () => {
      const { context, page, problems, requests, acks, wsAuths, inPage } = await openPage()
      const atNode: ReceivedMessage[] = []
      const nodeErrors: string[] = []
      const node = await startNodeAgent(relay.url, cert.ca, atNode, nodeErrors, { mode })
      const dbName = `agentmsg-client-agent-${mode}`
      const start = () =>
        inPage(
          page.evaluate((o) => globalThis.__clientAgent.start(o), {
            relayUrl: relay.url,
            dbName,
            mode: mode as Mode,
          }),
        )
      const waitForSeen = (n: number) =>
        inPage(page.evaluate((k) => globalThis.__clientAgent.waitForSeen(k), n))
      const pageSend = (text: string, conversationId?: string) =>
        inPage(
          page.evaluate(
            ({ to, t, c }) =>
              globalThis.__clientAgent.send(to, t, c === undefined ? {} : { conversationId: c }),
            { to: node.id, t: text, c: conversationId },
          ),
        )
      /** The next message from the page at the Node agent, checked at level 3 (did:key). */
      const fromPage = async (n: number, me: StartInfo): Promise<ReceivedMessage> => {
        await expect.poll(() => atNode.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(n)
        const r = atNode[n - 1]!
        expect(r.from).toBe(me.id)
        expect(r.transport).toBe('relay')
        expect(r.level).toBe(3)
        expect(r.source).toBe('did-key')
        expect(r.message.to.agent).toBe(node.id)
        expect(r.message.from.relays).toEqual([relay.url])
        // Sealed through the untrusted relay (PROFILE §8), opened by the Node agent; the pipeline
        // verified the signature over the sealed body (a re-check of the opened copy would not).
        expect(r.sealed).toBe(true)
        expect(r.message.security?.encryption).toEqual({
          scheme: 'sealed_box',
          recipients: [node.id],
        })
        expect(r.message.security?.signatures.map((s) => s.key_id)).toEqual([me.keyId])
        return r
      }

      try {
        // ---- load 1 -------------------------------------------------------------------
        await inPage(page.goto(`${origin}${TEST_PATH}/`).then(() => undefined))
        await inPage(page.waitForFunction(() => '__clientAgent' in globalThis).then(() => {}))
        const first = await start()
        expect(first.isSecureContext).toBe(true)
        expect(first.origin).toBe(origin)
        expect(first.load).toBe(1)
        expect(first.id).toMatch(/^did:key:z6Mk/)
        expect(first.keyId.startsWith(`${first.id}#`)).toBe(true)

        // Node → page (a new conversation: greeting, sequence 0); the page replies (1).
        const n1 = await node.send(first.id, 'hello 1', { relays: [relay.url] })
        expect(n1.route).toBe('relay')
        const conv = n1.conversationId
        let log = await waitForSeen(1)
        expect(log.seen[0]).toMatchObject({
          load: 1,
          messageId: n1.messageId,
          from: node.id,
          to: first.id,
          conversationId: conv,
          sequence: 0,
          phase: 'greeting',
          text: 'hello 1',
          level: 3,
          source: 'did-key',
          transport: 'relay',
          replyRoute: 'relay',
        })
        const r1 = await fromPage(1, first)
        expect(r1.message.message_id).toBe(log.seen[0]!.replyId)
        expect(r1.conversationId).toBe(conv)
        expect(r1.message.phase).toBe('response')
        expect(r1.message.sequence).toBe(1)
        expect(r1.text).toBe('re: hello 1')

        // Node → page again in the same conversation (2), reply (3).
        const n2 = await node.send(first.id, 'hello 2', { conversationId: conv })
        log = await waitForSeen(2)
        expect(log.seen[1]).toMatchObject({ load: 1, messageId: n2.messageId, sequence: 2 })
        const r2 = await fromPage(2, first)
        expect(r2.message.message_id).toBe(log.seen[1]!.replyId)
        expect(r2.message.sequence).toBe(3)
        expect(r2.message.phase).toBe('response')

        // The page speaks unprompted in the conversation (4), found the Node agent's relay
        // from the route it remembered.
        const b1 = await pageSend('note before reload', conv)
        expect(b1).toMatchObject({ conversationId: conv, route: 'relay', relayUrl: relay.url })
        const note1 = await fromPage(3, first)
        expect(note1.message.message_id).toBe(b1.messageId)
        expect(note1.message.sequence).toBe(4)
        expect(note1.message.phase).toBe('request')
        const beforeReload = await inPage(page.evaluate(() => globalThis.__clientAgent.log()))
        expect(beforeReload.seen.map((s) => s.messageId)).toEqual([n1.messageId, n2.messageId])
        // The handled messages were acknowledged (after the listener), each once.
        await expect.poll(() => acks(1, mode)).toEqual([n1.messageId, n2.messageId])

        // ---- reload: the new page has no agent, hence no stream, until start() --------
        await inPage(page.reload().then(() => undefined))
        await inPage(page.waitForFunction(() => '__clientAgent' in globalThis).then(() => {}))
        const n3 = await node.send(first.id, 'sent during the reload', { conversationId: conv })
        expect(n3.route).toBe('relay')
        const second = await start()
        expect(second.load).toBe(2)
        expect(second.id).toBe(first.id)
        expect(second.keyId).toBe(first.keyId)

        // The message published while no stream was connected: delivered once, on load 2.
        log = await waitForSeen(3)
        expect(log.seen[2]).toMatchObject({
          load: 2,
          messageId: n3.messageId,
          conversationId: conv,
          sequence: 5,
          phase: 'request',
          text: 'sent during the reload',
          level: 3,
        })
        const r3 = await fromPage(4, second)
        expect(r3.message.message_id).toBe(log.seen[2]!.replyId)
        expect(r3.message.sequence).toBe(6)
        expect(r3.message.phase).toBe('response')

        // Unprompted again (7), then a new conversation started by the page without being
        // told the Node agent's relays (the stored route).
        const b2 = await pageSend('note after reload', conv)
        const note2 = await fromPage(5, second)
        expect(note2.message.message_id).toBe(b2.messageId)
        expect(note2.message.sequence).toBe(7)
        const b3 = await pageSend('a new conversation after reload')
        expect(b3.route).toBe('relay')
        expect(b3.conversationId).not.toBe(conv)
        const fresh = await fromPage(6, second)
        expect(fresh.message.message_id).toBe(b3.messageId)
        expect(fresh.message.sequence).toBe(0)
        expect(fresh.message.phase).toBe('greeting')

        // And live on the resumed stream: Node (8) → page → reply (9).
        const n4 = await node.send(first.id, 'hello after reload', { conversationId: conv })
        log = await waitForSeen(4)
        expect(log.seen[3]).toMatchObject({ load: 2, messageId: n4.messageId, sequence: 8 })
        const r4 = await fromPage(7, second)
        expect(r4.message.sequence).toBe(9)
        expect(r4.text).toBe('re: hello after reload')

        // Give a re-delivery a chance to show before the final count.
        await page.waitForTimeout(500)
        const final: PageLog = await inPage(page.evaluate(() => globalThis.__clientAgent.log()))
        // Exactly once each, across both loads; nothing handled twice.
        expect(final.loads).toBe(2)
        expect(final.ids).toEqual([first.id, first.id])
        expect(final.seen.map((s) => [s.load, s.messageId])).toEqual([
          [1, n1.messageId],
          [1, n2.messageId],
          [2, n3.messageId],
          [2, n4.messageId],
        ])
        expect(final.errors).toEqual([])
        // Every message at the Node agent once, in order.
        expect(atNode.map((m) => m.message.message_id)).toEqual([
          r1.message.message_id,
          r2.message.message_id,
          b1.messageId,
          r3.message.message_id,
          b2.messageId,
          b3.messageId,
          r4.message.message_id,
        ])

        // Load 1 subscribed; load 2 reused the stored subscription and resumed the stream.
        expect(requests[1]!.filter((r) => r.startsWith('POST /relay/subscribe'))).toHaveLength(1)
        expect(requests[2]!.filter((r) => r.startsWith('POST /relay/subscribe'))).toEqual([])
        if (mode === 'sse') {
          const streamAfter = (load: number) =>
            requests[load]!.filter((r) => r.startsWith('GET /relay/stream')).map((r) =>
              new URL(r.split(' ')[1]!, origin).searchParams.get('after'),
            )
          expect(streamAfter(1)[0]).toBeNull()
          expect(streamAfter(2)).toEqual([expect.any(String)])
        } else {
          // One WebSocket per load; the second resumed from the stored cursor.
          expect(wsAuths[1]).toEqual([undefined])
          expect(wsAuths[2]).toEqual([expect.any(String)])
        }
        // Load 2 acknowledged only its own two messages.
        expect(acks(2, mode)).toEqual([n3.messageId, n4.messageId])
        expect(acks(1, mode)).toEqual([n1.messageId, n2.messageId])

        await inPage(page.evaluate(() => globalThis.__clientAgent.close()))
        expect(nodeErrors).toEqual([])
        expect(problems).toEqual([])
        expect(relayErrors).toEqual([])
      } finally {
        await node.close()
        await context.close().catch(() => {})
      }
    })
  }
})
