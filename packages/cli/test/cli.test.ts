import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, stat } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMessage, ed25519Signer, generateKeyPair, didKeyFromPublicKey, signMessage } from '@agentmsg/core'
import { createAddressPolicy, createNodeFetch, createSender } from '@agentmsg/transport-https/node'

// The CLI is tested as users run it: the built bin in a child process (`npm test` builds first).
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** Wait until `stream` has printed a line matching `re`. */
function waitFor(child: ChildProcess, stream: 'stdout' | 'stderr', re: RegExp, ms = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} on ${stream}: ${buf}`)), ms)
    child[stream]!.on('data', (d) => {
      buf += d
      const line = buf.split('\n').find((l) => re.test(l))
      if (line) {
        clearTimeout(timer)
        resolve(line)
      }
    })
  })
}

let dir: string
beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-cli-'))
})

describe('agentmsg init', () => {
  it('creates a did:key identity with a private key file (0600)', async () => {
    const d = path.join(dir, 'alice')
    const r = await run(['init', '--dir', d])
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out.agent_id).toMatch(/^did:key:z6Mk/)
    expect(out.key_id).toBe(`${out.agent_id}#${out.agent_id.slice(8)}`)
    const mode = (await stat(path.join(d, 'agent-key.json'))).mode & 0o777
    expect(mode).toBe(0o600)
    // A second init refuses to overwrite the identity.
    const again = await run(['init', '--dir', d])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toMatch(/refusing to overwrite/)
  })

  it('creates a URL agent with an identity document; refuses http', async () => {
    const d = path.join(dir, 'bob')
    const r = await run(['init', '--dir', d, '--url', 'https://127.0.0.1:8443/', '--display', 'Bob'])
    expect(r.code).toBe(0)
    const doc = JSON.parse(await readFile(path.join(d, 'identity.json'), 'utf8'))
    expect(doc).toMatchObject({ agentmsg: 5, agent_id: 'https://127.0.0.1:8443', display: 'Bob' })
    expect(doc.endpoints.inbox).toBe('https://127.0.0.1:8443/.well-known/agentmsg/inbox')
    const bad = await run(['init', '--dir', path.join(dir, 'x'), '--url', 'http://127.0.0.1:8443'])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/https/)
  })
})

describe('agentmsg inbox', () => {
  let child: ChildProcess | undefined
  afterAll(() => child?.kill('SIGKILL'))

  it('serves over HTTPS with --dev-tls, prints each verified message as a JSON line, stops on SIGTERM', async () => {
    const port = await freePort()
    const d = path.join(dir, 'carol')
    expect((await run(['init', '--dir', d, '--url', `https://127.0.0.1:${port}`])).code).toBe(0)
    child = spawn(process.execPath, [CLI, 'inbox', '--dir', d, '--port', String(port), '--dev-tls'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const certLine = await waitFor(child, 'stderr', /development certificate: /)
    await waitFor(child, 'stderr', /listening on/)
    const certFile = certLine.split('development certificate: ')[1]!.split(' (')[0]!
    const ca = await readFile(certFile, 'utf8')
    expect((await stat(path.join(d, 'dev-tls', 'key.pem'))).mode & 0o777).toBe(0o600)

    const fetch = createNodeFetch({ ca, addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) })
    // The identity document is served.
    const idRes = await fetch(`https://127.0.0.1:${port}/.well-known/agentmsg/identity`)
    expect(idRes.status).toBe(200)
    expect((await idRes.json()).agent_id).toBe(`https://127.0.0.1:${port}`)

    // A did:key sender delivers a signed message; the inbox prints it.
    const keys = await generateKeyPair()
    const from = didKeyFromPublicKey(keys.publicKey)
    const message = await signMessage(
      createMessage({ from, to: `https://127.0.0.1:${port}`, conversationId: 'c-cli', sequence: 0, phase: 'greeting', text: 'hello inbox' }),
      ed25519Signer(keys),
    )
    const printed = waitFor(child, 'stdout', /hello inbox/)
    const sender = createSender({ fetch })
    const receipt = await sender.send(message, { kind: 'inbox', url: `https://127.0.0.1:${port}/.well-known/agentmsg/inbox` })
    expect(receipt.messageId).toBe(message.message_id)
    const line = JSON.parse(await printed)
    expect(line).toMatchObject({ sender: from, level: 3, source: 'did-key' })
    expect(line.message.message_id).toBe(message.message_id)
    await sender.close()

    // An unsigned message is refused with 401 and not printed.
    const { security: _s, ...unsigned } = message
    const res = await fetch(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...unsigned, message_id: 'unsigned-1' }),
    })
    expect(res.status).toBe(401)
    expect((await res.json()).code).toBe('invalid_signature')

    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    child = undefined
  })
})
