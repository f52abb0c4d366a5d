/**
 * `relayTransport` (@agentmsg/transport-relay) passes the Transport contract against a real
 * relay (@agentmsg/relay) over HTTPS on 127.0.0.1, streaming by SSE and by WebSocket: a
 * store-and-forward transport, so a refusal with `retry: true` comes again.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { testTransport } from '@agentmsg/conformance'
import type { TransportFactory } from '@agentmsg/core'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { type RelayServer, serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { relayTransport, type WebSocketConstructor } from '@agentmsg/transport-relay'
import { afterAll, beforeAll } from 'vitest'
import { WebSocket as NodeWebSocket } from 'ws'

let relay: RelayServer
let dataDir: string
let options: Parameters<typeof relayTransport>[0]

beforeAll(async () => {
  const cert = await createDevCertificate()
  dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-conformance-relay-'))
  relay = await serveRelay({
    dataDir,
    tls: { cert: cert.cert, key: cert.key },
    allowPrivate: ['127.0.0.1'],
    ca: cert.ca,
  })
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const ca = cert.ca
  options = {
    fetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 10_000 }),
    streamFetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 0 }),
    WebSocket: class extends NodeWebSocket {
      constructor(url: string) {
        super(url, { ca })
      }
    } as unknown as WebSocketConstructor,
  }
})

afterAll(async () => {
  await relay?.close()
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
})

/** The relay transport, built when a check creates it (after the relay started). */
function relayFactory(mode: 'sse' | 'ws'): TransportFactory {
  return {
    protocol: 'relay',
    create: (components) => relayTransport({ ...options, mode }).create(components),
  }
}

for (const mode of ['sse', 'ws'] as const) {
  testTransport(`relayTransport (${mode})`, {
    factory: relayFactory(mode),
    delivery: 'stored',
    get relays() {
      return [relay.url]
    },
  })
}
