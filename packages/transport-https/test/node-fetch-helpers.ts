/**
 * Shared fixtures of the `createNodeFetch` tests: the test certificate, HTTPS and raw TCP servers
 * on 127.0.0.1, and an echo server started once per file by {@link setupEchoServer}.
 */

import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type tls from 'node:tls'
import { createAddressPolicy } from '@agentmsg/core/server'
import { afterAll, beforeAll } from 'vitest'
import { testCertificate } from './tls.js'

export const { cert, key, ca } = await testCertificate()
export const allowLoopback = createAddressPolicy({ allow: ['127.0.0.1'] })

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export interface TestServer {
  port: number
  origin: string
  connections: number
  remotePorts: number[]
  close(): Promise<void>
}

/** An HTTPS server on 127.0.0.1 that counts TLS connections and their client ports. */
export async function serve(
  handler: Handler,
  tlsOptions: https.ServerOptions = {},
): Promise<TestServer> {
  const server = https.createServer({ key, cert, ...tlsOptions }, handler)
  const state = { connections: 0, remotePorts: [] as number[] }
  server.on('secureConnection', (s: tls.TLSSocket) => {
    state.connections++
    state.remotePorts.push(s.remotePort ?? 0)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    origin: `https://127.0.0.1:${port}`,
    get connections() {
      return state.connections
    },
    remotePorts: state.remotePorts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** An HTTPS server that never ends a response: `/partial` gets a first chunk, any other path nothing. */
export function stallingServer(): Promise<TestServer> {
  return serve((req, res) => {
    if (req.url === '/partial') res.write('partial')
  })
}

/** A raw TCP server recording connections and every byte received. */
export async function rawServer(): Promise<{
  port: number
  connections: number
  bytes: number
  close(): Promise<void>
}> {
  const state = { connections: 0, bytes: 0 }
  const sockets = new Set<net.Socket>()
  const server = net.createServer((s) => {
    state.connections++
    sockets.add(s)
    s.on('data', (d) => (state.bytes += d.length))
    s.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    get connections() {
      return state.connections
    },
    get bytes() {
      return state.bytes
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** The reason `p` rejects with. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The echo server of this file: replies with the request's method, URL, headers and body. */
export let echo: TestServer

/** Register the file's hooks: start {@link echo} before all tests, close it after. */
export function setupEchoServer(): void {
  beforeAll(async () => {
    echo = await serve((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        res.setHeader('content-type', 'application/json')
        res.setHeader('x-reply', 'yes')
        res.end(
          JSON.stringify({
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        )
      })
    })
  })
  afterAll(() => echo.close())
}
