import https from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import net from 'node:net'
import tls from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAddressPolicy, isAddressRefusedError } from '../src/address-policy.js'
import { createDevCertificate } from '../src/dev-cert.js'
import { createNodeFetch } from '../src/node-fetch.js'
import { testCertificate } from './tls.js'

const { cert, key } = await testCertificate()
const allowLoopback = createAddressPolicy({ allow: ['127.0.0.1'] })

type Handler = (req: IncomingMessage, res: ServerResponse) => void

interface TestServer {
  port: number
  origin: string
  connections: number
  remotePorts: number[]
  close(): Promise<void>
}

async function serve(handler: Handler, tlsOptions: https.ServerOptions = {}): Promise<TestServer> {
  const server = https.createServer({ key, cert, ...tlsOptions }, handler)
  const state = { connections: 0, remotePorts: [] as number[] }
  server.on('secureConnection', (s: tls.TLSSocket) => {
    state.connections++
    state.remotePorts.push(s.remotePort ?? 0)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    origin: `https://127.0.0.1:${port}`,
    get connections() {
      return state.connections
    },
    remotePorts: state.remotePorts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** A raw TCP server recording connections and every byte received. */
async function rawServer(): Promise<{
  port: number
  connections: number
  bytes: number
  close(): Promise<void>
}> {
  const state = { connections: 0, bytes: 0 }
  const sockets = new Set<net.Socket>()
  const server = net.createServer((s) => {
    state.connections++
    sockets.add(s)
    s.on('data', (d) => (state.bytes += d.length))
    s.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    get connections() {
      return state.connections
    },
    get bytes() {
      return state.bytes
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

let echo: TestServer
beforeAll(async () => {
  echo = await serve((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.setHeader('x-reply', 'yes')
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      )
    })
  })
})
afterAll(() => echo.close())

describe('createNodeFetch: address policy', () => {
  it('refuses 127.0.0.1 by default, with a clear error and nothing sent', async () => {
    const raw = await rawServer()
    try {
      const fetch = createNodeFetch({ ca: cert })
      const err = await rejection(fetch(`https://127.0.0.1:${raw.port}/x`))
      expect(isAddressRefusedError(err)).toBe(true)
      expect(err.code).toBe('forbidden')
      expect(err.message).toMatch(/address 127\.0\.0\.1 .*is not public unicast \(PROFILE §4\)/)
      await sleep(50)
      // The TCP connection was made (that is where the address is checked), but not one byte
      // of TLS or HTTP went out on it.
      expect(raw.connections).toBe(1)
      expect(raw.bytes).toBe(0)
    } finally {
      await raw.close()
    }
  })

  it('refuses a host name resolving to loopback at DNS time, before connecting', async () => {
    const raw = await rawServer()
    try {
      const err = await rejection(createNodeFetch({ ca: cert })(`https://localhost:${raw.port}/`))
      expect(isAddressRefusedError(err)).toBe(true)
      expect(err.message).toMatch(/of host localhost is not public unicast/)
      await sleep(50)
      expect(raw.connections).toBe(0)
    } finally {
      await raw.close()
    }
  })

  it('connects when the operator allows the address, or the host name', async () => {
    const byAddress = createNodeFetch({ ca: cert, addressPolicy: allowLoopback })
    const res = await byAddress(`${echo.origin}/hello?x=1`)
    expect(res.status).toBe(200)
    expect(res.url).toBe(`${echo.origin}/hello?x=1`)
    expect(res.headers.get('x-reply')).toBe('yes')
    expect(await res.json()).toMatchObject({ method: 'GET', url: '/hello?x=1' })

    const byName = createNodeFetch({
      ca: cert,
      addressPolicy: createAddressPolicy({ allow: ['localhost'] }),
    })
    const res2 = await byName(`https://localhost:${echo.port}/named`)
    expect(await res2.json()).toMatchObject({
      url: '/named',
      headers: { host: `localhost:${echo.port}` },
    })
  })
})

describe('createNodeFetch: https and TLS', () => {
  it('refuses http: and other schemes before any connection', async () => {
    const raw = await rawServer()
    try {
      const fetch = createNodeFetch({ ca: cert, addressPolicy: allowLoopback })
      const err = await rejection(fetch(`http://127.0.0.1:${raw.port}/`))
      expect(err).toBeInstanceOf(TypeError)
      expect(err.message).toMatch(/only https: is allowed/)
      await expect(fetch('ftp://127.0.0.1/')).rejects.toThrow(TypeError)
      await expect(fetch('not a url')).rejects.toThrow(/invalid URL/)
      await sleep(50)
      expect(raw.connections).toBe(0)
    } finally {
      await raw.close()
    }
  })

  it('verifies certificates: an unknown CA fails with a TLS error', async () => {
    const other = await createDevCertificate()
    const wrongCa = createNodeFetch({ ca: other.cert, addressPolicy: allowLoopback })
    const err = await rejection(wrongCa(`${echo.origin}/`))
    expect(err).toBeInstanceOf(TypeError)
    expect(err.cause?.code).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/)
    // No ca at all: the public roots do not know the development certificate either.
    const noCa = createNodeFetch({ addressPolicy: allowLoopback })
    expect((await rejection(noCa(`${echo.origin}/`))).cause?.code).toMatch(
      /SELF_SIGNED|UNABLE_TO_VERIFY|CERT/,
    )
  })

  it('checks the host name against the certificate', async () => {
    const onlyLocalhost = await createDevCertificate({ hosts: ['localhost'], ips: [] })
    const server = await serve((_, res) => res.end('x'), {
      key: onlyLocalhost.key,
      cert: onlyLocalhost.cert,
    })
    try {
      const fetch = createNodeFetch({ ca: onlyLocalhost.cert, addressPolicy: allowLoopback })
      const err = await rejection(fetch(`https://127.0.0.1:${server.port}/`))
      expect(err.cause?.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID')
    } finally {
      await server.close()
    }
  })

  it('refuses a server that only speaks TLS 1.1', async () => {
    const old = await serve((_, res) => res.end('old'), {
      minVersion: 'TLSv1',
      maxVersion: 'TLSv1.1',
      ciphers: 'DEFAULT@SECLEVEL=0',
    })
    try {
      // The server does work, for a client that accepts TLS 1.1…
      const protocol = await new Promise<string | null>((resolve, reject) => {
        const s = tls.connect(
          {
            host: '127.0.0.1',
            port: old.port,
            ca: cert,
            minVersion: 'TLSv1.1',
            maxVersion: 'TLSv1.1',
            ciphers: 'DEFAULT@SECLEVEL=0',
          },
          () => {
            resolve(s.getProtocol())
            s.end()
          },
        )
        s.on('error', reject)
      })
      expect(protocol).toBe('TLSv1.1')
      // …but not for ours.
      const err = await rejection(
        createNodeFetch({ ca: cert, addressPolicy: allowLoopback })(`${old.origin}/`),
      )
      expect(err).toBeInstanceOf(TypeError)
      expect(`${err.cause?.code} ${err.message}`).toMatch(
        /UNSUPPORTED_PROTOCOL|protocol version|wrong version/i,
      )
    } finally {
      await old.close()
    }
  })
})

describe('createNodeFetch: requests and responses', () => {
  const fetch = createNodeFetch({ ca: cert, addressPolicy: allowLoopback })

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
      const f = createNodeFetch({ ca: cert, addressPolicy: allowLoopback })
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
    const server = await serve((req, res) => {
      if (req.url === '/partial') res.write('partial')
    })
    try {
      const quick = createNodeFetch({ ca: cert, addressPolicy: allowLoopback, timeoutMs: 200 })
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
    const server = await serve((req, res) => {
      if (req.url === '/partial') res.write('partial')
    })
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
