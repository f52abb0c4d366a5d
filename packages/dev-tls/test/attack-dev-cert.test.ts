/**
 * Attack (issue 9, item 15): the development key leaks. Since clients add the development
 * certificate to their trusted roots, a CA certificate would let its key mint a certificate for
 * any host (`bank.example`) that those clients then believe. The certificate is a leaf for its
 * own names, so such a minted certificate is refused by `createNodeFetch`.
 */
import { X509Certificate } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import https from 'node:https'
import type net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, loadDevCertificate } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { generate } from 'selfsigned'
import { afterEach, describe, expect, it } from 'vitest'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A certificate for `bank.example`, signed with `issuer`'s key (what a leaked key allows). */
async function mint(issuer: { cert: string; key: string }) {
  const now = Date.now()
  const made = await generate([{ name: 'commonName', value: 'bank.example' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 86_400_000),
    ca: { cert: issuer.cert, key: issuer.key },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'bank.example' }] },
    ],
  })
  return { cert: made.cert, key: made.private }
}

/** An HTTPS server on 127.0.0.1 presenting `tls`. */
async function serveAs(tls: { cert: string; key: string }): Promise<number> {
  const server = https.createServer(tls, (_req, res) => res.end('{"balance":1000000}'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return (server.address() as net.AddressInfo).port
}

/** A client trusting `ca`, resolving bank.example to the test server on loopback. */
function client(ca: string): typeof fetch {
  return createNodeFetch({
    ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    lookup: (_name, _options, callback) =>
      (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address: '127.0.0.1', family: 4 },
      ]),
  })
}

describe('attack: a leaked development key mints a certificate for bank.example', () => {
  it('the development certificate is a leaf for its own names', async () => {
    const dev = await createDevCertificate({ hosts: ['localhost', 'agent.test'] })
    const x509 = new X509Certificate(dev.cert)
    expect(x509.ca).toBe(false)
    expect(x509.checkHost('agent.test')).toBe('agent.test')
    expect(x509.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(x509.checkIP('::1')).toBe('::1')
    expect(x509.checkHost('bank.example')).toBeUndefined()
    expect(x509.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']) // extended key usage: serverAuth only
  })

  it('createNodeFetch trusting the development CA refuses the minted one', async () => {
    const dev = await createDevCertificate()
    // The attacker presents the leaf as the intermediate; clients trust the development CA.
    const minted = await mint(dev)
    const port = await serveAs({ cert: `${minted.cert}\n${dev.cert}`, key: minted.key })
    const error = await client(dev.ca)(`https://bank.example:${port}/balance`).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(TypeError)
    // Refused twice over: the leaf cannot sign, and the CA's name constraints exclude the name
    // (dev-ca.test.ts checks each alone).
    expect(String((error as { cause?: { message?: string } }).cause?.message)).toMatch(
      /key usage does not include certificate signing|invalid CA certificate|permitted subtree violation/,
    )
  })

  it('control: with a CA as the development certificate, the same attack would succeed', async () => {
    const now = Date.now()
    const ca = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate: new Date(now - 60_000),
      notAfterDate: new Date(now + 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      ],
    })
    const port = await serveAs(await mint({ cert: ca.cert, key: ca.private }))
    const res = await client(ca.cert)(`https://bank.example:${port}/balance`)
    expect(await res.json()).toEqual({ balance: 1000000 })
  })

  it('loadDevCertificate replaces a stored CA certificate with a leaf', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-devcert-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    const now = Date.now()
    const old = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      curve: 'P-256',
      notBeforeDate: new Date(now - 60_000),
      notAfterDate: new Date(now + 86_400_000),
      extensions: [{ name: 'basicConstraints', cA: true, critical: true }],
    })
    await writeFile(path.join(dir, 'key.pem'), old.private, { mode: 0o600 })
    await writeFile(path.join(dir, 'cert.pem'), old.cert)
    const loaded = await loadDevCertificate(dir)
    expect(loaded.cert).not.toBe(old.cert)
    expect(new X509Certificate(loaded.cert).ca).toBe(false)
    expect(await readFile(loaded.certFile, 'utf8')).toBe(loaded.cert)
    // A leaf stored before is kept.
    expect((await loadDevCertificate(dir)).cert).toBe(loaded.cert)
  })
})
