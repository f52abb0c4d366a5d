/**
 * Relay client publishing against scripted HTTPS relays: failover rules (PROFILE §9), local
 * refusals, backoff and the mapping of relay answers to error codes.
 */
import { signedMessage } from '@agentmsg/conformance'
import type { Message } from '@agentmsg/core'
import { backoffDelay, errorFromResponse, parseRetryAfter } from '@agentmsg/core/http'
import { describe, expect, it } from 'vitest'
import { STREAM_BACKOFF } from '../src/client/http.js'
import { publishToRelay } from '../src/index.js'
import {
  alice,
  bob,
  fetchFn,
  json,
  type Route,
  scripted,
  servers,
  setupScriptedTests,
} from './client-scripted.js'

setupScriptedTests()

describe('backoff and errors', () => {
  it('full jitter: uniform below min(cap, base·2^(attempt−1)), from 500 ms up to 30 s', () => {
    // Stream reconnects and ack retries: core's one backoff with the relay client's window.
    const reconnectDelay = (attempt: number, o: { random: () => number; capMs?: number }) =>
      backoffDelay(attempt, { ...STREAM_BACKOFF, ...o })
    expect(reconnectDelay(1, { random: () => 0 })).toBe(0)
    expect(reconnectDelay(1, { random: () => 0.999999 })).toBe(499)
    expect(reconnectDelay(4, { random: () => 0.5 })).toBe(2000)
    expect(reconnectDelay(51, { random: () => 0.999999 })).toBe(29_999)
    expect(reconnectDelay(5001, { random: () => 0.5, capMs: 1000 })).toBe(500)
  })

  it('reads Retry-After as seconds or an HTTP date (core: in ms)', () => {
    expect(parseRetryAfter('7')).toBe(7_000)
    expect(parseRetryAfter(null)).toBeUndefined()
    expect(parseRetryAfter('soon')).toBeUndefined()
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000)
  })

  it('maps relay answers to AgentMsgError codes', async () => {
    const e1 = await errorFromResponse(
      new Response('{"status":"error","code":"rate_limited","message":"slow down"}', {
        status: 429,
        headers: { 'retry-after': '3' },
      }),
      'x',
    )
    expect(e1).toMatchObject({ code: 'rate_limited', status: 429, retryAfter: 3 })
    expect(e1.message).toContain('slow down')
    // A code that does not go with the status is not believed; a proxy's 502 is `unavailable`.
    expect(
      await errorFromResponse(new Response('{"code":"not_found"}', { status: 400 }), 'x'),
    ).toMatchObject({ code: 'invalid_format' })
    expect(await errorFromResponse(new Response('<html>', { status: 502 }), 'x')).toMatchObject({
      code: 'unavailable',
    })
    expect(await errorFromResponse(new Response('', { status: 409 }), 'x')).toMatchObject({
      code: 'invalid_format',
    })
  })
})

describe('publish and failover', () => {
  const accepting =
    (hits: string[], name: string): Route =>
    (_req, res, body) => {
      hits.push(name)
      const m = JSON.parse(body.toString()) as Message
      json(res, 202, { status: 'accepted', message_id: m.message_id })
    }
  const failing =
    (hits: string[], name: string, status: number, code: string, headers = {}): Route =>
    (_req, res) => {
      hits.push(name)
      json(res, status, { status: 'error', code, message: name }, headers)
    }

  it('moves on after a closed port, a 5xx and a 429; stops on another 4xx', async () => {
    const hits: string[] = []
    const down = await scripted(() => {})
    servers.pop()!.close() // nothing listens there now
    const s503 = await scripted(failing(hits, '503', 503, 'unavailable', { 'retry-after': '5' }))
    const s429 = await scripted(failing(hits, '429', 429, 'rate_limited', { 'retry-after': '2' }))
    const ok = await scripted(accepting(hits, 'ok'))
    const s400 = await scripted(failing(hits, '400', 400, 'invalid_format'))
    const m = await signedMessage(alice, bob.id, { text: 'hi' })

    const result = await publishToRelay(m, [down, s503, s429, ok], { fetch: fetchFn })
    expect(result.relayUrl).toBe(ok)
    expect(result.messageId).toBe(m.message_id)
    expect(result.failed.map((f) => f.relayUrl)).toEqual([down, s503, s429])
    expect(result.failed[0]!.error).toMatchObject({ code: 'unavailable' })
    expect(hits).toEqual(['503', '429', 'ok'])

    hits.length = 0
    await expect(publishToRelay(m, [s400, ok], { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_format',
      status: 400,
    })
    expect(hits).toEqual(['400'])

    // Every relay busy: `unavailable`, with the smallest Retry-After.
    hits.length = 0
    const err = await publishToRelay(m, [s503, s429], { fetch: fetchFn }).catch((e) => e)
    expect(err).toMatchObject({ code: 'unavailable', retryAfter: 2 })
    expect((err as Error).cause).toBeInstanceOf(AggregateError)

    // 'any' starts at a random relay and goes round.
    hits.length = 0
    const any = await publishToRelay(m, [ok, s503], {
      fetch: fetchFn,
      preference: 'any',
      random: () => 0.9,
    })
    expect(any.relayUrl).toBe(ok)
    expect(hits).toEqual(['503', 'ok'])
  })

  it('a Retry-After that is not delay-seconds or an HTTP date is no retryAfter, never 0', async () => {
    const m = await signedMessage(alice, bob.id, { text: 'busy' })
    const hits: string[] = []
    for (const value of ['1.5', '-1', '12 13']) {
      const s = await scripted(failing(hits, value, 503, 'unavailable', { 'retry-after': value }))
      const error = await publishToRelay(m, s, { fetch: fetchFn }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'unavailable', peerStatus: 503, retryAfter: undefined })
    }
    const s7 = await scripted(failing(hits, '7', 429, 'rate_limited', { 'retry-after': '7' }))
    await expect(publishToRelay(m, s7, { fetch: fetchFn })).rejects.toMatchObject({ retryAfter: 7 })
    expect(hits).toEqual(['1.5', '-1', '12 13', '7'])
  })

  it('refuses locally what no relay would take, and reports errors with the relay code', async () => {
    const hits: string[] = []
    const s = await scripted(failing(hits, 'nf', 404, 'not_found'))
    const m = await signedMessage(alice, bob.id, { text: 'x' })
    await expect(publishToRelay(m, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'not_found',
      status: 404,
    })
    const { security: _s, ...unsigned } = m
    await expect(publishToRelay(unsigned as Message, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_signature',
    })
    const traced = {
      ...m,
      trace: { received: [{ by: 'relay:x', with: 'y', at: m.date, from: m.from.agent }] },
    }
    await expect(publishToRelay(traced, s, { fetch: fetchFn })).rejects.toMatchObject({
      code: 'invalid_format',
    })
    await expect(publishToRelay(m, 'http://127.0.0.1:1', { fetch: fetchFn })).rejects.toMatchObject(
      {
        code: 'invalid_format',
      },
    )
    expect(hits).toEqual(['nf'])
  })
})
