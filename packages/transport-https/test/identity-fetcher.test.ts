import type { IncomingMessage, ServerResponse } from 'node:http'
import https from 'node:https'
import type net from 'node:net'
import {
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { createIdentityDocument, createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cacheLifetime, createIdentityFetcher } from '../src/identity-fetcher.js'
import { createNodeFetch } from '../src/node-fetch.js'
import { createNodeIdentityFetcher } from './identity-helpers.js'
import { testCertificate } from './tls.js'

const { cert, key, ca } = await testCertificate()
const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
const WK = '/.well-known/agentmsg/identity'
/** The whole reason of a failed request: no socket, TLS or DNS detail. */
const failed = (id: string) => `the identity document of ${id} could not be fetched`

type Handler = (req: IncomingMessage, res: ServerResponse) => void

async function serve(
  handler: Handler,
): Promise<{ port: number; origin: string; close(): Promise<void> }> {
  const server = https.createServer({ key, cert }, handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    origin: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const json = (
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body)
}

const seen: Array<{ url: string; accept: string | undefined }> = []
let other: Awaited<ReturnType<typeof serve>>
let main: Awaited<ReturnType<typeof serve>>
/** Each route is an agent `${origin}/agents/<name>`; the handler answers its identity URL. */
const routes = new Map<string, Handler>()
const agent = (name: string) => `${main.origin}/agents/${name}`

beforeAll(async () => {
  other = await serve((_, res) => json(res, 200, '{"agentmsg":5}'))
  main = await serve((req, res) => {
    seen.push({ url: req.url ?? '', accept: req.headers.accept })
    const name = /^\/agents\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? ''
    const route = routes.get(name)
    if (route) return route(req, res)
    json(res, 404, '{"status":"error","code":"not_found","message":"no"}')
  })

  routes.set('ok', (_, res) =>
    json(res, 200, '{"agentmsg":5,"agent_id":"x"}', { 'cache-control': 'public, max-age=600' }),
  )
  routes.set('nostore', (_, res) => json(res, 200, '{"a":1}', { 'cache-control': 'no-store' }))
  routes.set('nocc', (_, res) => json(res, 200, '{"a":1}'))
  routes.set('gone', (_, res) => json(res, 410, '{}'))
  routes.set('forbidden', (_, res) => json(res, 403, '{}'))
  routes.set('busy', (_, res) => json(res, 503, '{}', { 'retry-after': '120' }))
  routes.set('broken', (_, res) => json(res, 500, '{}'))
  routes.set('limited', (_, res) => json(res, 429, '{}', { 'retry-after': '7' }))
  routes.set('slow', () => {
    // never answers
  })
  routes.set('slowbody', (_, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"a":')
  })
  const big = (n: number) => `{"p":"${'x'.repeat(n - 8)}"}`
  expect(big(65_536).length).toBe(65_536)
  routes.set('max', (_, res) => json(res, 200, big(65_536)))
  routes.set('toobig', (_, res) => json(res, 200, big(65_537)))
  routes.set('toobigchunked', (_, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    const body = big(65_537)
    res.write(body.slice(0, 40_000))
    res.end(body.slice(40_000))
  })
  routes.set('dup', (_, res) => json(res, 200, '{"a":1,"a":2}'))
  routes.set('notjson', (_, res) => json(res, 200, '<html></html>'))
  for (let i = 0; i <= 4; i++) {
    // redirN: N redirects, then the document.
    routes.set(`redir${i}`, (req, res) => {
      const hop = Number(new URL(req.url!, 'https://x').searchParams.get('hop') ?? '0')
      if (hop < i) {
        res.writeHead(hop % 2 ? 307 : 302, { location: `identity?hop=${hop + 1}` }).end()
        return
      }
      json(res, 200, `{"hops":${hop}}`)
    })
  }
  routes.set('absredir', (_, res) => {
    res.writeHead(301, { location: `${agent('ok')}${WK}` }).end()
  })
  routes.set('crossorigin', (_, res) => {
    res.writeHead(302, { location: `${other.origin}/agents/x${WK}` }).end()
  })
  routes.set('tohttp', (_, res) => {
    res.writeHead(302, { location: `http://127.0.0.1:${main.port}/agents/ok${WK}` }).end()
  })
  routes.set('nolocation', (_, res) => res.writeHead(302).end())
})
afterAll(async () => {
  await main.close()
  await other.close()
})

describe('createNodeIdentityFetcher', () => {
  const fetchIdentity = createNodeIdentityFetcher({ ca, addressPolicy })

  it('fetches a document with Accept: application/json and reads max-age', async () => {
    seen.length = 0
    expect(await fetchIdentity(agent('ok'))).toEqual({
      status: 'ok',
      document: { agentmsg: 5, agent_id: 'x' },
      maxAgeSeconds: 600,
    })
    expect(seen).toEqual([{ url: `/agents/ok${WK}`, accept: 'application/json' }])
    expect(await fetchIdentity(agent('nostore'))).toMatchObject({ status: 'ok', maxAgeSeconds: 0 })
    const plain = await fetchIdentity(agent('nocc'))
    expect(plain).toEqual({ status: 'ok', document: { a: 1 } })
  })

  it('404, 410 and other 4xx are verdicts: not_found', async () => {
    for (const name of ['missing', 'gone', 'forbidden']) {
      const res = await fetchIdentity(agent(name))
      expect(res.status, name).toBe('not_found')
    }
    expect(await fetchIdentity(agent('gone'))).toMatchObject({
      reason: expect.stringMatching(/answered 410/),
    })
  })

  it('5xx and 429 are transient: unavailable, honouring Retry-After (else 30 s)', async () => {
    expect(await fetchIdentity(agent('busy'))).toMatchObject({
      status: 'unavailable',
      retryAfter: 120,
    })
    expect(await fetchIdentity(agent('broken'))).toMatchObject({
      status: 'unavailable',
      retryAfter: 30,
    })
    expect(await fetchIdentity(agent('limited'))).toMatchObject({
      status: 'unavailable',
      retryAfter: 7,
    })
  })

  it('a slow server is unavailable after the timeout, headers or body', async () => {
    const quick = createNodeIdentityFetcher({ ca, addressPolicy, timeoutMs: 300 })
    const started = Date.now()
    const res = await quick(agent('slow'))
    // A timeout reads as any failed request: telling it from a refused connection would
    // show a stranger which ports are filtered (PROFILE §4).
    expect(res).toEqual({ status: 'unavailable', retryAfter: 30, reason: failed(agent('slow')) })
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(await quick(agent('slowbody'))).toEqual({
      status: 'unavailable',
      retryAfter: 30,
      reason: failed(agent('slowbody')),
    })
  })

  it('caps the document at 64 KiB, with or without Content-Length', async () => {
    expect((await fetchIdentity(agent('max'))).status).toBe('ok')
    for (const name of ['toobig', 'toobigchunked']) {
      const res = await fetchIdentity(agent(name))
      expect(res, name).toMatchObject({
        status: 'not_found',
        reason: expect.stringMatching(/too large/),
      })
    }
  })

  it('follows up to 3 redirects on the same origin, no more', async () => {
    for (const n of [1, 2, 3]) {
      expect(await fetchIdentity(agent(`redir${n}`))).toMatchObject({
        status: 'ok',
        document: { hops: n },
      })
    }
    expect(await fetchIdentity(agent('absredir'))).toMatchObject({
      status: 'ok',
      document: { agentmsg: 5 },
    })
    expect(await fetchIdentity(agent('redir4'))).toMatchObject({
      status: 'not_found',
      reason: expect.stringMatching(/more than 3 redirects/),
    })
    const strict = createNodeIdentityFetcher({ ca, addressPolicy, maxRedirects: 0 })
    expect((await strict(agent('redir1'))).status).toBe('not_found')
  })

  it('refuses redirects to another origin, to http, or without Location', async () => {
    expect(await fetchIdentity(agent('crossorigin'))).toMatchObject({
      status: 'not_found',
      reason: expect.stringMatching(/another origin/),
    })
    expect((await fetchIdentity(agent('tohttp'))).status).toBe('not_found')
    expect((await fetchIdentity(agent('nolocation'))).status).toBe('not_found')
  })

  it('refuses duplicate members and non-JSON: not_found', async () => {
    expect(await fetchIdentity(agent('dup'))).toMatchObject({
      status: 'not_found',
      reason: expect.stringMatching(/not valid I-JSON/),
    })
    expect((await fetchIdentity(agent('notjson'))).status).toBe('not_found')
  })

  it('an address refused by the default policy is not found', async () => {
    const strict = createNodeIdentityFetcher({ ca })
    // Not found, and the reason says only that the request failed (PROFILE §4).
    expect(await strict(agent('ok'))).toEqual({ status: 'not_found', reason: failed(agent('ok')) })
  })

  it('network and TLS failures are unavailable', async () => {
    const wrongCa = createNodeIdentityFetcher({
      ca: (await createDevCertificate()).ca,
      addressPolicy,
    })
    // Unavailable, and neither the TLS nor the socket error is told (PROFILE §4).
    expect(await wrongCa(agent('ok'))).toEqual({
      status: 'unavailable',
      retryAfter: 30,
      reason: failed(agent('ok')),
    })
    const closed = await serve(() => {})
    await closed.close()
    expect(await fetchIdentity(`${closed.origin}/agents/ok`)).toEqual({
      status: 'unavailable',
      retryAfter: 30,
      reason: failed(`${closed.origin}/agents/ok`),
    })
  })

  it('ids that are not URL agents are not found, without a request', async () => {
    seen.length = 0
    for (const id of [
      'alice',
      'https://127.0.0.1/',
      'http://127.0.0.1',
      'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
    ]) {
      expect((await fetchIdentity(id)).status, id).toBe('not_found')
    }
    expect(seen).toEqual([])
  })

  it("rejects with the caller's abort reason", async () => {
    const controller = new AbortController()
    const pending = fetchIdentity(agent('slow'), { signal: controller.signal })
    setTimeout(() => controller.abort(new Error('shutting down')), 50)
    await expect(pending).rejects.toThrow('shutting down')
    await expect(
      fetchIdentity(agent('ok'), { signal: AbortSignal.abort(new Error('early')) }),
    ).rejects.toThrow('early')
  })
})

describe('createIdentityFetcher over any fetch', () => {
  it('uses the given fetch, asking it not to follow redirects', async () => {
    const calls: Array<[string, RequestInit | undefined]> = []
    const fake = (async (input: RequestInfo | URL, init?: RequestInit) => {
      calls.push([String(input), init])
      return new Response('{"ok":true}', {
        status: 200,
        headers: { 'cache-control': 'max-age=5', age: '2' },
      })
    }) as typeof fetch
    const res = await createIdentityFetcher({ fetch: fake })('https://a.example/agents/a')
    expect(res).toEqual({ status: 'ok', document: { ok: true }, maxAgeSeconds: 3 })
    expect(calls[0]![0]).toBe('https://a.example/agents/a/.well-known/agentmsg/identity')
    expect(calls[0]![1]).toMatchObject({
      method: 'GET',
      redirect: 'manual',
      headers: { accept: 'application/json' },
    })
  })

  it('parses Cache-Control', () => {
    expect(cacheLifetime(null)).toBeUndefined()
    expect(cacheLifetime('public')).toBeUndefined()
    expect(cacheLifetime('max-age=3600')).toBe(3600)
    expect(cacheLifetime('Max-Age="60", private')).toBe(60)
    expect(cacheLifetime('max-age=60, max-age=30')).toBe(30)
    expect(cacheLifetime('max-age=600, no-cache')).toBe(0)
    expect(cacheLifetime('NO-STORE')).toBe(0)
    expect(cacheLifetime('max-age=abc')).toBe(0)
    expect(cacheLifetime('max-age=999999999')).toBe(86_400)
    expect(cacheLifetime('max-age=10', '30')).toBe(0)
  })

  it("reads Retry-After with core's rule, 1 s to 1 h, else 30 s", async () => {
    const retryAfter = async (value: string | null) => {
      const headers: Record<string, string> = value === null ? {} : { 'retry-after': value }
      const fetch = async () => new Response('{}', { status: 503, headers })
      const result = await createIdentityFetcher({ fetch })('https://a.example')
      return result.status === 'unavailable' ? result.retryAfter : result
    }
    expect(await retryAfter(null)).toBe(30)
    expect(await retryAfter('120')).toBe(120)
    expect(await retryAfter('0')).toBe(1)
    expect(await retryAfter('99999999')).toBe(3600)
    const at = new Date(Date.now() + 61_000).toUTCString() // whole seconds: 60–61 s away
    expect(await retryAfter(at)).toBeGreaterThanOrEqual(59)
    expect(await retryAfter(at)).toBeLessThanOrEqual(61)
    expect(await retryAfter('soon')).toBe(30)
    expect(await retryAfter('-5')).toBe(30)
  })
})

describe('end to end with core', () => {
  it('verifies a message signed by a URL agent at level 2', async () => {
    const keys = await generateKeyPair()
    let agentId = ''
    const server = await serve((req, res) => {
      if (req.url !== WK) return json(res, 404, '{}')
      const doc = createIdentityDocument({ agentId, publicKey: keys.publicKey, keyId: 'k1' })
      json(res, 200, JSON.stringify(doc), { 'cache-control': 'max-age=300' })
    })
    try {
      agentId = server.origin
      const bob = didKeyFromPublicKey((await generateKeyPair()).publicKey)
      const message = await signMessage(
        createMessage({
          from: agentId,
          to: bob,
          conversationId: 'c-1',
          sequence: 0,
          phase: 'greeting',
          text: 'hi',
        }),
        ed25519Signer(keys, `${agentId}#k1`),
      )
      const fetchIdentity = createNodeIdentityFetcher({ ca, addressPolicy })
      const resolver = createKeyResolver({ fetchIdentity })
      expect(await verifyMessage(message, resolver)).toMatchObject({
        level: 2,
        source: 'identity-document',
      })

      // Under the default policy the same key is not found: unknown_sender, not a retry.
      const strict = createKeyResolver({ fetchIdentity: createNodeIdentityFetcher({ ca }) })
      await expect(verifyMessage(message, strict)).rejects.toMatchObject({ code: 'unknown_sender' })
    } finally {
      await server.close()
    }
  })

  it('createIdentityFetcher works over createNodeFetch directly', async () => {
    const fetchIdentity = createIdentityFetcher({
      fetch: createNodeFetch({ ca, addressPolicy }),
    })
    expect((await fetchIdentity(agent('ok'))).status).toBe('ok')
  })
})
