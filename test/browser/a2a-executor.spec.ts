/**
 * The A2A executor of the Node process test runs in real Chromium and a stock a2a-js client in
 * Node reaches it through a real relay: the tab has no inbox, only the relay and IndexedDB.
 *
 * - Relay, certificate, Chromium launch and page serving as in `relay-agent.spec.ts`: the relay
 *   (`serveRelay`, SQLite in a temporary directory) has a development certificate that only this
 *   Chromium trusts; the page is served from the relay's origin under `/__test/**`; every other
 *   origin is refused and fails the test.
 * - The page (`entries/a2a-executor.ts`, bundled from `packages/*\/dist`) is a relay-only did:key
 *   agent made by `createAgent` with `indexedDbStorage`, serving the stock `DefaultRequestHandler`
 *   with the same `EchoExecutor` as the process test, through `serveA2A`. It pins the Node
 *   caller's did:key (the Node side hands it over) and hands back its agent card.
 * - The Node side is a `createNodeAgent` and a stock `ClientFactory` given
 *   `agentmsgTransportFactory(node)`: `message/send`, `message/stream`, bytes in a `raw` part; an
 *   unknown Node agent is refused; after a page reload the same agent (same IndexedDB) answers.
 */
import { rm } from 'node:fs/promises'
import { AgentCard, type StreamResponse, TaskState } from '@a2a-js/sdk'
import { type Client, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client'
import { A2AError } from '@a2a-js/sdk/errors'
import { agentmsgTransportFactory } from '@agentmsg/a2a'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import type { DevCertificate } from '@agentmsg/dev-tls'
import type { RelayServer } from '@agentmsg/relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import { userMessage } from '../../packages/a2a/test/echo-executor.js'
import type { StartInfo } from './entries/a2a-executor.js'
import { bundleEntry } from './harness.js'
import {
  launchTrusting,
  openTestPage,
  pageFailures,
  routeTestPage,
  startTestRelay,
  TEST_PATH,
  testPageHtml,
} from './relay-page.js'

const HTML = testPageHtml('agentmsg A2A executor')
const DB_NAME = 'agentmsg-a2a-executor'

test.describe('A2A executor in Chromium (relay-only, IndexedDB) ← stock a2a-js client in Node', () => {
  test.describe.configure({ mode: 'serial' })

  let cert: DevCertificate
  let dataDir: string
  let relay: RelayServer
  let browser: Browser
  let page: Page
  let node: NodeAgent
  let first: StartInfo
  let card: AgentCard
  const agents: NodeAgent[] = []
  const nodeErrors: string[] = []
  const relayErrors: string[] = []

  /** Page calls fail at once on the first page error, console error or bad request. */
  const { problems, report, inPage } = pageFailures('a2a-executor')

  /** A relay-only Node agent trusting the dev certificate; its error events are recorded. */
  async function nodeAgent(): Promise<NodeAgent> {
    const a = await createNodeAgent({
      relays: [relay.url],
      ca: cert.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    a.on('error', (e) => void nodeErrors.push(String(e.error)))
    agents.push(a)
    return a
  }

  /** A stock `ClientFactory` that knows the agentmsg transport, for `a`. */
  const clientFor = (a: NodeAgent): Promise<Client> =>
    new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [agentmsgTransportFactory(a, { idleTimeoutMs: 30_000 })],
      }),
    ).createFromAgentCard(card)

  const start = (contacts: string[]) =>
    inPage(
      page.evaluate((o) => globalThis.__a2aExecutor.start(o), {
        relayUrl: relay.url,
        dbName: DB_NAME,
        contacts,
      }),
    )
  const executed = () => inPage(page.evaluate(() => globalThis.__a2aExecutor.executed()))
  const pageErrors = () => inPage(page.evaluate(() => globalThis.__a2aExecutor.errors()))
  const loaded = () =>
    inPage(page.waitForFunction(() => '__a2aExecutor' in globalThis).then(() => undefined))

  /** The echo the executor answers `text` with, when `node` called. */
  const echoOf = (text: string) => `echo: ${text} (from ${node.id} at level 3, known true)`

  test.beforeAll(async () => {
    const started = await startTestRelay('agentmsg-browser-a2a-', relayErrors)
    ;({ cert, dataDir, relay } = started)
    node = await nodeAgent()
    const script = await bundleEntry('a2a-executor')
    browser = await launchTrusting(cert.cert)
    ;({ page } = await openTestPage(browser, started.origin, report))
    await routeTestPage(page, started.origin, HTML, script, report)
    await inPage(page.goto(`${started.origin}${TEST_PATH}/`).then(() => undefined))
    await loaded()
    first = await start([node.id])
    card = AgentCard.fromJSON(first.card as never)
  })

  test.afterAll(async () => {
    await Promise.all(agents.map((a) => a.close().catch(() => {})))
    await page?.close().catch(() => {})
    await browser?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test('the card names the page agent and its relay; the stock factory picks the agentmsg transport', async () => {
    expect(first.isSecureContext).toBe(true)
    expect(first.origin).toBe(new URL(relay.url).origin)
    expect(first.id).toMatch(/^did:key:z6Mk/)
    expect(first.keyId.startsWith(`${first.id}#`)).toBe(true)
    expect(card.supportedInterfaces).toEqual([
      {
        url: `agentmsg:${first.id}?relay=${encodeURIComponent(relay.url)}`,
        protocolBinding: 'AGENTMSG',
        protocolVersion: '1.0',
        tenant: '',
      },
    ])
    const client = await clientFor(node)
    expect(client.transport.protocolName).toBe('AGENTMSG')
  })

  test('message/send: the completed task with its artifact, naming the Node caller', async () => {
    const result = await (await clientFor(node)).sendMessage(userMessage('hello', 'm-send-1'))
    expect('status' in result).toBe(true)
    const task = result as Extract<typeof result, { status: unknown }>
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({
      $case: 'text',
      value: echoOf('hello'),
    })
    expect(await executed()).toBe(1)
  })

  test('message/stream: the task, its status updates and the artifact, in order', async () => {
    const events: StreamResponse[] = []
    const client = await clientFor(node)
    for await (const event of client.sendMessageStream(userMessage('streamed', 'm-stream-1')))
      events.push(event)
    expect(events.map((e) => e.payload?.$case)).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'statusUpdate',
    ])
    const last = events.at(-1)?.payload
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    )
    const artifact = events[2]?.payload
    expect(
      artifact?.$case === 'artifactUpdate' && artifact.value.artifact?.parts[0]?.content,
    ).toEqual({ $case: 'text', value: echoOf('streamed') })
    expect(await executed()).toBe(2)
  })

  test('bytes in a raw part reach the page and come back in the task history', async () => {
    // The SDK's codec turns a raw part's base64 into a Buffer (the page's polyfill) and back.
    const bytes = Buffer.from([0, 1, 2, 127, 128, 254, 255])
    const request = userMessage('with bytes', 'm-raw-1')
    request.message!.parts.push({
      content: { $case: 'raw', value: bytes },
      metadata: undefined,
      filename: 'bytes.bin',
      mediaType: 'application/octet-stream',
    })
    const result = await (await clientFor(node)).sendMessage(request)
    const task = result as Extract<typeof result, { status: unknown }>
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({
      $case: 'text',
      value: echoOf('with bytes'),
    })
    const raw = task.history[0]?.parts[1]
    expect(raw?.filename).toBe('bytes.bin')
    const content = raw?.content
    expect(content?.$case === 'raw' && [...content.value]).toEqual([...bytes])
    expect(await executed()).toBe(3)
  })

  test('an unknown Node agent is refused with an A2A error saying so', async () => {
    const stranger = await nodeAgent()
    const error = await (await clientFor(stranger))
      .sendMessage(userMessage('hi', 'm-x'))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AError)
    expect((error as Error).message).toBe(
      `unknown_sender: ${stranger.id} is not a known contact of this agent (level 3)`,
    )
    expect(await executed()).toBe(3)
  })

  test('after a page reload the agent has the same did:key, still knows the caller, and answers', async () => {
    expect(await pageErrors()).toEqual([])
    await inPage(page.reload().then(() => undefined))
    await loaded()
    // No contacts handed over this time: the pinned one is in IndexedDB.
    const second = await start([])
    expect(second.id).toBe(first.id)
    expect(second.keyId).toBe(first.keyId)
    expect(second.card).toEqual(first.card)
    const result = await (await clientFor(node)).sendMessage(userMessage('again', 'm-reload-1'))
    const task = result as Extract<typeof result, { status: unknown }>
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({
      $case: 'text',
      value: echoOf('again'),
    })
    expect(await executed()).toBe(1)
    expect(await pageErrors()).toEqual([])
    await inPage(page.evaluate(() => globalThis.__a2aExecutor.close()))
    expect(nodeErrors).toEqual([])
    expect(problems).toEqual([])
    expect(relayErrors).toEqual([])
  })
})
