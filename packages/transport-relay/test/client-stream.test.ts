/**
 * The relay client's SSE stream against a scripted relay: resume with Last-Event-ID and dedupe
 * by cursor, acks only after the handler, handler failures redelivered, fatal answers, the idle
 * watchdog, and acks per the receive pipeline's outcome.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { signedMessage } from '@agentmsg/conformance'
import { AgentMsgError, type Message } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { NonceMemory, verifyRequest } from '@agentmsg/core/server'
import { describe, expect, it } from 'vitest'
import { pipelineHandler } from '../src/client/mailbox-listener.js'
import { createRelayClient, type RelayClient, type RelayEntry } from '../src/index.js'
import {
  alice,
  bob,
  cleanups,
  fetchFn,
  json,
  scripted,
  setupScriptedTests,
  until,
} from './client-scripted.js'

setupScriptedTests()

/** A scripted SSE relay that checks agent auth like the real one. */
async function sseRelay(script: {
  stream: (n: number, req: IncomingMessage, res: ServerResponse) => void
  onAck?: (id: string, from: string | null) => void
}) {
  const resolver = createKeyResolver()
  const nonces = new NonceMemory()
  const seen = {
    streams: [] as Array<{ lastEventId?: string; after: string | null }>,
    acks: [] as string[],
  }
  let base = ''
  base = await scripted(async (req, res, body) => {
    const url = new URL(req.url!, base)
    try {
      await verifyRequest({
        method: req.method!,
        targetUri: base + req.url,
        headers: req.headers as Record<string, string>,
        body,
        resolver,
        nonces,
        expectedAgent: url.searchParams.get('agent') ?? undefined,
      })
    } catch (e) {
      return json(res, 401, {
        status: 'error',
        code: (e as { code: string }).code,
        message: String(e),
      })
    }
    if (req.method === 'GET' && url.pathname === '/relay/stream') {
      const lastEventId = req.headers['last-event-id'] as string | undefined
      seen.streams.push({
        ...(lastEventId ? { lastEventId } : {}),
        after: url.searchParams.get('after'),
      })
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
      res.write(': hello\n\n')
      script.stream(seen.streams.length, req, res)
      return
    }
    if (req.method === 'POST' && url.pathname === '/relay/ack') {
      // PROFILE §9: `{agent, acks:[{message_id, from}, …]}`, entries that match nothing skipped.
      const { acks } = JSON.parse(body.toString('utf8')) as {
        acks: Array<{ message_id: string; from: string }>
      }
      for (const a of acks) {
        seen.acks.push(a.message_id)
        script.onAck?.(a.message_id, a.from)
      }
      return json(res, 200, { status: 'acknowledged', removed: acks.length })
    }
    if (req.method === 'DELETE' && url.pathname.startsWith('/relay/messages/')) {
      const id = decodeURIComponent(url.pathname.slice('/relay/messages/'.length))
      seen.acks.push(id)
      script.onAck?.(id, url.searchParams.get('from'))
      res.writeHead(204).end()
      return
    }
    json(res, 404, { status: 'error', code: 'not_found', message: 'no route' })
  })
  return { url: base, seen }
}

const event = (cursor: string, m: Message) =>
  `id: ${cursor}\nevent: message\ndata: ${JSON.stringify(m)}\n\n`

function clientOf(url: string): RelayClient {
  return createRelayClient({ relayUrl: url, agent: bob.id, signer: bob.signer, fetch: fetchFn })
}

/** The text of a delivered message value (the stream hands values over unchecked). */
const textOf = (value: unknown): string => {
  const part = (value as Message).body.parts[0]!
  return part.type === 'text' ? part.text : ''
}

describe('SSE stream against a scripted relay', () => {
  it('resumes with Last-Event-ID and never hands the same cursor over twice', async () => {
    const [m1, m2, m3] = [
      await signedMessage(alice, bob.id, { text: '1' }),
      await signedMessage(alice, bob.id, { text: '2' }),
      await signedMessage(alice, bob.id, { text: '3' }),
    ]
    const handled: string[] = []
    const handledAtAck: number[] = []
    const relay = await sseRelay({
      stream(n, _req, res) {
        if (n === 1) {
          res.write(event('c1', m1!))
          res.end(event('c2', m2!)) // then the connection drops
        } else {
          // A sloppy relay that resends the last entry the client completed.
          res.write(event('c2', m2!))
          res.write(event('c3', m3!))
        }
      },
      onAck: () => void handledAtAck.push(handled.length),
    })
    const handle = clientOf(relay.url).stream(
      async ({ value, cursor }) => {
        handled.push(`${cursor}:${textOf(value)}`)
      },
      { backoff: { baseMs: 10, capMs: 20 } },
    )
    cleanups.push(() => handle.close())
    await until(() => handled.length === 3 && handle.cursor === 'c3')
    await until(() => relay.seen.acks.length === 3)
    expect(handled).toEqual(['c1:1', 'c2:2', 'c3:3'])
    // Each ack came after its handler (ack n arrived once n handlers had run). PROFILE §9:
    // acks go in batches, one in flight, so the next handler does not wait for them.
    expect(handledAtAck).toHaveLength(3)
    handledAtAck.forEach((n, i) => expect(n).toBeGreaterThanOrEqual(i + 1))
    expect(relay.seen.acks).toEqual([m1!.message_id, m2!.message_id, m3!.message_id])
    expect(relay.seen.streams[0]).toEqual({ after: null })
    expect(relay.seen.streams[1]).toEqual({ lastEventId: 'c2', after: 'c2' })
    expect(handle.cursor).toBe('c3')
    await handle.close()
    await expect(handle.done).resolves.toBeUndefined()
  })

  it('redelivers a message whose handler failed, and acks it only after success', async () => {
    const m1 = await signedMessage(alice, bob.id, { text: 'flaky' })
    const relay = await sseRelay({
      stream(_n, _req, res) {
        res.write(event('c1', m1))
      },
    })
    let calls = 0
    const errors: unknown[] = []
    const handle = clientOf(relay.url).stream(
      async () => {
        calls++
        if (calls === 1) throw new Error('handler broke')
      },
      { backoff: { baseMs: 10, capMs: 20 }, onError: (e) => errors.push(e) },
    )
    cleanups.push(() => handle.close())
    await until(() => relay.seen.acks.length === 1)
    expect(calls).toBe(2)
    expect(relay.seen.streams).toHaveLength(2)
    expect(relay.seen.streams[1]).toEqual({ after: null }) // nothing completed before it
    expect(errors).toContainEqual(expect.objectContaining({ message: 'handler broke' }))
  })

  it('stops on a 4xx other than 429, and reconnects when the stream goes quiet', async () => {
    const forbidden = await scripted((_req, res) =>
      json(res, 403, { status: 'error', code: 'forbidden', message: 'no' }),
    )
    const handle = clientOf(forbidden).stream(() => {}, { backoff: { baseMs: 10 } })
    await expect(handle.done).rejects.toMatchObject({ code: 'forbidden' })

    const quiet = await sseRelay({ stream() {} })
    const errors: unknown[] = []
    const h2 = clientOf(quiet.url).stream(() => {}, {
      idleTimeoutMs: 150,
      backoff: { baseMs: 10, capMs: 20 },
      onError: (e) => errors.push(e),
    })
    cleanups.push(() => h2.close())
    await until(() => quiet.seen.streams.length >= 2)
    expect(errors[0]).toMatchObject({ code: 'unavailable' })
    await h2.close()
  })

  it('hands entries over unchecked; acks per the pipeline outcome, skips what no ack can name', async () => {
    const [ok, later, bad] = [
      await signedMessage(alice, bob.id, { text: 'ok' }),
      await signedMessage(alice, bob.id, { text: 'later' }),
      await signedMessage(alice, bob.id, { text: 'bad' }),
    ]
    const relay = await sseRelay({
      stream(_n, _req, res) {
        res.write(event('c1', ok))
        res.write('id: c2\nevent: message\ndata: {not json\n\n')
        res.write(event('c3', later))
        res.write(event('c4', bad))
      },
    })
    const seen: RelayEntry[] = []
    let laterCalls = 0
    // A stand-in for the receive pipeline: accepted, refused for now once, refused for good.
    const handle = clientOf(relay.url).stream(
      pipelineHandler(async (d) => {
        const entry = { value: d.body } as RelayEntry
        seen.push(entry)
        expect(d.transport).toBe('relay')
        const id = (d.body as { message_id?: string }).message_id
        if (id === later.message_id && ++laterCalls === 1) {
          const error = new AgentMsgError('unavailable', 'key lookup failed for now')
          return { status: 'refused', error, retry: true }
        }
        if (id === bad.message_id || id === undefined) {
          const error = new AgentMsgError('invalid_signature', 'tampered')
          return { status: 'refused', error, retry: false }
        }
        return { status: 'accepted', messageId: id }
      }),
      { backoff: { baseMs: 10, capMs: 20 } },
    )
    cleanups.push(() => handle.close())
    await until(() => handle.cursor === 'c4')
    await until(() => relay.seen.acks.length === 3)
    // The raw values came as delivered (the unparsable data as text); the relay resent c1 and c2
    // on the second connection, and the stream skipped them by cursor.
    expect(seen.map((e) => e.value)).toEqual([ok, '{not json', later, later, bad])
    // ok acked once; the text entry skipped by cursor (nothing to ack); `later` acked only after
    // the second try; `bad` acked (refused for good: PROFILE §9, never delivered again).
    expect(relay.seen.acks).toEqual([ok.message_id, later.message_id, bad.message_id])
    expect(laterCalls).toBe(2)
    expect(relay.seen.streams).toHaveLength(2)
    expect(relay.seen.streams[1]).toEqual({ lastEventId: 'c2', after: 'c2' })
  })
})
