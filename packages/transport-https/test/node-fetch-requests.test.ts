/**
 * `createNodeFetch` as a fetch: bodies and headers, Request objects, kept-alive connections, no
 * redirects, streamed and bodiless responses, timeouts, abort signals and refused connections.
 */
import { describe, expect, it } from 'vitest'
import { createNodeFetch } from '../src/node-fetch.js'
import {
  allowLoopback,
  ca,
  echo,
  rawServer,
  rejection,
  serve,
  setupEchoServer,
  stallingServer,
} from './node-fetch-helpers.js'

setupEchoServer()

describe('createNodeFetch: requests and responses', () => {
  const fetch = createNodeFetch({ ca, addressPolicy: allowLoopback })

  it('POSTs a body with headers and reads the reply', async () => {
    const res = await fetch(`${echo.origin}/inbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'm-1' },
      body: '{"héllo":1}',
    })
    const got = await res.json()
    expect(got).toMatchObject({
      method: 'POST',
      url: '/inbox',
      body: '{"héllo":1}',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'm-1',
        'content-length': '12',
      },
    })
    const bytes = new TextEncoder().encode('raw bytes')
    const res2 = await fetch(`${echo.origin}/b`, { method: 'PUT', body: bytes })
    expect(await res2.json()).toMatchObject({ method: 'PUT', body: 'raw bytes' })
  })

  it('accepts a Request object (as ky passes one)', async () => {
    const req = new Request(`${echo.origin}/r`, {
      method: 'POST',
      headers: { 'x-a': 'b' },
      body: 'from a request',
    })
    const got = await (await fetch(req)).json()
    expect(got).toMatchObject({ method: 'POST', body: 'from a request', headers: { 'x-a': 'b' } })
  })

  it('reuses kept-alive connections', async () => {
    const server = await serve((_, res) => res.end('k'))
    try {
      const f = createNodeFetch({ ca, addressPolicy: allowLoopback })
      expect(await (await f(`${server.origin}/1`)).text()).toBe('k')
      expect(await (await f(`${server.origin}/2`)).text()).toBe('k')
      expect(server.connections).toBe(1)
    } finally {
      await server.close()
    }
  })

  it('returns 3xx as is and never follows; redirect: "error" rejects', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/target') return res.end('followed')
      res.writeHead(302, { location: '/target' }).end()
    })
    try {
      const res = await fetch(`${server.origin}/start`)
      expect(res.status).toBe(302)
      expect(res.headers.get('location')).toBe('/target')
      const follow = await fetch(`${server.origin}/start`, { redirect: 'follow' })
      expect(follow.status).toBe(302)
      await expect(fetch(`${server.origin}/start`, { redirect: 'error' })).rejects.toThrow(
        /redirect/,
      )
    } finally {
      await server.close()
    }
  })

  it('streams the response body', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const server = await serve((_, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('first ')
      void gate.then(() => res.end('second'))
    })
    try {
      const res = await fetch(`${server.origin}/`)
      const reader = res.body!.getReader()
      const one = await reader.read()
      expect(new TextDecoder().decode(one.value)).toBe('first ')
      release()
      let rest = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        rest += new TextDecoder().decode(value)
      }
      expect(rest).toBe('second')
    } finally {
      await server.close()
    }
  })

  it('handles bodiless responses', async () => {
    const server = await serve((req, res) => {
      res
        .writeHead(req.url === '/204' ? 204 : 200, { 'x-m': req.method ?? '' })
        .end(req.method === 'HEAD' ? undefined : 'x')
    })
    try {
      const res = await fetch(`${server.origin}/204`)
      expect(res.status).toBe(204)
      expect(res.body).toBeNull()
      const head = await fetch(`${server.origin}/`, { method: 'HEAD' })
      expect(head.headers.get('x-m')).toBe('HEAD')
      expect(await head.text()).toBe('')
    } finally {
      await server.close()
    }
  })

  it('times out: before the response, and while the body is read', async () => {
    const server = await stallingServer()
    try {
      const quick = createNodeFetch({ ca, addressPolicy: allowLoopback, timeoutMs: 200 })
      const started = Date.now()
      const err = await rejection(quick(`${server.origin}/silent`))
      expect(err.name).toBe('TimeoutError')
      expect(Date.now() - started).toBeLessThan(2_000)
      const res = await quick(`${server.origin}/partial`)
      expect(res.status).toBe(200)
      expect((await rejection(res.text())).name).toBe('TimeoutError')
    } finally {
      await server.close()
    }
  })

  it('aborts with the signal, before the response and during the body', async () => {
    const server = await stallingServer()
    try {
      const before = AbortSignal.abort(new Error('never mind'))
      expect((await rejection(fetch(`${server.origin}/`, { signal: before }))).message).toBe(
        'never mind',
      )

      const c1 = new AbortController()
      setTimeout(() => c1.abort(), 50)
      expect((await rejection(fetch(`${server.origin}/silent`, { signal: c1.signal }))).name).toBe(
        'AbortError',
      )

      const c2 = new AbortController()
      const res = await fetch(`${server.origin}/partial`, { signal: c2.signal })
      const pending = res.text()
      c2.abort()
      expect((await rejection(pending)).name).toBe('AbortError')
    } finally {
      await server.close()
    }
  })

  it('reports a refused connection as a TypeError with the cause', async () => {
    const raw = await rawServer()
    const port = raw.port
    await raw.close()
    const err = await rejection(fetch(`https://127.0.0.1:${port}/`))
    expect(err).toBeInstanceOf(TypeError)
    expect(err.cause?.code).toBe('ECONNREFUSED')
  })
})
