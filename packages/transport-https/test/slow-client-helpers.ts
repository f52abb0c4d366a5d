/**
 * Clients of the slow- and parallel-client attack tests: HTTPS requests from a chosen loopback
 * address (127.0.0.2 is another client than 127.0.0.1 on Linux), and uploads that stall.
 */
import type { ClientRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect } from 'node:tls'
import type { ClientResponse } from './inbox-helpers.js'
import { testCertificate } from './tls.js'

function collect(
  req: ClientRequest,
  resolve: (r: ClientResponse | undefined) => void,
): ClientRequest {
  let responded = false
  req.on('response', (res) => {
    responded = true
    const chunks: Buffer[] = []
    res.on('data', (c: Buffer) => chunks.push(c))
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
    })
    res.on('error', () => resolve(undefined))
    res.on('close', () => resolve(undefined)) // after 'end' this does nothing
  })
  // A refused upload is cut off by the server: the client then sees EPIPE or a reset.
  const gone = () => {
    if (!responded) resolve(undefined)
  }
  req.on('error', gone)
  req.on('close', gone)
  return req
}

/** POST a JSON body from `localAddress`. */
export async function postFrom(
  url: string,
  body: unknown,
  localAddress = '127.0.0.1',
): Promise<ClientResponse | undefined> {
  const { ca } = await testCertificate()
  const text = JSON.stringify(body)
  return new Promise((resolve) => {
    const req = httpsRequest(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      ca,
      agent: false,
      localAddress,
    })
    collect(req, resolve).end(text)
  })
}

/** An upload that announced `length` bytes, sent `sent` of them and stopped. */
export interface StalledUpload {
  /** The answer, or undefined when the connection was closed without one. */
  response: Promise<ClientResponse | undefined>
  /** Resolves once the `sent` bytes were handed to the socket (or the request failed). */
  written: Promise<void>
  destroy(): void
}

const CHUNK = Buffer.alloc(16 * 1024, 0x20) // spaces: shared, so the client holds no copies

/** Start an upload that stalls after `sent` of `length` bytes, writing with back-pressure. */
export async function stalledUpload(
  url: string,
  options: { length: number; sent: number; localAddress?: string },
): Promise<StalledUpload> {
  const { ca } = await testCertificate()
  let resolveResponse!: (r: ClientResponse | undefined) => void
  const response = new Promise<ClientResponse | undefined>((r) => (resolveResponse = r))
  const req = httpsRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': String(options.length) },
    ca,
    agent: false,
    localAddress: options.localAddress ?? '127.0.0.1',
  })
  collect(req, resolveResponse)
  req.flushHeaders()
  const written = (async () => {
    let left = options.sent
    while (left > 0 && !req.destroyed) {
      const n = Math.min(left, CHUNK.length)
      left -= n
      if (!req.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
        await new Promise<void>((resolve) => {
          const go = () => {
            req.off('drain', go)
            req.off('close', go)
            resolve()
          }
          req.on('drain', go)
          req.on('close', go)
        })
      }
    }
  })()
  return { response, written, destroy: () => req.destroy() }
}

/**
 * A TLS connection that sends `text` (an unfinished request) and nothing more; resolves with
 * what the server wrote before it closed the connection.
 */
export async function stalledHeaders(url: string, text: string): Promise<string> {
  const { ca } = await testCertificate()
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect({ host: hostname, port: Number(port), ca }, () => {
      socket.write(text)
    })
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', () => undefined)
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
  })
}
