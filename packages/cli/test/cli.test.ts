import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createAgent } from '@agentmsg/client'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { loadDevCertificate } from '@agentmsg/dev-tls'
import { fsStorage } from '@agentmsg/storage-fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  cliBuilt,
  filesContaining,
  freePort,
  type InboxProcess,
  post,
  run,
  signedMessage,
  startInbox,
  waitFor,
} from './cli-helpers.js'

let dir: string
beforeAll(async () => {
  if (!cliBuilt()) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`)
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-cli-'))
})
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

/** The agent the client loads from an agent directory (one identity format on disk). */
async function loadWithClient(d: string) {
  const storage = await fsStorage({ dir: d })
  const agent = await createAgent({ storage, sendOnly: true })
  const record = (await storage.get('keys/self/identity')) as { seeds: Record<string, string> }
  const identity = agent.identity
  await agent.close()
  await storage.close?.()
  return { identity, seeds: Object.values(record.seeds) }
}

describe('agentmsg init', () => {
  it('creates a did:key identity in the client store, its seed only in 0600 files', async () => {
    const d = path.join(dir, 'alice')
    const r = await run(['init', '--dir', d])
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out).toMatchObject({ dir: d, kind: 'did:key' })
    expect(out.agent_id).toMatch(/^did:key:z6Mk/)
    expect(out.key_id).toBe(`${out.agent_id}#${out.agent_id.slice(8)}`)
    // createAgent on the same directory loads exactly this identity.
    const { identity, seeds } = await loadWithClient(d)
    expect(identity.agentId).toBe(out.agent_id)
    expect(identity.keyId).toBe(out.key_id)
    expect((await stat(d)).mode & 0o777).toBe(0o700)
    const holders = await filesContaining(d, seeds[0]!)
    expect(holders.length).toBeGreaterThan(0)
    for (const h of holders) expect(h.mode, h.file).toBe(0o600)
    // A second init refuses to overwrite the identity.
    const again = await run(['init', '--dir', d])
    expect(again.code).not.toBe(0)
    expect(again.stderr).toMatch(/refusing to overwrite/)
    expect((await loadWithClient(d)).identity.agentId).toBe(out.agent_id)
    // --force replaces it.
    const forced = await run(['init', '--dir', d, '--force'])
    expect(forced.code).toBe(0)
    const replaced = JSON.parse(forced.stdout).agent_id
    expect(replaced).not.toBe(out.agent_id)
    expect((await loadWithClient(d)).identity.agentId).toBe(replaced)
  })

  it('creates a URL agent with an identity document; refuses http', async () => {
    const d = path.join(dir, 'bob')
    const r = await run([
      'init',
      '--dir',
      d,
      '--url',
      'https://127.0.0.1:8443/',
      '--display',
      'Bob',
    ])
    expect(r.code).toBe(0)
    const out = JSON.parse(r.stdout)
    expect(out).toMatchObject({ agent_id: 'https://127.0.0.1:8443', kind: 'url' })
    const { identity } = await loadWithClient(d)
    expect(identity.keyId).toBe(out.key_id)
    expect(identity.document).toMatchObject({
      agentmsg: 5,
      agent_id: 'https://127.0.0.1:8443',
      display: 'Bob',
    })
    expect(identity.document!.endpoints.inbox).toBe(
      'https://127.0.0.1:8443/.well-known/agentmsg/inbox',
    )
    const bad = await run(['init', '--dir', path.join(dir, 'x'), '--url', 'http://127.0.0.1:8443'])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/https/)
  })
})

describe('agentmsg inbox', () => {
  let inbox: InboxProcess | undefined
  afterAll(() => inbox?.child.kill('SIGKILL'))

  it('serves over HTTPS with --dev-tls, prints each verified message as a JSON line, stops on SIGTERM', async () => {
    const port = await freePort()
    const d = path.join(dir, 'carol')
    expect((await run(['init', '--dir', d, '--url', `https://127.0.0.1:${port}`])).code).toBe(0)
    inbox = await startInbox(d, port)
    expect(inbox.inboxUrl).toBe(`https://127.0.0.1:${port}/.well-known/agentmsg/inbox`)
    expect((await stat(path.join(d, 'dev-tls', 'key.pem'))).mode & 0o777).toBe(0o600)

    // The identity document is served.
    const idRes = await inbox.fetch(`https://127.0.0.1:${port}/.well-known/agentmsg/identity`)
    expect(idRes.status).toBe(200)
    expect((await idRes.json()).agent_id).toBe(`https://127.0.0.1:${port}`)

    // A did:key sender delivers a signed message; the inbox prints it.
    const message = await signedMessage(`https://127.0.0.1:${port}`, 'hello inbox')
    const printed = waitFor(inbox.child, 'stdout', /hello inbox/)
    expect(await post(inbox, message)).toEqual({
      status: 202,
      body: { status: 'accepted', message_id: message.message_id },
    })
    const line = JSON.parse(await printed)
    expect(line).toMatchObject({
      sender: message.from.agent,
      level: 3,
      source: 'did-key',
      known_contact: false,
    })
    expect(line.message).toEqual(message)

    // An unsigned message is refused with 401 and not printed.
    const { security: _s, ...unsigned } = message
    const res = await inbox.fetch(inbox.inboxUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...unsigned, message_id: 'unsigned-1' }),
    })
    expect(res.status).toBe(401)
    expect((await res.json()).code).toBe('invalid_signature')

    expect(await inbox.stop()).toBe(0)
    expect(inbox.stdout().trim().split('\n')).toHaveLength(1)
    inbox = undefined
  })

  it("fetches a URL sender's identity document with --ca and --allow-private (PROFILE §4)", async () => {
    const port = await freePort()
    const d = path.join(dir, 'dave')
    expect((await run(['init', '--dir', d, '--url', `https://127.0.0.1:${port}`])).code).toBe(0)
    // Made before the inbox starts, which then reuses it; the sender serves with it too.
    const tls = await loadDevCertificate(path.join(d, 'dev-tls'))
    const flags = ['--ca', tls.caFile, '--allow-private', '127.0.0.1']
    inbox = await startInbox(d, port, flags)
    expect(inbox.stderr()).toContain(`development CA: ${tls.caFile}`)

    const senderPort = await freePort()
    const sender = await createNodeAgent({
      identity: { agentId: `https://127.0.0.1:${senderPort}` },
      inbox: { port: senderPort, tls },
      ca: tls.ca,
      addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    })
    try {
      const printed = waitFor(inbox.child, 'stdout', /from a URL agent/)
      const sent = await sender.send(`https://127.0.0.1:${port}`, 'from a URL agent')
      expect(sent).toMatchObject({ route: 'direct' })
      // Verified with the key of the sender's identity document, fetched by the inbox.
      expect(JSON.parse(await printed)).toMatchObject({
        sender: sender.id,
        level: 2,
        source: 'identity-document',
      })
    } finally {
      await sender.close()
    }
    expect(await inbox.stop()).toBe(0)
    inbox = undefined
  })

  it('refuses a directory without an identity, with the command to run', async () => {
    const d = path.join(dir, 'empty')
    const r = await run(['inbox', '--dir', d, '--port', String(await freePort()), '--dev-tls'])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/holds no identity \(run "agentmsg init --dir /)
  })
})
