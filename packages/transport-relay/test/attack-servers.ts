/**
 * Hostile "relays" for the response-cap attack tests: HTTPS servers on 127.0.0.1 that pour an
 * endless body, a giant SSE event or an oversize WebSocket frame, counting the bytes they
 * manage to hand to the socket (with back-pressure, so the count is what the client let in
 * plus the sockets' buffers), and a sampler of this process's memory.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Writable } from 'node:stream'
import { cert, cleanups, servers } from './client-scripted.js'

export const MiB = 1024 * 1024

/** Bytes a server wrote, per connection (most recent last). */
export interface Poured {
  sent: number[]
  /** Resolves when the first connection's pouring ended (the client hung up, or all sent). */
  firstDone: Promise<void>
}

/**
 * Write `prefix`, then `chunk` until `total` bytes or the peer hangs up, honouring
 * back-pressure; the bytes go to `counter[index]`.
 */
export async function pour(
  out: Writable,
  prefix: Buffer,
  chunk: Buffer,
  total: number,
  counter: number[],
  index: number,
): Promise<void> {
  let closed = false
  out.once('close', () => {
    closed = true
  })
  out.on('error', () => {
    closed = true
  })
  counter[index] = 0
  const write = async (b: Buffer) => {
    const ok = out.write(b)
    counter[index]! += b.length
    if (!ok) {
      await new Promise<void>((resolve) => {
        const done = () => {
          out.off('drain', done)
          out.off('close', done)
          resolve()
        }
        out.once('drain', done)
        out.once('close', done)
      })
    }
  }
  await write(prefix)
  while (!closed && counter[index]! < total) {
    const left = total - counter[index]!
    await write(left < chunk.length ? chunk.subarray(0, left) : chunk)
  }
}

/**
 * An HTTPS server answering every request with `status`, `contentType`, `prefix` and then
 * `chunk` repeated up to `total` bytes. Returns its origin and the byte counts.
 */
export async function endlessServer(o: {
  status: number
  contentType: string
  prefix: string
  chunk: string
  total: number
  onRequest?: (req: IncomingMessage) => void
}): Promise<{ url: string; poured: Poured }> {
  const sent: number[] = []
  let first: () => void
  const firstDone = new Promise<void>((r) => (first = r))
  const chunk = Buffer.from(o.chunk)
  const server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    o.onRequest?.(req)
    req.resume()
    const index = sent.length
    res.writeHead(o.status, { 'content-type': o.contentType })
    void pour(res, Buffer.from(o.prefix), chunk, o.total, sent, index).then(() => {
      if (index === 0) first()
      res.destroy()
    })
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    poured: { sent, firstDone },
  }
}

/**
 * A WebSocket "relay" written by hand: it completes the handshake, then sends one text frame
 * whose header announces `length` bytes and pours its payload (`a` repeated), up to `length`
 * or until the client hangs up.
 */
export async function giantFrameServer(length: number): Promise<{ url: string; poured: Poured }> {
  const sent: number[] = []
  let first: () => void
  const firstDone = new Promise<void>((r) => (first = r))
  const server = createServer({ cert: cert.cert, key: cert.key })
  server.on('upgrade', (req: IncomingMessage, socket) => {
    const key = String(req.headers['sec-websocket-key'])
    const accept = createHash('sha1')
      .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64')
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
    )
    // FIN + text frame, unmasked, 64-bit length (RFC 6455 §5.2).
    const header = Buffer.alloc(10)
    header[0] = 0x81
    header[1] = 127
    header.writeBigUInt64BE(BigInt(length), 2)
    const index = sent.length
    cleanups.push(async () => void socket.destroy())
    void pour(socket, header, Buffer.alloc(64 * 1024, 0x61), length + 10, sent, index).then(() => {
      if (index === 0) first()
      // Whole frame sent: hang up once the client answers (its close frame).
      socket.once('data', () => socket.destroy())
    })
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    poured: { sent, firstDone },
  }
}

/**
 * Sample this process's JS heap and array buffers every few ms; `stop()` returns the largest
 * growth over the value when sampling started, in bytes.
 */
export function sampleMemory(): { stop(): number } {
  const now = () => {
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const base = now()
  let peak = base
  const timer = setInterval(() => {
    peak = Math.max(peak, now())
  }, 5)
  return {
    stop() {
      clearInterval(timer)
      peak = Math.max(peak, now())
      return peak - base
    },
  }
}
