/**
 * `createNodeFetch` decides where it may connect: the address policy (PROFILE §4), https only,
 * certificate and host name checks, and a server that only speaks TLS 1.1 refused.
 */
import tls from 'node:tls'
import { createAddressPolicy, isAddressRefusedError } from '@agentmsg/core/server'
import { createDevCertificate } from '@agentmsg/dev-tls'
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
  sleep,
} from './node-fetch-helpers.js'

setupEchoServer()

describe('createNodeFetch: address policy', () => {
  it('refuses 127.0.0.1 by default, with a clear error and no connection opened', async () => {
    const raw = await rawServer()
    try {
      const fetch = createNodeFetch({ ca })
      const err = await rejection(fetch(`https://127.0.0.1:${raw.port}/x`))
      expect(isAddressRefusedError(err)).toBe(true)
      expect(err.code).toBe('forbidden')
      expect(err.message).toMatch(/address 127\.0\.0\.1 .*is not public unicast \(PROFILE §4\)/)
      await sleep(50)
      // An IP literal is judged before dialling (PROFILE §4): no connection at all.
      expect(raw.connections).toBe(0)
      expect(raw.bytes).toBe(0)
    } finally {
      await raw.close()
    }
  })

  it('refuses a host name resolving to loopback at DNS time, before connecting', async () => {
    const raw = await rawServer()
    try {
      const err = await rejection(createNodeFetch({ ca })(`https://localhost:${raw.port}/`))
      expect(isAddressRefusedError(err)).toBe(true)
      expect(err.message).toMatch(/of host localhost is not public unicast/)
      await sleep(50)
      expect(raw.connections).toBe(0)
    } finally {
      await raw.close()
    }
  })

  it('connects when the operator allows the address, or the host name', async () => {
    const byAddress = createNodeFetch({ ca, addressPolicy: allowLoopback })
    const res = await byAddress(`${echo.origin}/hello?x=1`)
    expect(res.status).toBe(200)
    expect(res.url).toBe(`${echo.origin}/hello?x=1`)
    expect(res.headers.get('x-reply')).toBe('yes')
    expect(await res.json()).toMatchObject({ method: 'GET', url: '/hello?x=1' })

    const byName = createNodeFetch({
      ca,
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
      const fetch = createNodeFetch({ ca, addressPolicy: allowLoopback })
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
    const wrongCa = createNodeFetch({ ca: other.ca, addressPolicy: allowLoopback })
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
      const fetch = createNodeFetch({ ca: onlyLocalhost.ca, addressPolicy: allowLoopback })
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
            ca,
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
        createNodeFetch({ ca, addressPolicy: allowLoopback })(`${old.origin}/`),
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
