/**
 * The demo page when its relay goes away and comes back, in real Chromium against the real
 * `npm start` (./demo-server.ts). The status follows the agents' relay streams (SSE and
 * WebSocket, demo/page/online.ts): stopping start.mjs (as Ctrl-C does) turns it offline and each pane says
 * in words what failed; starting it again on the same port and data turns it online, the words
 * are gone, and messages flow again through the restarted relay. The legend of a message's
 * facts is on the page.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Browser, expect, type Page, test } from '@playwright/test'
import { type DemoServer, freePort, openDemoBrowser, startDemoServer } from './demo-server.js'

/** Backoff after a drop is full jitter up to 30 s (transport-relay STREAM_BACKOFF): wait past it. */
const RECONNECT = { timeout: 45_000 }
const KEYS = ['alice', 'bob', 'carol'] as const

test.describe('npm start: the demo page while its relay is down', () => {
  let home: string
  let port: number
  let server: DemoServer | undefined
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []

  test.beforeAll(async () => {
    home = await mkdtemp(path.join(tmpdir(), 'agentmsg-demo-offline-'))
    port = await freePort()
    server = await startDemoServer(port, home)
    ;({ browser, page } = await openDemoBrowser(home, server.relayUrl))
    page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message))
    await page.goto(server.pageUrl)
    await expect(page.getByTestId('status')).toHaveAttribute('data-ready', 'true')
  })

  test.afterAll(async () => {
    await browser?.close().catch(() => {})
    await server?.stop()
    if (home) await rm(home, { recursive: true, force: true })
  })

  test('offline while the relay is stopped, online again once it is back, errors gone', async () => {
    test.setTimeout(180_000)
    const status = page.getByTestId('status')
    await expect(status).toHaveAttribute('data-state', 'online')
    await expect(status).toContainText('Online')
    const legend = page.getByTestId('legend')
    await expect(legend).toBeVisible()
    for (const words of ['level', 'known contact', 'sealed'])
      await expect(legend).toContainText(words)
    const relayUrl = server!.relayUrl

    await server!.stop()
    server = undefined
    await expect(status).toHaveAttribute('data-state', 'offline')
    await expect(status).toContainText(`cannot reach the relay at ${relayUrl}`)
    for (const key of KEYS) {
      await expect(page.getByTestId(`state-${key}`)).toHaveAttribute('data-online', 'false')
      await expect(page.getByTestId(`state-${key}`)).toHaveText(/offline/)
    }
    // What failed, in words (the SSE panes retry and fail while nothing listens).
    await expect(page.getByTestId('errors-alice')).toHaveText(
      'The relay does not answer right now: retrying by itself.',
      RECONNECT,
    )

    // The same port and data: the mailboxes, subscriptions and certificate are the same.
    server = await startDemoServer(port, home)
    await expect(status).toHaveAttribute('data-state', 'online', RECONNECT)
    for (const key of KEYS) {
      await expect(page.getByTestId(`state-${key}`)).toHaveAttribute('data-online', 'true')
      await expect(page.getByTestId(`errors-${key}`)).toHaveText('')
    }

    // Receiving again, over SSE (Alice) and WebSocket (Bob).
    const bob = (await page.getByTestId('pane-bob').getAttribute('data-agent-id')) ?? ''
    const alice = (await page.getByTestId('pane-alice').getAttribute('data-agent-id')) ?? ''
    for (const [from, to, text] of [
      ['alice', bob, 'back online, Bob?'],
      ['bob', alice, 'back online, Alice.'],
    ] as const) {
      await page.getByTestId(`to-${from}`).selectOption(to)
      await page.getByTestId(`text-${from}`).fill(text)
      await page.getByTestId(`send-${from}`).click()
    }
    const received = (key: string, text: string) =>
      page.getByTestId(`log-${key}`).locator('li[data-direction="in"]', { hasText: text })
    await expect(received('bob', 'back online, Bob?')).toHaveAttribute('data-sealed', 'true')
    await expect(received('alice', 'back online, Alice.')).toHaveAttribute('data-sealed', 'true')
    // The trace names only the route's relay: not shown again.
    await expect(received('bob', 'back online, Bob?').locator('.trace')).toHaveCount(0)
    expect(pageErrors).toEqual([])
  })
})
