/**
 * Shared fixtures of the relay client tests: a real relay over HTTPS and clients of it. Agents
 * and signed messages come from `@agentmsg/conformance` (`fixtureAgent`, `signedMessage`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FixtureAgent } from '@agentmsg/conformance'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { type RelayStore, serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { WebSocket as NodeWebSocket } from 'ws'
import { createRelayClient, type RelayClient, type WebSocketConstructor } from '../src/index.js'

/** What the tests connect with; set by {@link setupRelayTests}' `beforeAll`. */
export const net = {} as {
  cert: DevCertificate
  fetch: typeof fetch
  streamFetch: typeof fetch
  WebSocket: WebSocketConstructor
}
const tmpDirs: string[] = []
/** Run after each test, last first. */
export const cleanups: Array<() => Promise<void>> = []

/** Register the file's hooks: a certificate and clients before all, cleanups after each test. */
export function setupRelayTests(): void {
  beforeAll(async () => {
    net.cert = await createDevCertificate()
    const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
    net.fetch = createNodeFetch({ ca: net.cert.ca, addressPolicy, timeoutMs: 10_000 })
    net.streamFetch = createNodeFetch({ ca: net.cert.ca, addressPolicy, timeoutMs: 0 })
    const ca = net.cert.ca
    // Passes the client's options (maxPayload, PROFILE §4) on to `ws`.
    net.WebSocket = class extends NodeWebSocket {
      constructor(url: string, _protocols?: undefined, options?: { maxPayload: number }) {
        super(url, { ...options, ca })
      }
    } as unknown as WebSocketConstructor
  })
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => {})
  })
  afterAll(async () => {
    for (const dir of tmpDirs) await rm(dir, { recursive: true, force: true })
  })
}

/** A real relay (packages/relay) on 127.0.0.1 with a fresh (or the given) data directory. */
export async function startRelay(
  options: {
    port?: number
    dataDir?: string
    store?: RelayStore
    limits?: NonNullable<Parameters<typeof serveRelay>[0]['limits']>
  } = {},
) {
  let dataDir = options.dataDir
  if (!dataDir) {
    dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-client-'))
    tmpDirs.push(dataDir)
  }
  const relay = await serveRelay({
    dataDir,
    port: options.port ?? 0,
    tls: { cert: net.cert.cert, key: net.cert.key },
    allowPrivate: ['127.0.0.1'],
    closeTimeoutMs: 500,
    limits: options.limits ?? { perSender: { perMinute: 6000, burst: 1000 } },
    onError: () => {},
    ...(options.store ? { store: options.store } : {}),
  })
  return { relay, dataDir }
}

export function clientFor(agent: FixtureAgent, relayUrl: string): RelayClient {
  return createRelayClient({
    relayUrl,
    agent: agent.id,
    signer: agent.signer,
    fetch: net.fetch,
    streamFetch: net.streamFetch,
    WebSocket: net.WebSocket,
  })
}

export async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}
