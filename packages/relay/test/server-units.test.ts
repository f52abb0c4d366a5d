/** Units of the relay server: feeds (no gap, no duplicate) and the SSE channel's bounds. */
import { PROFILE } from '@agentmsg/core'
import { describe, expect, it, vi } from 'vitest'
import { Notifier, startFeed } from '../src/server/feed.js'
import { SseChannel } from '../src/server/sse.js'
import { memoryRelayStore } from '../src/store/memory.js'
import type { MailboxEntry } from '../src/store/types.js'

const AGENT = 'https://bob.example'

describe('feed', () => {
  it('delivers backlog and entries stored during and after it, each once, in order', async () => {
    const store = memoryRelayStore()
    await store.subscribe({ agent: AGENT, topics: [], now: 0 })
    const notifier = new Notifier()
    let n = 0
    const publish = async () => {
      const id = `m${++n}`
      await store.publish({
        mailboxes: [AGENT],
        from: 'https://a.example',
        messageId: id,
        json: `{"id":"${id}"}`,
        bytes: 10,
        receivedAt: 0,
        expiresAt: Number.MAX_SAFE_INTEGER,
      })
      notifier.notify(AGENT)
      return id
    }
    const sent: string[] = []
    for (let i = 0; i < 250; i++) sent.push(await publish())
    const got: string[] = []
    let slow = true
    const feed = startFeed(
      { store, notifier, now: () => 1, onError: (e) => expect.fail(String(e)) },
      AGENT,
      undefined,
      {
        send: (e: MailboxEntry) => got.push(e.messageId),
        // A slow sink: publishes race the backlog reads.
        ready: async () => {
          if (slow) await new Promise((r) => setTimeout(r, 1))
          return true
        },
      },
    )
    for (let i = 0; i < 50; i++) sent.push(await publish())
    slow = false
    await new Promise((r) => setTimeout(r, 50))
    for (let i = 0; i < 5; i++) sent.push(await publish())
    await new Promise((r) => setTimeout(r, 50))
    expect(got).toEqual(sent)
    feed.close()
    expect(notifier.size).toBe(0)
  })
})

async function readAll(
  stream: ReadableStream<Uint8Array>,
): Promise<{ text: string; error?: unknown }> {
  const reader = stream.getReader()
  let text = ''
  try {
    for (;;) {
      const r = await reader.read()
      if (r.done) return { text }
      text += new TextDecoder().decode(r.value)
    }
  } catch (error) {
    return { text, error }
  }
}

describe('SseChannel', () => {
  const entry = (cursor: string): MailboxEntry => ({
    cursor,
    from: 'https://a.example',
    messageId: `m${cursor}`,
    json: '{"x":1}',
  })

  it('formats events and ends cleanly on close', async () => {
    let ended = 0
    const ch = new SseChannel({
      heartbeatMs: 10_000,
      onEnd: () => ended++,
    })
    ch.send(entry('7'))
    ch.close()
    const { text, error } = await readAll(ch.stream)
    expect(error).toBeUndefined()
    // Closed by the relay: the reconnect hint (SSE `retry:`) last (issue 14).
    expect(text).toBe(
      ': agentmsg relay stream\n\nid: 7\nevent: message\ndata: {"x":1}\n\n: relay restarting\nretry: 1000\n\n',
    )
    expect(ended).toBe(1)
    expect(await ch.ready()).toBe(false)
  })

  it('asks the feed for more only once the client took everything sent, and counts it unsent', async () => {
    let unsent = 0
    const ch = new SseChannel({ unsent: (n) => void (unsent += n), onEnd: () => undefined })
    const reader = ch.stream.getReader()
    let ready = false
    void ch.ready().then((r) => (ready = r))
    ch.send(entry('1'))
    await new Promise((r) => setTimeout(r, 20))
    // Nothing taken yet: the greeting and the entry wait, the feed too (PROFILE §9).
    expect(ready).toBe(false)
    expect(unsent).toBeGreaterThan(0)
    // The adapter takes the first chunk (the greeting) and the entry after it...
    await reader.read()
    await reader.read()
    await new Promise((r) => setTimeout(r, 20))
    expect(ready).toBe(false)
    // ...and asks again: the socket took them.
    void reader.read()
    await new Promise((r) => setTimeout(r, 20))
    expect(ready).toBe(true)
    expect(unsent).toBe(0)
    ch.close()
  })

  it('drops a client that takes nothing for PROFILE.streamStallMs (60 s) while data waits', async () => {
    expect(PROFILE.streamStallMs).toBe(60_000)
    vi.useFakeTimers()
    try {
      let ended = 0
      // The defaults: the stall timeout is PROFILE's.
      const ch = new SseChannel({ onEnd: () => ended++ })
      const reader = ch.stream.getReader()
      await reader.read()
      ch.send(entry('1'))
      let ready: boolean | undefined
      void ch.ready().then((r) => (ready = r))
      await vi.advanceTimersByTimeAsync(59_000)
      expect(ended).toBe(0)
      await vi.advanceTimersByTimeAsync(1_500)
      expect(ended).toBe(1)
      expect(ready).toBe(false)
      await expect(reader.read()).rejects.toThrow(/slow consumer/)
    } finally {
      vi.useRealTimers()
    }
  })

  it('sends a comment line every heartbeat', async () => {
    const ch = new SseChannel({
      heartbeatMs: 20,
      onEnd: () => undefined,
    })
    const reader = ch.stream.getReader()
    let text = ''
    while ((text.match(/: keep-alive/g) ?? []).length < 2) {
      const r = await reader.read()
      text += new TextDecoder().decode(r.value)
    }
    ch.close()
  })
})
