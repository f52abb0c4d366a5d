/**
 * Shared by the specs that run an agent page against a real relay: Chromium launched to trust
 * exactly one development certificate, the test page served from the relay's own origin (so
 * page and relay are same-origin), and the Node side's transport options for that certificate.
 */
import { createHash, X509Certificate } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Agent, type AgentOptions, createAgent, type ReceivedMessage } from '@agentmsg/client'
import { memoryStorage } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { type RelayServer, serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import type { WebSocketConstructor } from '@agentmsg/transport-relay'
import { type Browser, type BrowserContext, chromium, type Page } from '@playwright/test'
import { WebSocket as NodeWebSocket } from 'ws'
import config from '../../playwright.config.js'

/** Where the test page and its bundle live on the relay's origin. */
export const TEST_PATH = '/__test'

/** The test page: loads the bundle served at `${TEST_PATH}/bundle.js`. */
export function testPageHtml(title: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title>
<link rel="icon" href="data:,">
<script type="module" src="${TEST_PATH}/bundle.js"></script>
</head><body></body></html>`
}

/** The launch options of the configured project, so these specs run the same Chromium. */
function configuredLaunch(): { executablePath: string; args: string[] } {
  const launch = config.projects?.[0]?.use?.launchOptions ?? {}
  return {
    executablePath: launch.executablePath ?? '/usr/bin/chromium',
    args: [...(launch.args ?? [])],
  }
}

/** base64(SHA-256(SubjectPublicKeyInfo DER)): what `--ignore-certificate-errors-spki-list` takes. */
function spkiHash(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' })
  return createHash('sha256').update(spki).digest('base64')
}

/** Chromium that trusts only this certificate's key besides its normal roots. */
export function launchTrusting(certPem: string): Promise<Browser> {
  const launch = configuredLaunch()
  return chromium.launch({
    headless: true,
    executablePath: launch.executablePath,
    args: [...launch.args, `--ignore-certificate-errors-spki-list=${spkiHash(certPem)}`],
  })
}

/**
 * Serve the test page and its scripts under TEST_PATH on the relay's origin and refuse every
 * other origin (reported as a problem). Requests to the relay itself are untouched. `scripts` is
 * the one bundle (served as `bundle.js`), or looks a file name under TEST_PATH up (chunks of a
 * split bundle); a name it does not know is reported.
 */
export async function routeTestPage(
  page: Page,
  origin: string,
  html: string,
  scripts: string | ((name: string) => string | undefined),
  report: (problem: string) => void,
): Promise<void> {
  const script =
    typeof scripts === 'string'
      ? (name: string) => (name === 'bundle.js' ? scripts : undefined)
      : scripts
  // Routes registered later take precedence.
  await page.route(
    (url) => url.origin !== origin,
    (route) => {
      report(`unexpected request to ${route.request().url()}`)
      return route.abort('blockedbyclient')
    },
  )
  await page.route(`${origin}${TEST_PATH}/**`, (route) => {
    const { pathname } = new URL(route.request().url())
    if (pathname === `${TEST_PATH}/`) {
      return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html })
    }
    const body = script(pathname.slice(TEST_PATH.length + 1))
    if (body === undefined) {
      report(`no such test resource: ${pathname}`)
      return route.fulfill({ status: 404, body: 'not found' })
    }
    return route.fulfill({ status: 200, contentType: 'text/javascript; charset=utf-8', body })
  })
}

/**
 * A new context and page for `origin` whose page errors, crashes and console errors are
 * reported. A document fulfilled by `page.route` has no remote address, so Chromium files it
 * under the public address space even on the relay's origin: same-origin `fetch` passes, but a
 * WebSocket to 127.0.0.1 is refused (ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_CHECKS) unless the
 * origin holds the local-network-access permission, granted here to this origin only.
 */
export async function openTestPage(
  browser: Browser,
  origin: string,
  report: (problem: string) => void,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext()
  await context.grantPermissions(['local-network-access'], { origin })
  const page = await context.newPage()
  page.on('pageerror', (err) => report(`page error: ${err.stack ?? err.message}`))
  page.on('crash', () => report('page crashed'))
  page.on('console', (msg) => {
    if (msg.type() === 'error') report(`console error: ${msg.text()}`)
  })
  return { context, page }
}

/** fetch, SSE fetch and WebSocket for a Node agent that trusts `ca` (verification stays on). */
export function nodeRelayTransport(ca: string): {
  fetch: typeof fetch
  streamFetch: typeof fetch
  WebSocket: WebSocketConstructor
} {
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  return {
    fetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 10_000 }),
    streamFetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 0 }),
    WebSocket: class extends NodeWebSocket {
      constructor(url: string) {
        super(url, { ca })
      }
    } as unknown as WebSocketConstructor,
  }
}

/**
 * The Node agent of these specs: relay-only on `relayUrl`, memory storage, trusting `ca`; what it
 * is handed goes to `received`, its error events to `errors`.
 */
export async function startNodeAgent(
  relayUrl: string,
  ca: string,
  received: ReceivedMessage[],
  errors: string[],
  options: Partial<AgentOptions> = {},
): Promise<Agent> {
  const node = await createAgent({
    storage: memoryStorage(),
    relays: [relayUrl],
    ...options,
    ...nodeRelayTransport(ca),
  })
  node.on('message', (m) => void received.push(m))
  node.on('error', (e) => void errors.push(String(e.error)))
  return node
}

/**
 * Page problems as a race: `report(problem)` records it and fails every `inPage(call)` at once,
 * so a page error, console error or bad request ends the test with its cause, not a timeout.
 */
export function pageFailures(label: string): {
  problems: string[]
  report: (problem: string) => void
  inPage: <T>(call: Promise<T>) => Promise<T>
} {
  const problems: string[] = []
  let fail: (e: Error) => void = () => {}
  const failed = new Promise<never>((_, reject) => {
    fail = reject
  })
  failed.catch(() => {})
  return {
    problems,
    report: (problem) => {
      problems.push(problem)
      fail(new Error(`${label} page: ${problem}`))
    },
    inPage: (call) => Promise.race([call, failed]),
  }
}

/** A real relay on SQLite in a new temporary directory, https on 127.0.0.1 with a dev certificate. */
export async function startTestRelay(
  prefix: string,
  relayErrors: string[],
): Promise<{ cert: DevCertificate; dataDir: string; relay: RelayServer; origin: string }> {
  const cert = await createDevCertificate()
  const dataDir = await mkdtemp(path.join(tmpdir(), prefix))
  const relay = await serveRelay({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    tls: { cert: cert.cert, key: cert.key },
    allowPrivate: ['127.0.0.1'],
    closeTimeoutMs: 1_000,
    onError: (e) => relayErrors.push(e instanceof Error ? (e.stack ?? e.message) : String(e)),
  })
  return { cert, dataDir, relay, origin: new URL(relay.url).origin }
}
