/**
 * Targets for the outbound attack tests (PROFILE §4): a loopback listener that counts every TCP
 * connection it accepts, on 127.0.0.1 and ::1 at one port, so each way of writing a loopback
 * address reaches it; a port nobody listens on; and a server answering an endless body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import type net from 'node:net'
import { testCertificate } from './tls.js'

/** The forms of one loopback address an attacker may write in a URL (PROFILE §4). */
export function literalOrigins(port: number): string[] {
  return [
    `https://127.0.0.1:${port}`,
    `https://2130706433:${port}`,
    `https://0x7f.1:${port}`,
    `https://[::ffff:127.0.0.1]:${port}`,
    `https://0.0.0.0:${port}`,
    `https://[::1]:${port}`,
  ]
}

/** A listener on loopback counting accepted TCP connections and HTTP requests. */
export interface CountingServer {
  port: number
  /** TCP connections accepted, on any of its addresses. */
  readonly connections: number
  /** HTTP requests received. */
  readonly requests: number
  close(): Promise<void>
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function listen(server: net.Server, port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const onError = () => resolve(false)
    server.once('error', onError)
    server.listen(port, host, () => {
      server.removeListener('error', onError)
      resolve(true)
    })
  })
}

/**
 * An HTTPS server with the test certificate on 127.0.0.1 and ::1 at the same port, counting
 * connections the moment TCP accepts them (`connection`), before any TLS.
 */
export async function countingServer(
  handler: Handler = (_req, res) => res.end('{}'),
): Promise<CountingServer> {
  const { cert, key } = await testCertificate()
  const state = { connections: 0, requests: 0 }
  const counted: Handler = (req, res) => {
    state.requests++
    handler(req, res)
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const v4 = https.createServer({ cert, key }, counted)
    const v6 = https.createServer({ cert, key }, counted)
    for (const s of [v4, v6]) s.on('connection', () => state.connections++)
    if (!(await listen(v4, 0, '127.0.0.1'))) continue
    const port = (v4.address() as net.AddressInfo).port
    if (!(await listen(v6, port, '::1'))) {
      await new Promise((r) => v4.close(r))
      continue
    }
    const close = (s: https.Server) =>
      new Promise<void>((resolve) => {
        s.closeAllConnections()
        s.close(() => resolve())
      })
    return {
      port,
      get connections() {
        return state.connections
      },
      get requests() {
        return state.requests
      },
      close: async () => {
        await Promise.all([close(v4), close(v6)])
      },
    }
  }
  throw new Error('no port free on both 127.0.0.1 and ::1')
}

/** A port nobody listens on now, on 127.0.0.1 nor ::1. */
export async function closedPort(): Promise<number> {
  const s = await countingServer()
  await s.close()
  return s.port
}

/** Counts of an endless answer: bytes the server got written before the client went away. */
export interface EndlessServer extends CountingServer {
  /** Body bytes handed to the socket and accepted by it, over all requests. */
  readonly written: number
  /** Resolves once every response the server started has ended (the client closed). */
  settled(): Promise<void>
}

/** Most a runaway test lets the server write to one response: far past any cap under test. */
const SAFETY_STOP = 256 * 1024 * 1024

/**
 * A server answering every request with `status` and a body that never ends: 64 KiB chunks,
 * as fast as the client reads them (it waits on `drain`). It stops when the client closes.
 */
export async function endlessServer(status = 200): Promise<EndlessServer> {
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  let written = 0
  const open = new Set<Promise<void>>()
  const server = await countingServer((req, res) => {
    req.resume()
    res.writeHead(status, { 'content-type': 'application/json' })
    res.write('{"pad":"')
    let stopped = false
    const done = new Promise<void>((resolve) => {
      res.once('close', () => {
        stopped = true
        resolve()
      })
    })
    open.add(done)
    void done.then(() => open.delete(done))
    const pump = () => {
      while (!stopped && written < SAFETY_STOP) {
        const ok = res.write(chunk, (err) => {
          if (!err) written += chunk.byteLength
        })
        if (!ok) return void res.once('drain', pump)
      }
    }
    pump()
  })
  return {
    port: server.port,
    get connections() {
      return server.connections
    },
    get requests() {
      return server.requests
    },
    get written() {
      return written
    },
    async settled() {
      await Promise.all([...open])
    },
    close: () => server.close(),
  }
}
