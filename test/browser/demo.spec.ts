/**
 * `npm start`'s browser demo in real Chromium, against the real server (./demo-server.ts:
 * scripts/start.mjs in its own process, the page a secure context on the relay's origin).
 *
 * - Alice and Bob (relay-only did:key agents, each in its own IndexedDB database; Carol is the
 *   third) exchange messages through the relay; each pane shows the other's message with its
 *   level, known-contact state, route (the relay URL) and `sealed`; the trace, which names the
 *   same relay as the route, is not shown again.
 * - Pinning a sender makes its next message come from a known contact (PROFILE §5).
 * - Echo, the Node agent of start.mjs, answers.
 * - The room (a topic all four subscribe to, PROFILE §9): a message posted from one pane reaches
 *   the other two, sealed for every member, and Echo answers its poster. Once Carol is removed
 *   from the member list, the next message shows in her pane as sealed for others, not its text.
 * - A reload keeps the identities, the whole history, the room's subscriptions and its member
 *   list; direct and room messages still flow after it.
 * - A screenshot is attached to the test.
 * (The relay going down and coming back: demo-offline.spec.ts.)
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Browser, expect, type Locator, type Page, test } from '@playwright/test'
import { type DemoServer, freePort, openDemoBrowser, startDemoServer } from './demo-server.js'

type Key = 'alice' | 'bob' | 'carol'
const ROOM = 'demo/room'
/** The compose list's value for the room. */
const TO_ROOM = `topic:${ROOM}`

test.describe('npm start: the browser demo', () => {
  test.describe.configure({ mode: 'serial' })

  let home: string
  let server: DemoServer
  let pageUrl: string
  let relayUrl: string
  let browser: Browser
  let page: Page
  let pageHeaders: Record<string, string> = {}
  const problems: string[] = []
  const ids: Record<Key, string> = { alice: '', bob: '', carol: '' }
  let echoId = ''
  const output = () => server.output()

  test.beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'agentmsg-demo-home-'))
    const port = await freePort()
    server = await startDemoServer(port, home)
    ;({ pageUrl, relayUrl, echoId } = server)
    expect(pageUrl).toBe(`https://127.0.0.1:${port}/demo/`)
    expect(output()).toContain(`trust once  ${path.join(home, 'dev-ca', 'ca.pem')}`)
    ;({ browser, page } = await openDemoBrowser(home, relayUrl))
    page.on('pageerror', (err) => problems.push(`page error: ${err.stack ?? err.message}`))
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning')
        problems.push(`console: ${msg.text()}`)
    })
    page.on('requestfailed', (r) => {
      // Streams cut by the reload are aborted by the browser, not failed.
      const why = r.failure()?.errorText
      if (why !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} (${why})`)
    })
    const response = await page.goto(pageUrl)
    pageHeaders = response?.headers() ?? {}
    await expect(page.getByTestId('status')).toHaveAttribute('data-ready', 'true')
  })

  test.afterAll(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
    if (home) await rm(home, { recursive: true, force: true })
  })

  const pane = (key: Key) => page.getByTestId(`pane-${key}`)
  const incoming = (key: Key, text: string): Locator =>
    page.getByTestId(`log-${key}`).locator('li[data-direction="in"]', { hasText: text })
  /** Room messages in `key`'s pane sealed for the other members only. */
  const notForMe = (key: Key): Locator =>
    page.getByTestId(`log-${key}`).locator(`li[data-topic="${ROOM}"][data-sealed="not-for-me"]`)

  async function send(from: Key, to: string, text: string) {
    await page.getByTestId(`to-${from}`).selectOption(to)
    await page.getByTestId(`text-${from}`).fill(text)
    await page.getByTestId(`send-${from}`).click()
    await expect(
      page.getByTestId(`log-${from}`).locator('li[data-direction="out"]', { hasText: text }),
    ).toHaveAttribute('data-sealed', 'true')
  }

  test('the page is served from the relay origin with a CSP, in a secure context', async () => {
    expect(pageHeaders['content-security-policy']).toContain("script-src 'self'")
    expect(pageHeaders['content-type']).toBe('text/html; charset=utf-8')
    expect(await page.evaluate(() => [globalThis.isSecureContext, location.origin])).toEqual([
      true,
      relayUrl,
    ])
    for (const key of ['alice', 'bob', 'carol'] as const) {
      ids[key] = (await pane(key).getAttribute('data-agent-id')) ?? ''
      expect(ids[key]).toMatch(/^did:key:z6Mk/)
    }
    expect(new Set([ids.alice, ids.bob, ids.carol]).size).toBe(3)
  })

  test('Alice and Bob exchange messages through the relay, sealed, with level, route and trace', async () => {
    await send('alice', ids.bob, 'Hello Bob, lunch on Tuesday?')
    const atBob = incoming('bob', 'Hello Bob, lunch on Tuesday?')
    await expect(atBob).toHaveCount(1)
    await expect(atBob).toHaveAttribute('data-peer', ids.alice)
    await expect(atBob).toHaveAttribute('data-level', '3')
    await expect(atBob).toHaveAttribute('data-known', 'false')
    await expect(atBob).toHaveAttribute('data-route', relayUrl)
    await expect(atBob).toHaveAttribute('data-sealed', 'true')
    await expect(atBob).toHaveAttribute('data-trace', `relay:${relayUrl}`)
    await expect(atBob).toContainText('known contact: no')
    // The trace's one hop is the route's relay: said once.
    await expect(atBob).toContainText(`route: relay ${relayUrl}`)
    await expect(atBob.locator('.trace')).toHaveCount(0)
    await expect(atBob).not.toContainText('trace:')

    await send('bob', ids.alice, 'Tuesday works.')
    const atAlice = incoming('alice', 'Tuesday works.')
    await expect(atAlice).toHaveAttribute('data-peer', ids.bob)
    await expect(atAlice).toHaveAttribute('data-level', '3')
    await expect(atAlice).toHaveAttribute('data-route', relayUrl)
    await expect(atAlice).toHaveAttribute('data-sealed', 'true')
    await expect(atAlice).toHaveAttribute('data-trace', `relay:${relayUrl}`)
  })

  test('after Bob pins Alice, her next message comes from a known contact', async () => {
    await incoming('bob', 'Hello Bob').locator(`button[data-pin="${ids.alice}"]`).click()
    await expect(pane('bob').locator('button[data-pin]')).toHaveCount(0)
    await send('alice', ids.bob, 'Pinned now?')
    const atBob = incoming('bob', 'Pinned now?')
    await expect(atBob).toHaveAttribute('data-known', 'true')
    await expect(atBob).toContainText('known contact: yes')
  })

  test('Echo, the Node agent of npm start, answers through the relay', async () => {
    expect(echoId).toMatch(/^did:key:z6Mk/)
    await send('bob', echoId, 'ping from Bob')
    const answer = incoming('bob', 'echo: ping from Bob')
    await expect(answer).toHaveAttribute('data-peer', echoId)
    await expect(answer).toHaveAttribute('data-sealed', 'true')
    await expect(answer).toHaveAttribute('data-level', '3')
    await expect(answer).toHaveAttribute('data-trace', `relay:${relayUrl}`)
    await expect.poll(output).toMatch(/echo: "ping from Bob" from did:key:.*sealed/)
  })

  test('a room message from one pane reaches the others sealed for every member; Echo answers it', async () => {
    for (const key of ['alice', 'bob', 'carol', 'echo']) {
      await expect(page.getByTestId(`member-${key}`)).toHaveAttribute('data-member', 'true')
    }
    await send('alice', TO_ROOM, 'Hello room')
    const posted = page.getByTestId('log-alice').locator(`li[data-topic="${ROOM}"]`)
    await expect(posted).toHaveAttribute('data-direction', 'out')
    for (const name of ['Alice', 'Bob', 'Carol', 'Echo']) {
      await expect(posted).toContainText(new RegExp(`readable by .*${name}`))
    }
    for (const key of ['bob', 'carol'] as const) {
      const row = incoming(key, 'Hello room')
      await expect(row).toHaveAttribute('data-topic', ROOM)
      await expect(row).toHaveAttribute('data-peer', ids.alice)
      await expect(row).toHaveAttribute('data-sealed', 'true')
      await expect(row).toHaveAttribute('data-level', '3')
      await expect(row).toContainText(`in room ${ROOM}`)
    }
    // Echo read it in the room and answered Alice alone.
    const answer = incoming('alice', 'echo: Hello room')
    await expect(answer).toHaveAttribute('data-peer', echoId)
    await expect(answer).toHaveAttribute('data-sealed', 'true')
    await expect.poll(output).toMatch(/echo: in demo\/room "Hello room" from .*level 3, sealed/)
    await expect(incoming('bob', 'echo: Hello room')).toHaveCount(0)
    // The relay hands the poster its own message too: shown once, as sent.
    await expect(incoming('alice', 'Hello room')).toHaveCount(1)
  })

  test('once Carol is removed from the room, the next message shows as not for me in her pane', async () => {
    await page.getByTestId('remove-carol').click()
    await expect(page.getByTestId('member-carol')).toHaveAttribute('data-member', 'false')
    await expect(pane('carol')).toHaveAttribute('data-member', 'false')
    await expect(page.getByTestId('to-carol').locator(`option[value="${TO_ROOM}"]`)).toBeDisabled()

    await send('bob', TO_ROOM, 'Carol is out of the room')
    const posted = page
      .getByTestId('log-bob')
      .locator('li[data-direction="out"]', { hasText: 'Carol is out of the room' })
    await expect(posted).toContainText(/readable by .*Alice/)
    await expect(posted).not.toContainText(/readable by .*Carol/)
    await expect(incoming('alice', 'Carol is out of the room')).toHaveAttribute(
      'data-sealed',
      'true',
    )
    await expect(incoming('bob', 'echo: Carol is out of the room')).toHaveCount(1)

    const atCarol = notForMe('carol')
    await expect(atCarol).toHaveCount(1)
    await expect(atCarol).toHaveAttribute('data-peer', ids.bob)
    await expect(atCarol.locator('.text')).toHaveText('sealed for others — not for me')
    await expect(page.getByTestId('log-carol')).not.toContainText('Carol is out of the room')
    // What Carol read before she was removed stays read.
    await expect(incoming('carol', 'Hello room')).toHaveAttribute('data-sealed', 'true')

    const testInfo = test.info()
    const shot = testInfo.outputPath('demo.png')
    await page.screenshot({ path: shot, fullPage: true })
    await testInfo.attach('demo page', { path: shot, contentType: 'image/png' })
  })

  test('a reload keeps the identities, the history and the room, and messages still flow', async () => {
    const logs = async () => ({
      alice: await page.getByTestId('log-alice').locator('li').allInnerTexts(),
      bob: await page.getByTestId('log-bob').locator('li').allInnerTexts(),
      carol: await page.getByTestId('log-carol').locator('li').allInnerTexts(),
    })
    const before = await logs()
    expect(before.alice.length).toBeGreaterThanOrEqual(3)
    expect(before.bob.length).toBeGreaterThanOrEqual(4)
    await page.reload()
    await expect(page.getByTestId('status')).toHaveAttribute('data-ready', 'true')
    await expect(pane('alice')).toHaveAttribute('data-agent-id', ids.alice)
    await expect(pane('bob')).toHaveAttribute('data-agent-id', ids.bob)
    await expect(pane('carol')).toHaveAttribute('data-agent-id', ids.carol)
    expect(await logs()).toEqual(before)
    // The member list is in the agents' IndexedDB: Carol is still out.
    await expect(page.getByTestId('member-carol')).toHaveAttribute('data-member', 'false')
    await expect(page.getByTestId('member-bob')).toHaveAttribute('data-member', 'true')

    await send('bob', ids.alice, 'Still here after the reload')
    const atAlice = incoming('alice', 'Still here after the reload')
    await expect(atAlice).toHaveAttribute('data-sealed', 'true')
    // The pin survived too (it is in Bob's IndexedDB).
    await send('alice', ids.bob, 'And you still know me')
    await expect(incoming('bob', 'And you still know me')).toHaveAttribute('data-known', 'true')

    // The room's subscriptions outlived the reload (no subscribe again): Bob reads, Carol cannot.
    await send('alice', TO_ROOM, 'The room after the reload')
    await expect(incoming('bob', 'The room after the reload')).toHaveAttribute(
      'data-sealed',
      'true',
    )
    await expect(notForMe('carol')).toHaveCount(2)
    expect(problems).toEqual([])
  })
})
