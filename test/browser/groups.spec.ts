/**
 * Groups (a topic sealed for its members, PROFILE §8, §9) with browser agents in real Chromium,
 * through a real relay on its SQLite store.
 *
 * - Relay, certificate, Chromium launch and page serving as in `relay-agent.spec.ts`
 *   (`relay-page.ts`): the page is served from the relay's origin, other origins are refused.
 * - B, C and D are relay-only did:key agents in the page (`entries/groups.ts`), each
 *   `createAgent` with its own IndexedDB database; all three subscribe to the topic.
 * - A, the publisher, is a Node agent in this process (`createAgent`, memory storage): its group
 *   lists B and C, so D is a subscriber outside the group.
 * - A publishes: B and C open it at level 3, D is handed it as `sealed: 'not-for-me'`. A removes
 *   C: the next message B opens and C cannot. The page reloads: B, C and D reopen on the same
 *   databases (same ids), still subscribed without asking again, and A's next message (C added
 *   back) reaches all three.
 */
import { randomBytes } from 'node:crypto'
import { rm } from 'node:fs/promises'
import type { Agent, Group, ReceivedMessage } from '@agentmsg/client'
import type { RelayServer } from '@agentmsg/relay'
import { type Browser, expect, type Page, test } from '@playwright/test'
import type { GroupAgents, GroupSeen, Key } from './entries/groups.js'
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

const HTML = testPageHtml('agentmsg groups')
const TOPIC = 'team/room-1'

test.describe('groups: a Node publisher and three Chromium agents on IndexedDB, through a real relay', () => {
  test.describe.configure({ mode: 'serial' })

  let dataDir: string
  let relay: RelayServer
  let origin: string
  let browser: Browser
  let page: Page
  let a: Agent
  let team: Group
  let agents: GroupAgents
  /** One set of databases per run (a fresh browser profile holds none anyway). */
  const dbPrefix = `agentmsg-groups-${randomBytes(4).toString('hex')}`
  const atA: ReceivedMessage[] = []
  const aErrors: string[] = []
  const relayErrors: string[] = []

  const { problems, report, inPage } = pageFailures('groups')

  /** Load the page and open B, C and D on their databases. */
  async function openAgents(): Promise<GroupAgents> {
    await inPage(page.waitForFunction(() => '__groups' in globalThis).then(() => undefined))
    return inPage(
      page.evaluate(({ url, db }) => globalThis.__groups.open(url, db), {
        url: relay.url,
        db: dbPrefix,
      }),
    )
  }

  const waitFor = (key: Key, n: number): Promise<GroupSeen[]> =>
    inPage(page.evaluate(({ k, n }) => globalThis.__groups.waitFor(k, n), { k: key, n }))

  test.beforeAll(async () => {
    const started = await startTestRelay('agentmsg-browser-groups-', relayErrors)
    ;({ dataDir, relay, origin } = started)
    a = await startNodeAgent(relay.url, started.cert.ca, atA, aErrors)
    team = a.group(TOPIC)

    const script = await bundleEntry('groups')
    browser = await launchTrusting(started.cert.cert)
    ;({ page } = await openTestPage(browser, origin, report))
    await routeTestPage(page, origin, HTML, script, report)
    await inPage(page.goto(`${origin}${TEST_PATH}/`).then(() => undefined))
    agents = await openAgents()
  })

  test.afterAll(async () => {
    await page?.evaluate(() => globalThis.__groups.close()).catch(() => {})
    await browser?.close().catch(() => {})
    await a?.close().catch(() => {})
    await relay?.close().catch(() => {})
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  test('B, C and D are did:key agents in the page, subscribed to the topic', async () => {
    const ids = [agents.b.id, agents.c.id, agents.d.id]
    for (const id of ids) expect(id).toMatch(/^did:key:z6Mk/)
    expect(new Set([...ids, a.id]).size).toBe(4)
    for (const k of ['b', 'c', 'd'] as const) expect(agents[k].topics).toEqual([])

    agents = await inPage(page.evaluate((t) => globalThis.__groups.subscribe(t), TOPIC))
    for (const k of ['b', 'c', 'd'] as const) expect(agents[k].topics).toEqual([TOPIC])
    expect(problems).toEqual([])
  })

  test('A publishes sealed for B and C: both read it at level 3, D gets it not for it', async () => {
    await team.add(agents.b.id, agents.c.id)
    const first = await team.publish('first, for B and C')
    expect([...first.sealedFor].sort()).toEqual([a.id, agents.b.id, agents.c.id].sort())
    expect(first).toMatchObject({ topic: TOPIC, relayUrl: relay.url })

    for (const k of ['b', 'c'] as const) {
      const [m] = await waitFor(k, 1)
      expect(m, k).toEqual({
        messageId: first.messageId,
        from: a.id,
        text: 'first, for B and C',
        sealed: true,
        level: 3,
        topic: TOPIC,
      })
    }
    const [atD] = await waitFor('d', 1)
    expect(atD).toEqual({
      messageId: first.messageId,
      from: a.id,
      text: '',
      sealed: 'not-for-me',
      level: 3,
      topic: TOPIC,
    })
  })

  test('A removes C: the next message B reads and C cannot', async () => {
    await team.remove(agents.c.id)
    expect(await team.members()).toEqual([agents.b.id])
    const second = await team.publish('second, for B only')
    expect([...second.sealedFor].sort()).toEqual([a.id, agents.b.id].sort())

    const atB = await waitFor('b', 2)
    expect(atB[1]).toMatchObject({ messageId: second.messageId, text: 'second, for B only' })
    expect(atB[1]?.sealed).toBe(true)
    const atC = await waitFor('c', 2)
    expect(atC[1]).toMatchObject({ messageId: second.messageId, text: '', sealed: 'not-for-me' })
    // What C read before it was removed stays read.
    expect(atC[0]?.text).toBe('first, for B and C')
    expect((await waitFor('d', 2))[1]).toMatchObject({ sealed: 'not-for-me', text: '' })
  })

  test('after a reload B, C and D reopen on the same IndexedDB, still subscribed', async () => {
    // A page closes its agents when it goes (the demo does on pagehide); here before the
    // reload, so every acknowledgement is in and nothing is handed over twice.
    await inPage(page.evaluate(() => globalThis.__groups.close()))
    await inPage(page.reload().then(() => undefined))
    const reopened = await openAgents()
    for (const k of ['b', 'c', 'd'] as const) {
      expect(reopened[k]).toEqual({ id: agents[k].id, topics: [TOPIC] })
    }

    // No subscribe after the reload: the stored subscriptions carry the next message.
    await team.add(agents.c.id)
    const third = await team.publish('third, after the reload')
    for (const k of ['b', 'c'] as const) {
      const seen = await waitFor(k, 1)
      expect(seen, k).toEqual([
        {
          messageId: third.messageId,
          from: a.id,
          text: 'third, after the reload',
          sealed: true,
          level: 3,
          topic: TOPIC,
        },
      ])
    }
    const atD = await waitFor('d', 1)
    expect(atD).toEqual([expect.objectContaining({ messageId: third.messageId })])
    expect(atD[0]?.sealed).toBe('not-for-me')

    expect(await inPage(page.evaluate(() => globalThis.__groups.errors()))).toEqual({
      b: [],
      c: [],
      d: [],
    })
    expect(atA).toEqual([])
    expect(aErrors).toEqual([])
    expect(problems).toEqual([])
    expect(relayErrors).toEqual([])
  })
})
