/** Shared fixtures of the client tests: a dev certificate, https fetches, a real relay, ports. */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { memoryRelayStore, type RelayServer, serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import type { WebSocketConstructor } from '@agentmsg/transport-relay'
import { WebSocket as NodeWebSocket } from 'ws'
import type { ReceivedMessage } from '../src/index.js'
import { collect } from './collect.js'

export interface Env {
  cert: DevCertificate
  fetch: typeof fetch
  streamFetch: typeof fetch
  WebSocket: WebSocketConstructor
}

export async function createEnv(): Promise<Env> {
  const cert = await createDevCertificate()
  const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
  const ca = cert.ca
  return {
    cert,
    fetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 10_000 }),
    streamFetch: createNodeFetch({ ca, addressPolicy, timeoutMs: 0 }),
    WebSocket: class extends NodeWebSocket {
      constructor(url: string) {
        super(url, { ca })
      }
    } as unknown as WebSocketConstructor,
  }
}

const dirs: string[] = []

export async function startRelay(env: Env): Promise<RelayServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-client-relay-'))
  dirs.push(dataDir)
  return serveRelay({
    dataDir,
    tls: { cert: env.cert.cert, key: env.cert.key },
    allowPrivate: ['127.0.0.1'],
    ca: env.cert.ca,
    // The relay is not restarted here: its memory store keeps these tests independent of
    // the SQLite build.
    store: memoryRelayStore(),
    onError: () => {},
  })
}

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-client-'))
  dirs.push(dir)
  return dir
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })))
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export { collect }

export type Inbox = ReturnType<typeof collect<'message'>>
export type { ReceivedMessage }

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
