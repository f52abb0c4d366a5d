/**
 * The development CA (issue 11, pain point 2): one CA per machine directory issues a leaf for
 * every development server, so ONE client `ca` trusts a development relay and inbox together —
 * real TLS on loopback. The leaf cannot sign (so its key cannot mint certificates); the CA is
 * name-constrained to local names, which OpenSSL (and so Node) enforces; first use is atomic
 * and race-free across processes; files keep their modes.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import https from 'node:https'
import type net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createAddressPolicy } from '@agentmsg/core/server'
import {
  agentmsgHome,
  createDevCertificate,
  loadDevCa,
  loadDevCertificate,
} from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import * as x509 from '@peculiar/x509'
import { afterEach, describe, expect, it } from 'vitest'
import { issueLeaf } from '../src/x509.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-devca-'))
  cleanups.push(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** An HTTPS server on 127.0.0.1 presenting `tls` and answering `name`. */
async function serveAs(tls: { cert: string; key: string }, name: string): Promise<number> {
  const server = https.createServer(tls, (_req, res) => res.end(name))
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

const loopback = createAddressPolicy({ allow: ['127.0.0.1'] })

/** A client trusting `ca` that resolves every name to the loopback server. */
function client(ca: string | string[]): typeof fetch {
  return createNodeFetch({
    ca,
    addressPolicy: loopback,
    lookup: (_name, _options, callback) =>
      (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address: '127.0.0.1', family: 4 },
      ]),
  })
}

/** The TLS reason a fetch failed with (Node's `fetch failed` hides it in `.cause`). */
async function refusal(request: Promise<Response>): Promise<string> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(TypeError)
  return String((error as { cause?: { message?: string } }).cause?.message)
}

describe('development CA', () => {
  it('one ca (the CA) trusts a development relay and inbox with their own leaves', async () => {
    const home = await tempDir()
    const relayTls = await loadDevCertificate(path.join(home, 'relay', 'dev-tls'), { home })
    const inboxTls = await loadDevCertificate(path.join(home, 'inbox', 'dev-tls'), { home })
    expect(relayTls.cert).not.toBe(inboxTls.cert)
    expect(relayTls.ca).toBe(inboxTls.ca)
    expect(relayTls.caFile).toBe(path.join(home, 'dev-ca', 'ca.pem'))
    const relayPort = await serveAs(relayTls, 'relay')
    const inboxPort = await serveAs(inboxTls, 'inbox')
    const fetch = createNodeFetch({ ca: relayTls.ca, addressPolicy: loopback })
    expect(await (await fetch(`https://127.0.0.1:${relayPort}/`)).text()).toBe('relay')
    expect(await (await fetch(`https://localhost:${inboxPort}/`)).text()).toBe('inbox')
    // The leaf is not a trust anchor: trusting the relay's leaf alone reaches neither.
    const leafOnly = createNodeFetch({ ca: relayTls.cert, addressPolicy: loopback })
    expect(await refusal(leafOnly(`https://127.0.0.1:${relayPort}/`))).toMatch(/certificate/)
  })

  it('issues leaves with the extensions of a server certificate', async () => {
    const dev = await createDevCertificate()
    const ca = new x509.X509Certificate(dev.ca)
    const leaf = new x509.X509Certificate(dev.cert)
    const caBasic = ca.getExtension(x509.BasicConstraintsExtension)
    expect([caBasic?.ca, caBasic?.pathLength, caBasic?.critical]).toEqual([true, 0, true])
    expect(ca.getExtension(x509.KeyUsagesExtension)?.usages).toBe(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
    )
    expect(ca.subject).toMatch(/CN=agentmsg development CA [0-9a-f]{12}/)
    expect(leaf.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false)
    expect(leaf.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([
      x509.ExtendedKeyUsage.serverAuth,
    ])
    expect(leaf.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      ca.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    )
    const node = new X509Certificate(dev.cert)
    expect(node.subjectAltName).toMatch(/^DNS:localhost, IP Address:127\.0\.0\.1, IP Address:/)
    expect([node.checkHost('localhost'), node.checkIP('127.0.0.1'), node.checkIP('::1')]).toEqual([
      'localhost',
      '127.0.0.1',
      '::1',
    ])
    expect(node.checkHost('example.com')).toBeUndefined()
    expect(node.checkIssued(new X509Certificate(dev.ca))).toBe(true)
    // Unique serials and CA names: two CAs never look like one to a client trusting both.
    const other = await createDevCertificate()
    expect(new X509Certificate(other.ca).subject).not.toBe(new X509Certificate(dev.ca).subject)
    expect(new X509Certificate(other.cert).serialNumber).not.toBe(node.serialNumber)
  })

  it('a client trusting two CAs verifies leaves of each (distinct issuer names)', async () => {
    const a = await createDevCertificate()
    const b = await createDevCertificate()
    const portA = await serveAs(a, 'a')
    const portB = await serveAs(b, 'b')
    const fetch = createNodeFetch({ ca: [a.ca, b.ca], addressPolicy: loopback })
    expect(await (await fetch(`https://127.0.0.1:${portA}/`)).text()).toBe('a')
    expect(await (await fetch(`https://127.0.0.1:${portB}/`)).text()).toBe('b')
  })

  it('the leaf is not a CA: a certificate signed with its key is refused', async () => {
    const dev = await createDevCertificate()
    // Even for a name the CA permits, and with the leaf sent along as the intermediate.
    const forged = await issueLeaf(dev, { hosts: ['localhost'], ips: [] }, 1)
    const port = await serveAs({ cert: forged.cert + dev.cert, key: forged.key }, 'forged')
    expect(await refusal(client(dev.ca)(`https://localhost:${port}/`))).toMatch(
      /key usage does not include certificate signing|invalid CA certificate/,
    )
  })

  it('name constraints: even the CA key cannot mint a certificate clients accept for bank.example', async () => {
    const home = await tempDir()
    const ca = await loadDevCa({ home })
    const bank = await issueLeaf(ca, { hosts: ['bank.example'], ips: [] }, 1)
    const bankPort = await serveAs(bank, 'bank')
    expect(await refusal(client(ca.cert)(`https://bank.example:${bankPort}/`))).toMatch(
      /permitted subtree violation/,
    )
    const lan = await issueLeaf(ca, { hosts: [], ips: ['10.0.0.1'] }, 1)
    const lanPort = await serveAs(lan, 'lan')
    const lanClient = createNodeFetch({
      ca: ca.cert,
      addressPolicy: loopback,
      lookup: (_n, _o, cb) =>
        (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
          { address: '127.0.0.1', family: 4 },
        ]),
    })
    expect(await refusal(lanClient(`https://localhost:${lanPort}/`))).toMatch(
      /permitted subtree violation/,
    )
    // Control: a leaf for a permitted name from the same key is accepted.
    const ok = await issueLeaf(ca, { hosts: ['agent.test'], ips: [] }, 1)
    const okPort = await serveAs(ok, 'ok')
    expect(await (await client(ca.cert)(`https://agent.test:${okPort}/`)).text()).toBe('ok')
    // And the API refuses to issue such a leaf in the first place.
    await expect(createDevCertificate({ ca, hosts: ['bank.example'] })).rejects.toThrow(
      /cover only localhost, \*\.localhost, \*\.test and loopback addresses.*: got "bank\.example"/,
    )
  })

  it('a second loadDevCertificate reuses the CA, and the leaf in the same directory', async () => {
    const home = await tempDir()
    const first = await loadDevCertificate(path.join(home, 'a'), { home })
    const again = await loadDevCertificate(path.join(home, 'a'), { home })
    const other = await loadDevCertificate(path.join(home, 'b'), { home })
    expect(again.cert).toBe(first.cert)
    expect(again.key).toBe(first.key)
    expect(other.ca).toBe(first.ca)
    expect(other.cert).not.toBe(first.cert)
    // A leaf of another CA (the home's CA was replaced) is re-issued by the current one.
    await rm(path.join(home, 'dev-ca'), { recursive: true })
    const renewed = await loadDevCertificate(path.join(home, 'a'), { home })
    expect(renewed.ca).not.toBe(first.ca)
    expect(renewed.cert).not.toBe(first.cert)
    expect(new X509Certificate(renewed.cert).checkIssued(new X509Certificate(renewed.ca))).toBe(
      true,
    )
    // Names not covered by the stored leaf: a new leaf.
    const wider = await loadDevCertificate(path.join(home, 'a'), {
      home,
      hosts: ['localhost', 'relay.test'],
    })
    expect(new X509Certificate(wider.cert).checkHost('relay.test')).toBe('relay.test')
  })

  it('uses $AGENTMSG_HOME by default (a temp dir under the test runner)', async () => {
    const home = agentmsgHome()
    expect(home).toBe(path.resolve(process.env.AGENTMSG_HOME ?? ''))
    expect(home.startsWith(tmpdir())).toBe(true)
    const dir = await tempDir()
    const tls = await loadDevCertificate(dir)
    expect(tls.caFile).toBe(path.join(home, 'dev-ca', 'ca.pem'))
  })

  it('files: dir 0700, ca.pem 0644, keys 0600, whatever the umask', async () => {
    const home = await tempDir()
    const old = process.umask(0o077)
    let tls: Awaited<ReturnType<typeof loadDevCertificate>>
    try {
      tls = await loadDevCertificate(path.join(home, 'srv', 'dev-tls'), { home })
    } finally {
      process.umask(old)
    }
    const mode = async (f: string) => (await stat(f)).mode & 0o777
    expect(await mode(path.join(home, 'dev-ca'))).toBe(0o700)
    expect(await mode(tls.caFile)).toBe(0o644)
    expect(await mode(path.join(home, 'dev-ca', 'ca-key.pem'))).toBe(0o600)
    expect(await mode(tls.keyFile)).toBe(0o600)
    expect(await mode(tls.certFile)).toBe(0o644)
    expect(await mode(path.dirname(tls.keyFile))).toBe(0o700)
    expect((await readdir(home)).sort()).toEqual(['dev-ca', 'srv'])
  })

  it('two processes using a new machine directory at once make one CA', async () => {
    const home = await tempDir()
    const fixture = fileURLToPath(new URL('./dev-ca-race.fixture.ts', import.meta.url))
    const children: ChildProcess[] = []
    const outputs: Array<Promise<string>> = []
    for (let i = 0; i < 4; i++) {
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, home], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      children.push(child)
      outputs.push(
        new Promise((resolve, reject) => {
          let out = ''
          child.stdout!.on('data', (d) => (out += d))
          child.on('error', reject)
          child.on('close', (code) =>
            code === 0 ? resolve(out) : reject(new Error(`exit ${code}`)),
          )
        }),
      )
    }
    // Every child is ready before any starts: they race for the first use.
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            let seen = ''
            c.stdout!.on('data', (d) => {
              seen += d
              if (seen.includes('ready\n')) resolve()
            })
          }),
      ),
    )
    for (const c of children) c.stdin!.write('go\n')
    const prints = (await Promise.all(outputs)).map((o) => o.split('\n')[1])
    const onDisk = new X509Certificate((await loadDevCa({ home })).cert).fingerprint256
    expect(prints).toEqual([onDisk, onDisk, onDisk, onDisk])
    // No temp directory is left behind by the processes that lost the race.
    expect(await readdir(home)).toEqual(['dev-ca'])
    // In one process too: concurrent first uses share the result.
    const home2 = await tempDir()
    const loads = await Promise.all([1, 2, 3].map(() => loadDevCa({ home: home2 })))
    expect(new Set(loads.map((l) => l.cert)).size).toBe(1)
  })
})
