/**
 * The HTTP toolkit: PROFILE §6's Retry-After rule and backoff, the one status → code table, the
 * one capped body reader, and `httpRequest` against a real https server on loopback.
 */
import { once } from 'node:events'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentMsgError, codeForStatus, isAgentMsgError } from '../src/errors.js'
import { readBody } from '../src/http/body.js'
import { httpRequest, readJson } from '../src/http/request.js'
import { Backoff, backoffDelay, parseRetryAfter } from '../src/http/retry.js'
import { PROFILE } from '../src/profile.js'

/**
 * A `fetch` over `node:https` that trusts the development CA and never follows a redirect: the
 * smallest real client (transport-https' `createNodeFetch` adds the address policy and caps).
 */
function httpsFetch(ca: string): typeof fetch {
  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init.signal ?? undefined
      if (signal?.aborted) return reject(signal.reason)
      const req = https.request(String(input), { method: init.method ?? 'GET', ca, signal })
      req.on('error', (error) => reject(signal?.aborted ? signal.reason : error))
      req.on('response', (res) => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string') headers.set(name, value)
        }
        const body = Readable.toWeb(res) as ReadableStream<Uint8Array>
        resolve(new Response(body, { status: res.statusCode ?? 500, headers }))
      })
      req.end()
    })
}

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5))

describe('parseRetryAfter (PROFILE §6)', () => {
  const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT')

  it('reads delay-seconds and HTTP-dates, a past date as 0', () => {
    expect(parseRetryAfter('7', now)).toBe(7000)
    expect(parseRetryAfter('0', now)).toBe(0)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now)).toBe(30_000)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0)
  })

  it('gives no permission for anything else', () => {
    for (const value of ['1.5', '-1', '12 13', '', ' ', 'soon', '7s', null, undefined]) {
      expect(parseRetryAfter(value, now)).toBeUndefined()
    }
  })
})

describe('backoffDelay and Backoff (full jitter)', () => {
  it('stays in [0, min(cap, base × 2^(attempt−1)))', () => {
    expect(backoffDelay(1, { random: () => 0 })).toBe(0)
    expect(backoffDelay(1, { random: () => 0.9999 })).toBe(999)
    // A random() that returns exactly 1 still stays below the bound.
    expect(backoffDelay(1, { random: () => 1 })).toBe(PROFILE.retryBaseMs - 1)
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(2 * PROFILE.retryBaseMs)
    expect(backoffDelay(40, { random: () => 1 })).toBe(PROFILE.retryCapMs - 1)
    expect(backoffDelay(2, { baseMs: 10, capMs: 15, random: () => 0.99 })).toBe(14)
    for (let attempt = 1; attempt < 30; attempt++) {
      const delay = backoffDelay(attempt)
      expect(delay).toBeGreaterThanOrEqual(0)
      expect(delay).toBeLessThan(Math.min(PROFILE.retryCapMs, 1000 * 2 ** (attempt - 1)))
    }
    expect(() => backoffDelay(0)).toThrow(RangeError)
    expect(() => backoffDelay(1.5)).toThrow(RangeError)
  })

  it('widens with each failure and starts over after a success', () => {
    const backoff = new Backoff({ random: () => 0.5 })
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([500, 1000, 2000])
    backoff.reset()
    expect(backoff.next()).toBe(500)
  })
})

describe('codeForStatus: the one status → code table', () => {
  it('maps statuses a peer may answer without a code', () => {
    for (const status of [301, 302, 303, 307, 308]) expect(codeForStatus(status)).toBe('not_found')
    expect(codeForStatus(408)).toBe('unavailable')
    expect(codeForStatus(401)).toBe('unauthorized')
    expect(codeForStatus(400)).toBe('invalid_format')
    expect(codeForStatus(429)).toBe('rate_limited')
    expect(codeForStatus(500)).toBe('internal_error')
    expect(codeForStatus(502)).toBe('unavailable')
    expect(codeForStatus(503)).toBe('unavailable')
    expect(codeForStatus(418)).toBe('invalid_format')
  })

  it('and shouldRetry() is the one retryability rule (429, 5xx)', () => {
    const retry = (status: number) =>
      new AgentMsgError(codeForStatus(status), 'x', { peerStatus: status }).shouldRetry()
    expect([429, 500, 502, 503, 408].map(retry)).toEqual([true, true, true, true, true])
    expect([400, 401, 403, 404, 302, 418].map(retry)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ])
  })
})

/** A body that never ends (or never starts), recording whether it was cancelled. */
function endless(chunk: Uint8Array | undefined) {
  const state = { pulls: 0, cancelled: false }
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        state.pulls++
        if (chunk) controller.enqueue(chunk)
        else return new Promise(() => {})
      },
      cancel() {
        state.cancelled = true
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, state }
}

describe('readBody: the one capped reader', () => {
  it('reads a body whole', async () => {
    const bytes = await readBody(new Response('hello'), { maxBytes: 5 })
    expect(new TextDecoder().decode(bytes)).toBe('hello')
    expect(await readBody(null, { maxBytes: 0 })).toEqual(new Uint8Array(0))
  })

  it('past the cap: undefined, and the stream is cancelled', async () => {
    const { stream, state } = endless(new Uint8Array(4))
    expect(await readBody(stream, { maxBytes: 10 })).toBeUndefined()
    await tick()
    expect(state.cancelled).toBe(true)
    expect(state.pulls).toBe(3)
  })

  it('a Content-Length over the cap: undefined before anything is read', async () => {
    const { stream, state } = endless(new Uint8Array(4))
    const response = new Response(stream, { headers: { 'content-length': '11' } })
    expect(await readBody(response, { maxBytes: 10 })).toBeUndefined()
    await tick()
    expect(state.pulls).toBe(0)
    expect(state.cancelled).toBe(true)
  })

  it('a body that does not arrive in time fails with the failure code', async () => {
    const late = endless(undefined)
    const error = await rejection(readBody(late.stream, { maxBytes: 10, timeoutMs: 20 }))
    expect(error).toMatchObject({ code: 'unavailable' })
    expect((error as Error).message).toMatch(/did not arrive within/)
    await tick()
    expect(late.state.cancelled).toBe(true)
    const request = endless(undefined)
    const refused = readBody(request.stream, {
      maxBytes: 10,
      timeoutMs: 20,
      failure: 'invalid_format',
    })
    expect(await rejection(refused)).toMatchObject({ code: 'invalid_format' })
  })

  it('a broken body fails with the failure code, its error as the cause', async () => {
    const cause = new Error('reset')
    const broken = new ReadableStream<Uint8Array>({
      pull: () => Promise.reject(cause),
    })
    const error = await rejection(readBody(broken, { maxBytes: 10, failure: 'invalid_format' }))
    expect(error).toMatchObject({ code: 'invalid_format', cause })
  })

  it("the caller's abort rejects with its reason and cancels the stream", async () => {
    const { stream, state } = endless(undefined)
    const controller = new AbortController()
    const reason = new Error('stop')
    const reading = readBody(stream, { maxBytes: 10, signal: controller.signal })
    controller.abort(reason)
    expect(await rejection(reading)).toBe(reason)
    expect(state.cancelled).toBe(true)
    const aborted = AbortSignal.abort(reason)
    expect(await rejection(readBody(new Response('x'), { maxBytes: 10, signal: aborted }))).toBe(
      reason,
    )
  })
})

describe('httpRequest against an https server on loopback', () => {
  let server: https.Server
  let base: string
  let fetch: typeof globalThis.fetch
  const hits: string[] = []

  beforeAll(async () => {
    const { cert, key, ca } = await createDevCertificate()
    server = https.createServer({ cert, key }, (req, res) => {
      hits.push(req.url ?? '')
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers })
        res.end(JSON.stringify(body))
      }
      switch (req.url) {
        case '/ok':
          return json(200, { hello: 'world' })
        case '/busy':
          return json(
            503,
            { status: 'error', code: 'unavailable', message: 'later' },
            { 'retry-after': '7' },
          )
        case '/teapot':
          return json(418, { status: 'error', code: 'not_a_code', message: 'short and stout' })
        case '/limited':
          return json(429, { status: 'error', code: 'rate_limited', message: 'slow down' })
        case '/redirect':
          res.writeHead(302, { location: '/ok' })
          return res.end()
        default:
          // /slow: never answers
          return undefined
      }
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
    fetch = httpsFetch(ca)
  })

  afterAll(async () => {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  })

  it('reads a 2xx answer with `read`', async () => {
    const body = await httpRequest(`${base}/ok`, { fetch }, (res, signal) => readJson(res, signal))
    expect(body).toEqual({ hello: 'world' })
  })

  it("a non-2xx answer rejects with the peer's status, code and Retry-After", async () => {
    const busy = await rejection(httpRequest(`${base}/busy`, { fetch }, async () => 'read'))
    expect(isAgentMsgError(busy)).toBe(true)
    expect(busy).toMatchObject({
      code: 'unavailable',
      peerStatus: 503,
      peerCode: 'unavailable',
      retryAfter: 7,
    })
    expect((busy as AgentMsgError).shouldRetry()).toBe(true)
    const teapot = await rejection(httpRequest(`${base}/teapot`, { fetch }, async () => 'read'))
    expect(teapot).toMatchObject({
      code: 'invalid_format',
      peerStatus: 418,
      peerCode: 'not_a_code',
    })
    expect((teapot as AgentMsgError).retryAfter).toBeUndefined()
    expect((teapot as AgentMsgError).shouldRetry()).toBe(false)
    const limited = await rejection(httpRequest(`${base}/limited`, { fetch }, async () => 'read'))
    expect(limited).toMatchObject({ code: 'rate_limited', peerStatus: 429 })
    expect((limited as AgentMsgError).retryAfter).toBeUndefined()
  })

  it('past the deadline: unavailable, naming it', async () => {
    const error = await rejection(
      httpRequest(`${base}/slow`, { fetch, timeoutMs: 100 }, async () => 'read'),
    )
    expect(error).toMatchObject({ code: 'unavailable' })
    expect((error as Error).message).toMatch(/no answer within 100 ms/)
  })

  it('does not follow redirects', async () => {
    const before = hits.filter((url) => url === '/ok').length
    const error = await rejection(httpRequest(`${base}/redirect`, { fetch }, async () => 'read'))
    expect(error).toMatchObject({ code: 'not_found', peerStatus: 302 })
    expect(hits.filter((url) => url === '/ok').length).toBe(before)
  })

  it('no answer at all: a retryable unavailable with the network error as cause', async () => {
    const closed = https.createServer()
    closed.listen(0, '127.0.0.1')
    await once(closed, 'listening')
    const port = (closed.address() as AddressInfo).port
    closed.close()
    await once(closed, 'close')
    const error = await rejection(
      httpRequest(`https://127.0.0.1:${port}/ok`, { fetch }, async () => 'read'),
    )
    expect(error).toMatchObject({ code: 'unavailable' })
    expect((error as Error).message).toMatch(/network error/)
    expect((error as Error).cause).toBeDefined()
    expect((error as AgentMsgError).shouldRetry()).toBe(true)
  })

  it("the caller's abort rejects with its reason", async () => {
    const controller = new AbortController()
    const reason = new Error('the caller gave up')
    const request = httpRequest(
      `${base}/slow`,
      { fetch, signal: controller.signal },
      async () => 'read',
    )
    setTimeout(() => controller.abort(reason), 20)
    expect(await rejection(request)).toBe(reason)
  })
})
