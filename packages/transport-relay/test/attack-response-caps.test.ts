/**
 * Attack (issue 9 item 8, PROFILE §4 byte caps and timeouts): a hostile "relay" on 127.0.0.1
 * answers with an endless body, a 50 MiB SSE event or an oversize WebSocket frame, or never
 * answers at all. The relay client stops at the cap (the bytes the server manages to send stay
 * bounded, and so does this process's memory), reports a clear error, and never buffers the
 * answer whole; requests time out by default after 30 s, silent streams after 45 s.
 */

import { PROFILE } from '@agentmsg/core'
import { describe, expect, it, vi } from 'vitest'
import { WebSocket as NodeWebSocket } from 'ws'
import { STREAM_IDLE_MS as DEFAULT_STREAM_IDLE_MS } from '../src/client/relay-core.js'
import { SseParser } from '../src/client/sse-parser.js'
import { createRelayClient, type RelayClient, type WebSocketConstructor } from '../src/index.js'
import { endlessServer, giantFrameServer, MiB, sampleMemory } from './attack-servers.js'
import {
  bob,
  cert,
  cleanups,
  fetchFn,
  scripted,
  setupScriptedTests,
  until,
} from './client-scripted.js'

setupScriptedTests()

const {
  requestTimeoutMs: DEFAULT_TIMEOUT_MS,
  eventMaxBytes: MAX_EVENT_BYTES,
  pageMaxBytes: MAX_PAGE_RESPONSE_BYTES,
  replyMaxBytes: MAX_REPLY_BYTES,
} = PROFILE

/** What the sockets between the two ends can hold besides what the client read (loopback). */
const SOCKET_SLACK = 16 * MiB

function clientOf(url: string, WebSocket?: WebSocketConstructor): RelayClient {
  return createRelayClient({
    relayUrl: url,
    agent: bob.id,
    signer: bob.signer,
    fetch: fetchFn, // no timeout of its own: the client's default applies
    ...(WebSocket ? { WebSocket } : {}),
  })
}

const endlessJson = (status: number, total = 256 * MiB) =>
  endlessServer({
    status,
    contentType: 'application/json',
    prefix: '{"messages":["',
    chunk: 'a'.repeat(64 * 1024),
    total,
  })

describe('attack: oversized and endless relay answers', () => {
  it('retrieve: an endless page is cut at 8 MiB + 64 KiB and never buffered whole', async () => {
    const { url, poured } = await endlessJson(200)
    const memory = sampleMemory()
    await expect(clientOf(url).retrieve()).rejects.toMatchObject({
      code: 'unavailable',
      message: `retrieve: the relay's answer is over ${MAX_PAGE_RESPONSE_BYTES} bytes`,
    })
    await poured.firstDone
    const growth = memory.stop()
    expect(MAX_PAGE_RESPONSE_BYTES).toBe(8 * MiB + 64 * 1024)
    expect(poured.sent[0]).toBeLessThan(MAX_PAGE_RESPONSE_BYTES + SOCKET_SLACK)
    expect(growth).toBeLessThan(64 * MiB)
  })

  it('replies: subscribe, ack and error bodies are read up to 64 KiB only', async () => {
    expect(MAX_REPLY_BYTES).toBe(64 * 1024)
    const ok = await endlessJson(201)
    await expect(clientOf(ok.url).subscribe()).rejects.toMatchObject({
      code: 'unavailable',
      message: `subscribe: the relay's answer is over ${MAX_REPLY_BYTES} bytes`,
    })
    await ok.poured.firstDone
    expect(ok.poured.sent[0]).toBeLessThan(MAX_REPLY_BYTES + SOCKET_SLACK)

    const acked = await endlessJson(200)
    const from = bob.id
    await expect(clientOf(acked.url).ackMany([{ messageId: 'm1', from }])).rejects.toMatchObject({
      message: `ack 1 entries: the relay's answer is over ${MAX_REPLY_BYTES} bytes`,
    })
    await acked.poured.firstDone
    expect(acked.poured.sent[0]).toBeLessThan(MAX_REPLY_BYTES + SOCKET_SLACK)

    // An error answer with an endless body: the status decides, the body is dropped at the cap.
    const failing = await endlessJson(503)
    await expect(clientOf(failing.url).retrieve()).rejects.toMatchObject({
      code: 'unavailable',
      status: 503,
      message: 'retrieve: 503 unavailable',
    })
    await failing.poured.firstDone
    expect(failing.poured.sent[0]).toBeLessThan(MAX_REPLY_BYTES + SOCKET_SLACK)
  })

  it('SSE: a 50 MiB event is dropped at 1 MiB + 64 KiB with a clear error', async () => {
    expect(MAX_EVENT_BYTES).toBe(MiB + 64 * 1024)
    // 50 MiB of data lines, 64 KiB each, in one event that never ends.
    const line = `data: ${'a'.repeat(64 * 1024 - 7)}\n`
    const { url, poured } = await endlessServer({
      status: 200,
      contentType: 'text/event-stream',
      prefix: ': relay\n\nid: 1\nevent: message\n',
      chunk: line,
      total: 50 * MiB,
    })
    const errors: unknown[] = []
    let handled = 0
    const memory = sampleMemory()
    const handle = clientOf(url).stream(() => void handled++, {
      onError: (e) => errors.push(e),
      backoff: { baseMs: 60_000, random: () => 0.99 },
    })
    cleanups.push(() => handle.close())
    await until(() => errors.length > 0)
    await poured.firstDone
    const growth = memory.stop()
    await handle.close()
    expect(errors[0]).toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining(`an event over ${MAX_EVENT_BYTES} bytes`),
    })
    expect(handled).toBe(0)
    expect(poured.sent[0]).toBeLessThan(MAX_EVENT_BYTES + SOCKET_SLACK)
    expect(growth).toBeLessThan(48 * MiB)
  })

  it('the SSE parser refuses one endless line, or endless comments, at the cap', () => {
    const tooLarge = () => new RangeError('over the cap')
    const parser = new SseParser(1024, tooLarge)
    expect(() => parser.feed(new TextEncoder().encode(`data: ${'x'.repeat(2000)}`))).toThrow(
      'over the cap',
    )
    const comments = new SseParser(1024, tooLarge)
    expect(() => {
      for (let i = 0; i < 200; i++) comments.feed(new TextEncoder().encode(': keep-alive\n'))
    }).toThrow('over the cap')
    // The same bytes with the blank line that ends each: nothing accumulates.
    const fine = new SseParser(1024, tooLarge)
    for (let i = 0; i < 200; i++) fine.feed(new TextEncoder().encode(': keep-alive\n\n'))
    expect(fine.feed(new TextEncoder().encode('id: 7\ndata: {}\n\n'))).toEqual([
      { id: '7', data: new TextEncoder().encode('{}') },
    ])
  })

  it('WebSocket: a 50 MiB frame is refused as its header arrives (ws maxPayload)', async () => {
    const { url, poured } = await giantFrameServer(50 * MiB)
    const ca = cert.ca
    const PassesOptions = class extends NodeWebSocket {
      constructor(u: string, _p?: undefined, options?: { maxPayload: number }) {
        super(u, { ...options, ca })
      }
    } as unknown as WebSocketConstructor
    const errors: unknown[] = []
    const memory = sampleMemory()
    const handle = clientOf(url, PassesOptions).stream(() => {}, {
      mode: 'ws',
      onError: (e) => errors.push(e),
      backoff: { baseMs: 60_000, random: () => 0.99 },
    })
    cleanups.push(() => handle.close())
    await until(() => errors.length > 0)
    await poured.firstDone
    const growth = memory.stop()
    await handle.close()
    expect(errors[0]).toMatchObject({
      code: 'unavailable',
      message: 'relay protocol error: websocket error: Max payload size exceeded',
    })
    expect(poured.sent[0]).toBeLessThan(MAX_EVENT_BYTES + SOCKET_SLACK)
    expect(growth).toBeLessThan(48 * MiB)
  })

  it('WebSocket without maxPayload (as in browsers): a frame over the cap is refused on receipt', async () => {
    const { url, poured } = await giantFrameServer(MAX_EVENT_BYTES + 1)
    const ca = cert.ca
    const IgnoresOptions = class extends NodeWebSocket {
      constructor(u: string) {
        super(u, { ca })
      }
    } as unknown as WebSocketConstructor
    const errors: unknown[] = []
    const handle = clientOf(url, IgnoresOptions).stream(() => {}, {
      mode: 'ws',
      onError: (e) => errors.push(e),
      backoff: { baseMs: 60_000, random: () => 0.99 },
    })
    cleanups.push(() => handle.close())
    await until(() => errors.length > 0)
    await poured.firstDone
    await handle.close()
    expect(errors[0]).toMatchObject({
      code: 'unavailable',
      message: `relay protocol error: a frame over ${MAX_EVENT_BYTES} bytes`,
    })
    expect(poured.sent[0]).toBe(MAX_EVENT_BYTES + 1 + 10)
  })
})

describe('attack: a relay that never answers, or goes silent', () => {
  it(`requests time out after ${DEFAULT_TIMEOUT_MS} ms by default`, async () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(30_000)
    let arrived!: () => void
    const arrival = new Promise<void>((r) => (arrived = r))
    let hungUp!: () => void
    const hangUp = new Promise<void>((r) => (hungUp = r))
    const url = await scripted((req) => {
      req.socket.once('close', () => hungUp())
      arrived() // and never answer
    })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      let settled = false
      const call = clientOf(url)
        .retrieve()
        .finally(() => (settled = true))
      call.catch(() => {})
      await arrival
      vi.advanceTimersByTime(DEFAULT_TIMEOUT_MS - 1)
      await new Promise((r) => setImmediate(r))
      expect(settled).toBe(false)
      vi.advanceTimersByTime(1)
      await expect(call).rejects.toMatchObject({
        code: 'unavailable',
        message: `retrieve: no answer within ${DEFAULT_TIMEOUT_MS} ms`,
      })
    } finally {
      vi.useRealTimers()
    }
    await hangUp // the connection was dropped, not left open
  })

  it(`an SSE stream with nothing for ${DEFAULT_STREAM_IDLE_MS} ms (three missed comments) reconnects`, async () => {
    expect(DEFAULT_STREAM_IDLE_MS).toBe(45_000)
    let streams = 0
    let opened!: () => void
    const open = new Promise<void>((r) => (opened = r))
    const url = await scripted((_req, res) => {
      streams++
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.flushHeaders() // then silence: not even a comment
      opened()
    })
    const errors: unknown[] = []
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const handle = clientOf(url).stream(() => {}, {
        onError: (e) => errors.push(e),
        backoff: { baseMs: 60_000, random: () => 0.99 },
      })
      cleanups.push(() => handle.close())
      await open
      await new Promise((r) => setImmediate(r))
      vi.advanceTimersByTime(DEFAULT_STREAM_IDLE_MS - 1)
      await new Promise((r) => setImmediate(r))
      expect(errors).toEqual([])
      vi.advanceTimersByTime(1)
      for (let i = 0; i < 10 && errors.length === 0; i++) {
        await new Promise((r) => setImmediate(r))
      }
      expect(errors[0]).toMatchObject({
        code: 'unavailable',
        message: `relay protocol error: no data for ${DEFAULT_STREAM_IDLE_MS} ms`,
      })
      expect(streams).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })
})
